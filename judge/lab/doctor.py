"""`doctor`: which tools the kit needs are here, and the apt command for the ones that are not."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from . import browser, docs
from . import run as runner

_PROGRAM = "#include <cstdio>\nint main() { std::puts(\"ok\"); }\n"


def add_parser(sub) -> None:
    s = sub.add_parser("doctor", help="check the toolchain and print the apt command for what is missing")
    s.set_defaults(run=run)


def _compiles(compiler: str, flags: list[str]) -> bool:
    if not shutil.which(compiler):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.cpp", Path(tmp) / "probe"
        src.write_text(_PROGRAM)
        built = runner.run([compiler, "-std=c++20", *flags, str(src), "-o", str(exe)], timeout=120, keep_bytes=4096)
        if built.returncode != 0:
            return False
        ran = runner.run([str(exe)], timeout=30, keep_bytes=4096)
        return ran.returncode == 0 and "ok" in ran.stdout.text()


def _header(path: str) -> bool:
    return Path(path).is_file()


def checks() -> list[tuple[str, str, bool]]:
    return [
        ("clang++ (C++20)", "clang", _compiles("clang++", [])),
        ("clang++ AddressSanitizer + UBSan runtime", "libclang-rt-14-dev", _compiles("clang++", ["-fsanitize=address,undefined"])),
        ("clang++ ThreadSanitizer runtime", "libclang-rt-14-dev", _compiles("clang++", ["-fsanitize=thread"])),
        ("g++ (C++20)", "g++", _compiles("g++", [])),
        ("g++ AddressSanitizer + UBSan runtime", "libasan8 libubsan1", _compiles("g++", ["-fsanitize=address,undefined"])),
        ("g++ ThreadSanitizer runtime", "libtsan2", _compiles("g++", ["-fsanitize=thread"])),
        ("lld (faster links; optional)", "lld", shutil.which("ld.lld") is not None),
        ("GoogleTest", "libgtest-dev", _header("/usr/include/gtest/gtest.h")),
        ("Google Benchmark", "libbenchmark-dev", _header("/usr/include/benchmark/benchmark.h")),
        ("CMake 3.25 or newer", "cmake", shutil.which("cmake") is not None),
        ("Ninja", "ninja-build", shutil.which("ninja") is not None),
        ("Doxygen (for the docs)", "doxygen", shutil.which("doxygen") is not None),
        ("The docs' theme", "doxygen-awesome-css", (docs.THEME / "doxygen-awesome.css").is_file()),
        ("Chromium (loads every page of the docs in check)", "chromium", browser.executable() is not None),
    ]


def run(args, catalog) -> int:
    from . import ui
    missing = []
    for what, package, ok in checks():
        print(f"{ui.mark(ok)} {what}" + ("" if ok else ui.paint(f"   (Debian package: {package})", "dim")))
        if not ok and "optional" not in what:
            missing.extend(package.split())
    if missing:
        print("\nInstall what is missing with:\n  sudo apt-get update && sudo apt-get install -y " +
              " ".join(dict.fromkeys(missing)))
        return 2
    print("\nEverything the kit needs is here.")
    return 0
