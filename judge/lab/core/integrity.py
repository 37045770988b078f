"""Makes sure a verdict cannot be forged from the learner's header: it must leave the test
framework's macros as they were."""
from __future__ import annotations

import hashlib
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


def _macros(compiler: str, source: str, include_dirs: list[Path]) -> dict[str, str] | None:
    # The source goes through a file: the runner gives programs no standard input.
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as handle:
        handle.write(source)
        handle.flush()
        process.hand_over(Path(handle.name))
        argv = [program(compiler), "-std=c++20", "-E", "-dM"]
        argv += [arg for folder in include_dirs for arg in ("-I", str(folder))] + [handle.name]
        result = process.run(argv, timeout=60, keep_bytes=8_000_000)
    if result.returncode != 0 or result.stdout.truncated:
        return None
    return {name: body.strip() for name, body in _DEFINE_RE.findall(result.stdout.text())}


def _framework_stamp(compiler: str) -> str:
    """What the framework's macros depend on besides the header: the compiler and GoogleTest."""
    stamps = []
    for path in (shutil.which(program(compiler)), "/usr/include/gtest", "/usr/local/include/gtest"):
        try:
            real = os.path.realpath(path) if path else ""
            stamps.append(f"{real}:{os.stat(real).st_mtime_ns}" if real else "")
        except OSError:
            stamps.append("")
    return "|".join(stamps)


def _framework_macros(compiler: str, framework: str) -> dict[str, str] | None:
    """The framework's own macros, remembered between runs: they change only with the compiler
    or GoogleTest, and preprocessing GoogleTest is a third of a second the edit loop can keep."""
    key = _framework_stamp(compiler)
    cache = BUILD_ROOT / f"framework-macros-{compiler}.json"
    try:
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["macros"]
    except (OSError, ValueError, KeyError):
        pass
    macros = _macros(compiler, framework, [])
    if macros is not None:
        write_atomically(cache, json.dumps({"key": key, "macros": macros}).encode("utf-8"))
    return macros


def tampered_macros(compiler: str, header: Path, include_dirs: list[Path]) -> list[str]:
    """The test framework's macros that `header` removes or redefines, as sentences. The header
    is preprocessed as the tests' build does (`include_dirs`, where the files it includes are)."""
    key = _header_key(compiler, header, include_dirs)
    cache = BUILD_ROOT / f"header-macros-{compiler}.json"
    try:
        saved = json.loads(cache.read_text(encoding="utf-8")) if key else {}
    except (OSError, ValueError):
        saved = {}
    if key and isinstance(saved.get(key), list):
        return saved[key]
    framework = "#include <gtest/gtest.h>\n#include <gtest/gtest-spi.h>\n"
    before = _framework_macros(compiler, framework)
    after = _macros(compiler, framework + f'#include "{header}"\n', [header.parent, *include_dirs])
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
    if key:
        kept = {k: v for k, v in list(saved.items())[-(_HEADERS_KEPT - 1):]}
        kept[key] = problems
        write_atomically(cache, json.dumps(kept).encode("utf-8"))
    return problems


_HEADERS_KEPT = 64   # the newest headers whose verdict on the macros is remembered


def _header_key(compiler: str, header: Path, include_dirs: list[Path]) -> str:
    """A digest of everything that decides the macros a header leaves behind, or "" when the
    header's text alone cannot say (then it is preprocessed every time).

    Macros change through preprocessing directives and `_Pragma` alone. The digest covers every
    logical line (after line splicing) with a `#` or its digraph `%:` on it, which is every
    directive and then some, but not the code between them: an edit of a function body, the edit
    a learner makes most, keeps the verdict. A header that uses `_Pragma` or `__COUNTER__` (which
    code lines move) is never remembered; one whose directives read `__LINE__` is remembered with
    its line numbers. Every file it includes from its own folder or the build's is in the digest
    whole, as are the compiler and GoogleTest by their stamps."""
    digest = hashlib.sha256(_framework_stamp(compiler).encode())
    directives = _directives(header)
    if directives is None:
        return ""
    numbered = any("__LINE__" in line for _, line in directives)
    for i, line in directives:
        digest.update(f"{i if numbered else ''}\0{line}\n".encode())
    included = _included_files(header, [line for _, line in directives], include_dirs)
    if included is None:
        return ""
    for path in sorted(included):
        try:
            digest.update(f"{path}\0".encode() + path.read_bytes() + b"\0")
        except OSError:
            return ""
    return digest.hexdigest()


_INCLUDE_RE = re.compile(r"^\s*(?:#|%:)\s*(?:include|include_next|import)\b\s*(.*)$")


def _included_files(header: Path, directives: list[str], include_dirs: list[Path]) -> set[Path] | None:
    """The files `header` includes, directly or not, found in its own folder or `include_dirs`
    (the standard library's are left to the compiler's stamp); None when an include names its
    file through a macro, which the text alone cannot resolve."""
    found: set[Path] = set()
    pending = [(header, directives)]
    while pending:
        including, lines = pending.pop()
        for line in lines:
            m = _INCLUDE_RE.match(line)
            if not m:
                continue
            operand = m.group(1).strip()
            if not operand.startswith(('"', "<")) or len(operand) < 3:
                return None
            name = operand[1:].split('"' if operand[0] == '"' else ">")[0]
            for folder in [including.parent, *include_dirs]:
                path = (folder / name).resolve()
                if path.is_file():
                    if path not in found and path != header.resolve():
                        found.add(path)
                        if (more := _directives(path)) is None:
                            return None
                        pending.append((path, [line for _, line in more]))
                    break
    return found


def _directives(path: Path) -> list[tuple[int, str]] | None:
    """The logical lines of a file (numbered, after line splicing) that may be directives: every
    line with a `#` or `%:` on it. None when the file cannot be read, or uses `_Pragma` or
    `__COUNTER__`, which change macros from the code between the directives."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if "_Pragma" in text or "__COUNTER__" in text:
        return None
    lines = text.replace("\\\r\n", "").replace("\\\n", "").splitlines()
    return [(i, line) for i, line in enumerate(lines) if "#" in line or "%:" in line]
