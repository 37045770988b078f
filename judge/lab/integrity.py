"""Makes sure a verdict cannot be forged from the learner's header: it must leave the test
framework's macros as they were."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from . import run as runner
from .build import COMPILERS

_DEFINE_RE = re.compile(r"^#define (\w+)(.*)$", re.M)


def _macros(compiler: str, source: str, include_dir: Path) -> dict[str, str] | None:
    # The source goes through a file: the runner gives programs no standard input.
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as handle:
        handle.write(source)
        handle.flush()
        argv = [COMPILERS[compiler], "-std=c++20", "-E", "-dM", "-I", str(include_dir), handle.name]
        result = runner.run(argv, timeout=60, keep_bytes=8_000_000)
    if result.returncode != 0 or result.stdout.truncated:
        return None
    return {name: body.strip() for name, body in _DEFINE_RE.findall(result.stdout.text())}


def tampered_macros(compiler: str, header: Path) -> list[str]:
    """The test framework's macros that `header` removes or redefines, as sentences."""
    framework = "#include <gtest/gtest.h>\n#include <gtest/gtest-spi.h>\n"
    before = _macros(compiler, framework, header.parent)
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
