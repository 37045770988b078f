"""`doctor`: which tools the kit needs are here, and the apt command for the ones that are not.
The packages are those of .ci/packages.txt, the list CI and the development container install."""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from . import browser, docs
from ..core import process
from ..core.build import install_command
from .. import ui
from ..model.catalog import ROOT
from ..model.errors import UsageError

PACKAGES = ROOT / ".ci" / "packages.txt"
# The font the Chinese side of the docs is drawn with: without a font that has Chinese glyphs,
# chromium shows each character of it as a box, and the screenshot `check` keeps shows boxes.
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")


def packages() -> list[str]:
    """The Debian packages the kit needs, from .ci/packages.txt."""
    lines = PACKAGES.read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def not_installed(names: list[str]) -> list[str]:
    """Those of `names` dpkg does not list as installed (none when there is no dpkg)."""
    if not shutil.which("dpkg-query"):
        return []
    listed = process.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n", *names], timeout=60,
                        keep_bytes=1_000_000).stdout.text()
    installed = {line.split()[0].split(":")[0] for line in listed.splitlines() if line.endswith(" installed")}
    return [name for name in names if name not in installed]


def clang_runtime(compiler: str = "clang++") -> str:
    """The Debian package of the sanitizer runtimes of the clang `compiler` runs
    (libclang-rt-19-dev for clang 19)."""
    if not shutil.which(compiler):
        return "libclang-rt-dev"
    version = process.run([compiler, "-dumpversion"], timeout=60, keep_bytes=4096).stdout.text()
    major = re.match(r"\d+", version.strip())
    return f"libclang-rt-{major.group(0)}-dev" if major else "libclang-rt-dev"

_PROGRAM = "#include <cstdio>\nint main() { std::puts(\"ok\"); }\n"


def _compiles(compiler: str, flags: list[str]) -> bool:
    if not shutil.which(compiler):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.cpp", Path(tmp) / "probe"
        src.write_text(_PROGRAM)
        built = process.run([compiler, "-std=c++20", *flags, str(src), "-o", str(exe)], timeout=120, keep_bytes=4096)
        if built.returncode != 0:
            return False
        ran = process.run([str(exe)], timeout=30, keep_bytes=4096)
        return ran.returncode == 0 and "ok" in ran.stdout.text()


def _header(path: str) -> bool:
    return Path(path).is_file()


def checks() -> list[tuple[str, str, bool]]:
    runtime = clang_runtime()
    return [
        ("clang++ (C++20)", "clang", _compiles("clang++", [])),
        ("clang++ AddressSanitizer + UBSan runtime", runtime, _compiles("clang++", ["-fsanitize=address,undefined"])),
        ("clang++ ThreadSanitizer runtime", runtime, _compiles("clang++", ["-fsanitize=thread"])),
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
        ("A font with Chinese glyphs (the docs' Chinese pages)", "fonts-noto-cjk", CJK_FONT.is_file()),
    ]


def doctor_command(args, catalog) -> bool:
    missing = []
    for what, package, ok in checks():
        print(f"{ui.mark(ok)} {what}" + ("" if ok else ui.paint(f"   (Debian package: {package})", "dim")))
        if not ok and "optional" not in what:
            missing.extend(package.split())
    listed = [name for name in not_installed(packages()) if name not in missing]
    if listed:
        print(f"{ui.mark(False)} not installed: {' '.join(listed)}" + ui.paint("   (listed in .ci/packages.txt)", "dim"))
    install = install_command() or "the development container (README.md, Quick start)"
    if missing:
        print(f"\nInstall what is missing, and the rest of .ci/packages.txt, with one command:\n  {install}\n"
              "(it runs: apt-get install " + " ".join(dict.fromkeys(missing + listed)) + ")")
        raise UsageError(f"the toolchain is incomplete: {install} installs it")
    if listed:
        print(f"\nThe judge works; for the rest of the kit (docs, newer compilers) install them with {install}.")
        return True
    print("\nEverything the kit needs is here.")
    return True
