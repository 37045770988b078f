"""Which tests exist, as GoogleTest itself counts them (`--gtest_list_tests`): a TEST_P counts
once per parameter, a TYPED_TEST once per type, and a TEST inside `#if 0` not at all.

Why the list can be trusted: the judge's "every test that exists ran" guarantee must hold
against a header that wants to hide a failing test. A list read from the judged binary could be
rewritten by that header's static initializers or exit handlers, which run around GoogleTest's
main. So the list is read from `list_NN`, the same test files compiled against the reference
(CMakeLists.txt builds it in the same tree, with the same compiler and instrumentation, so
tests under `#if` are counted as in the judged build); the learner's code is never compiled
into it. When the reference itself is judged, its test binary is that build.

Most often no build is needed at all: when every test of a program is a plain TEST (or the model
stage's ALLOCLAB_MODEL_TEST) at the top level of its file, outside any `#if`, the test files'
text tells the list as GoogleTest would (`from_text`), and the judge reads it there, sparing a
learner's first judge the list_ build. `check` proves the two agree: every build of a reference
must run exactly the tests the text names for each stage."""
from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from . import build, process
from ..model.catalog import ROOT, TEST_OPENING, Exercise, Limits

_SUITE_RE = re.compile(r"^(\S+)\.(?:\s+#.*)?$")
# What makes a test file's text unable to tell the list (a test per parameter or type, which only
# GoogleTest expands); a preprocessor condition's start and end.
_EXPANDED_RE = re.compile(r"\b(?:TEST_P|TYPED_TEST|TYPED_TEST_P|INSTANTIATE_\w+|REGISTER_TYPED_TEST\w*)\s*\(")
_IF_RE = re.compile(r"^\s*#\s*if")
_ENDIF_RE = re.compile(r"^\s*#\s*endif")
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)
_TEST_RE = re.compile(r"^  (\S+)")


def parse(output: str) -> list[str]:
    """`Suite.Test` names from --gtest_list_tests, parameterized ones as `Prefix/Suite.Test/0`."""
    names, suite = [], None
    for line in output.splitlines():
        if m := _SUITE_RE.match(line):
            suite = m.group(1)
        elif (m := _TEST_RE.match(line)) and suite:
            names.append(f"{suite}.{m.group(1)}")
    return names


def belongs(name: str, suite: str) -> bool:
    """Whether test `name` is of the stage whose suite is `suite`: `S.T`, a TEST_P instance
    `Prefix/S.T/0`, a TYPED_TEST `S/0.T` or a TYPED_TEST_P `Prefix/S/0.T`."""
    test_suite = name.split(".", 1)[0]
    return suite in (test_suite, test_suite.split("/")[-1], *test_suite.split("/")[-2:-1])


def from_text(exercise: Exercise, program: str = "") -> list[str] | None:
    """Every test of the exercise's program as `Suite.Test`, in the order of its files (sorted by
    name) and of each file, read from the test files' text; None when the text cannot tell: a
    test under a preprocessor condition (a build may leave it out) or one that GoogleTest
    expands per parameter or type."""
    folder = exercise.tests_dir / program if program else exercise.tests_dir
    names = []
    for path in sorted(folder.glob("*.cpp")):
        try:
            text = _BLOCK_COMMENT_RE.sub("", path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None
        depth = 0
        for line in text.splitlines():
            if _EXPANDED_RE.search(line.split("//", 1)[0]):
                return None
            if _IF_RE.match(line):
                depth += 1
            elif _ENDIF_RE.match(line):
                depth -= 1
            elif m := TEST_OPENING.match(line):   # a plain test: the line above refused the others
                if depth:
                    return None
                names.append(f"{m.group(1)}.{m.group(2)}")
    return names


def stage_filter(suite: str) -> str:
    """A --gtest_filter that selects every test `belongs` gives to `suite`."""
    return f"{suite}.*:*/{suite}.*:{suite}/*:*/{suite}/*"


def _told(exercise: Exercise, impl: build.Impl, program: str) -> list[str] | None:
    """The list the test files' text tells, for every build but a reference's: a reference's test
    binary lists its own tests, so that check can prove the text right against it."""
    return None if impl.kind == "solutions" else from_text(exercise, program)


def tests_of(tree: Path, exercise: Exercise, impl: build.Impl, limits: Limits, program: str = "") -> list[str] | None:
    """Every test of the exercise's program: from the test files' text when it tells them (_told),
    else from the trusted build in `tree` (built here when the tests changed since it was last
    listed, and no other tree of the same compiler and instrumentation has listed them); None
    when it cannot be built or read."""
    if (told := _told(exercise, impl, program)) is not None:
        return told
    where = _Lists(tree, exercise, impl, program)
    if (tests := where.kept()) is not None:
        return tests
    if impl.kind != "solutions" and not build.build(tree, where.binary.name, limits.build_timeout_seconds).ok:
        return None
    listed = process.run([str(where.binary), "--gtest_list_tests"], cwd=tree, timeout=limits.test_timeout_seconds,
                        keep_bytes=4_000_000)
    tests = parse(listed.stdout.text())
    if listed.returncode != 0 or listed.stdout.truncated or not tests:
        return None
    _write(where.cache, where.stamp, tests)
    if where.shared:
        _write(where.shared[0], where.shared_stamp, tests)
    return tests


def to_build(tree: Path, exercise: Exercise, impl: build.Impl, program: str = "") -> str:
    """The list_ target `tests_of` will build in `tree`, or "" when the text tells the list or a list
    it can trust is kept: the judge builds it with the test binary, in one build that keeps both
    cores busy."""
    if impl.kind == "solutions" or _told(exercise, impl, program) is not None or \
            _Lists(tree, exercise, impl, program).kept() is not None:
        return ""
    return f"list_{build.program_name(exercise.name, program)}"


class _Lists:
    """Where a program's list of tests comes from in `tree` (the binary that lists them) and is
    kept (the tree's own file, and the files shared by the trees of its compiler and
    instrumentation), with what each depends on."""

    def __init__(self, tree: Path, exercise: Exercise, impl: build.Impl, program: str):
        name = build.program_name(exercise.name, program)
        from_test_binary = impl.kind == "solutions"
        self.binary = tree / (f"test_{name}" if from_test_binary else f"list_{name}")
        self.cache = tree / f"tests-{name}.json"
        self.stamp = _stamp(exercise) + ([_file_stamp(self.binary)] if from_test_binary else [])
        self.shared, self.shared_stamp = _shared(tree, name, self.stamp, from_test_binary)

    def kept(self) -> list[str] | None:
        """The list kept for the program, in the tree or shared, when it is still true."""
        for path, wanted in ((self.cache, self.stamp), *((p, self.shared_stamp) for p in self.shared)):
            if (tests := _read(path, wanted)) and (self.binary.is_file() or path != self.cache):
                return tests
        return None


def _shared(tree: Path, name: str, stamp: list[str], from_test_binary: bool) -> tuple[list[Path], list[str]]:
    """Where the trees of one compiler and instrumentation keep their lists (the first path is
    where this tree writes), and what a list there depends on. `check` compiles the same test files
    against the same reference in many trees (the reference's, the skeleton's, each known
    mistake's): one lists for all, instead of each compiling every test file again for list_.
    A reference's test binary built with some stages alone (ALLOCLAB_ONLY_STAGES) lists those
    stages for trees built with the same ones; a list_ binary holds every stage, so its list
    serves every tree. None outside a configured tree."""
    values = build.cache_values(tree)
    compiler, sanitizer = values.get("CMAKE_CXX_COMPILER"), values.get("ALLOCLAB_SANITIZER")
    if not compiler or not sanitizer:
        return [], []
    only = values.get("ALLOCLAB_ONLY_STAGES", "").replace(";", "-")
    folder = build.BUILD_ROOT / "lists"
    every = folder / f"{Path(compiler).name}-{sanitizer}-{name}.json"
    some = folder / f"{Path(compiler).name}-{sanitizer}-{name}-stages-{only}.json"
    kept = [every] if not only else [some, every] if from_test_binary else [every, some]
    shared_stamp = [s for s in stamp if not s.startswith(str(tree))] + [os.path.realpath(compiler)]
    return kept, shared_stamp


def _read(path: Path, stamp: list[str]) -> list[str] | None:
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return saved["tests"] if saved["stamp"] == stamp else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, stamp: list[str], tests: list[str]) -> None:
    """Atomically, since two jobs may list at once; a list that cannot be kept is listed again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        partial.write_text(json.dumps({"stamp": stamp, "tests": tests}), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass


def _stamp(exercise: Exercise) -> list[str]:
    """What the list depends on: the test files, their support files, the reference."""
    files = [*exercise.tests_dir.glob("*"), *exercise.tests_dir.glob("*/*"), *(ROOT / "judge" / "tests" / "support").glob("*"),
             exercise.solution_file]
    return sorted(_file_stamp(p) for p in files if p.is_file())


def _file_stamp(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{info.st_mtime_ns}:{info.st_size}"
