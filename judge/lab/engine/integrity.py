"""Makes sure a verdict cannot be forged from the learner's header: it must leave the test
framework's macros as they were."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from . import process
from .build import BUILD_ROOT
from ..model.catalog import program
from ..model.files import write_atomically

_DEFINE_RE = re.compile(r"^#define (\w+)(.*)$", re.M)


def _macros(compiler: str, source: str, include_dir: Path) -> dict[str, str] | None:
    # The source goes through a file: the runner gives programs no standard input.
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as handle:
        handle.write(source)
        handle.flush()
        process.hand_over(Path(handle.name))
        argv = [program(compiler), "-std=c++20", "-E", "-dM", "-I", str(include_dir), handle.name]
        result = process.run(argv, timeout=60, keep_bytes=8_000_000)
    if result.returncode != 0 or result.stdout.truncated:
        return None
    return {name: body.strip() for name, body in _DEFINE_RE.findall(result.stdout.text())}


def _framework_macros(compiler: str, framework: str, include_dir: Path) -> dict[str, str] | None:
    """The framework's own macros, remembered between runs: they change only with the compiler
    or GoogleTest, and preprocessing GoogleTest is a third of a second the edit loop can keep."""
    stamps = []
    for path in (shutil.which(program(compiler)), "/usr/include/gtest", "/usr/local/include/gtest"):
        try:
            real = os.path.realpath(path) if path else ""
            stamps.append(f"{real}:{os.stat(real).st_mtime_ns}" if real else "")
        except OSError:
            stamps.append("")
    key = "|".join(stamps)
    cache = BUILD_ROOT / f"framework-macros-{compiler}.json"
    try:
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["macros"]
    except (OSError, ValueError, KeyError):
        pass
    macros = _macros(compiler, framework, include_dir)
    if macros is not None:
        write_atomically(cache, json.dumps({"key": key, "macros": macros}).encode("utf-8"))
    return macros


def tampered_macros(compiler: str, header: Path) -> list[str]:
    """The test framework's macros that `header` removes or redefines, as sentences."""
    framework = "#include <gtest/gtest.h>\n#include <gtest/gtest-spi.h>\n"
    before = _framework_macros(compiler, framework, header.parent)
    after = _macros(compiler, framework + f'#include "{header}"\n', header.parent)
    if before is None or after is None:
        return []  # the header does not preprocess; the build reports why
    problems = []
    for name, body in sorted(before.items()):
        if name.startswith("__"):
            continue
        if name not in after:
            problems.append(f"it undefines {name}, a macro of the test framework")
        elif after[name] != body:
            problems.append(f"it redefines {name}, a macro of the test framework")
    return problems
