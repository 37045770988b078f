"""Judging the learner's own tests (`examine`): their test file against the exercise's wheats
(the reference and the correct implementations that differ from it where the contract leaves a
choice), every one of which a valid test passes, and against its known mistakes, the chaffs,
which a thorough file rejects.

Each implementation stays a header of its own, compiled into a test program of its own with the
learner's file: a test sees exactly the types, templates and traits of the contract, and no
implementation can reach another's state. What makes it fast is what the learner's tree already
has: GoogleTest and the standard headers precompiled (with clang, their inline code too), so a
compile parses the header and the learner's tests alone. The programs are compiled, linked and run
on every core at once, the wheats first: a file that fails a wheat has its failing tests left out
of the chaffs' runs, so what the file's valid tests catch is still counted.

A chaff is rejected when the file does not compile against it, when a test fails, when the program
crashes or a sanitizer reports, or when it runs far longer than on the slowest wheat (a hang).
Every implementation runs under AddressSanitizer, where the tests' assertions are judged; a wheat
runs again under ThreadSanitizer where the exercise has thread stages, and so does a chaff that a
thread stage catches. There only races, crashes and hangs count: a test of the heap (a replaced
operator new) or of AddressSanitizer's poisoning cannot hold under ThreadSanitizer, and the kit's
own stages never ask it to."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import build, gtest_report, judging, process
from ..model.catalog import ROOT, Exercise, Limits, without_root
from ..model.files import write_if_changed
from ..model.variants import Mistake, PatchError, materialize, materialize_wheat, mistakes, wheats

OUT = build.BUILD_ROOT / "examine"
MY_TESTS = "my_tests.cpp"   # the learner's test file, beside the exercise's header
COMPILER = "clang"
# A chaff's run may take this many times the slowest wheat's (and at least HANG_FLOOR seconds)
# before it counts as a hang: far more than any machine's noise, far less than the test limit.
HANG_FACTOR = 5
HANG_FLOOR = 3.0
# GoogleTest's macros: a file that defines or undefines one decides what its tests report.
_MACRO_RE = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+((?:TEST|TEST_F|TEST_P|TYPED_TEST\w*|EXPECT_\w+|ASSERT_\w+|"
                       r"GTEST_\w+|FAIL|SUCCEED|ADD_FAILURE\w*|RUN_ALL_TESTS|RC_GTEST_\w+))\b", re.M)


@dataclass(frozen=True)
class Implementation:
    key: str                 # its folder under build/examine, which names no known mistake
    header: Path
    wheat: bool
    name: str = ""           # a wheat's name ("reference" for the reference)
    differs: str = ""        # a wheat's `Wheat:` line
    differs_zh: str = ""     # and its `Wheat zh:` line
    part: int = 0            # a chaff's stage: the first that catches it
    sanitizers: tuple[str, ...] = ()


@dataclass
class Run:
    """One implementation in one instrumentation: compiled, run, and what its tests said."""
    implementation: Implementation
    sanitizer: str
    compiled: bool = True
    compile_error: str = ""
    failed: dict[str, list[str]] = field(default_factory=dict)   # test -> its messages
    problem: str = ""        # the program as a whole: a crash, a hang, a report, no report at all
    running: str = ""        # the test that was running when the program stopped
    seconds: float = 0.0
    tests: int = 0

    @property
    def rejected(self) -> bool:
        return not self.compiled or bool(self.failed) or bool(self.problem)


@dataclass(frozen=True)
class InvalidTest:
    test: str                # Suite.Test, or "" for the file as a whole
    wheat: str
    differs: str
    sanitizer: str
    messages: tuple[str, ...]
    differs_zh: str = ""


@dataclass(frozen=True)
class Part:
    stage: int
    title: str
    caught: int
    total: int


@dataclass
class TestsVerdict:
    exercise: Exercise
    source: Path
    valid: bool = False
    problem: str = ""                       # why nothing could be judged (does not compile, defines main...)
    invalid: list[InvalidTest] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    tests: int = 0
    seconds: float = 0.0

    @property
    def chaffs_caught(self) -> int:
        return sum(p.caught for p in self.parts)

    @property
    def chaffs_total(self) -> int:
        return sum(p.total for p in self.parts)

    def as_json(self) -> dict:
        return {
            "exercise": self.exercise.name, "source": str(self.source), "valid": self.valid,
            "chaffs_caught": self.chaffs_caught, "chaffs_total": self.chaffs_total, "tests": self.tests,
            "problem": self.problem or None,
            "parts": [{"stage": p.stage, "title": p.title, "caught": p.caught, "total": p.total} for p in self.parts],
            "invalid_tests": [{"test": i.test or None, "wheat": i.wheat, "differs": i.differs,
                               "sanitizer": i.sanitizer, "messages": list(i.messages)} for i in self.invalid],
            "seconds": round(self.seconds, 1),
        }


def implementations(exercise: Exercise) -> list[Implementation]:
    """The reference, the wheats and the chaffs, each written out as a header of its own. Raises
    PatchError when a diff no longer applies."""
    root = OUT / exercise.name / "impl"
    every = tuple(exercise.sanitizers)
    found = [Implementation("reference", write_if_changed(root / "reference" / exercise.header,
                                                   exercise.solution_file.read_text(encoding="utf-8")),
                            True, "reference", sanitizers=every)]
    for wheat in wheats(exercise):
        key = f"wheat-{wheat.name}"
        found.append(Implementation(key, materialize_wheat(exercise, wheat, root / key / exercise.header),
                                    True, wheat.name, wheat.description, wheat.description_zh, sanitizers=every))
    for i, mistake in enumerate(mistakes(exercise)):
        key = f"chaff-{i:03d}"   # numbered: the learner's tests learn nothing from a folder's name
        stages = mistake.stages(exercise)
        # Under AddressSanitizer always, where every assertion is judged; under ThreadSanitizer too
        # when a stage that catches it runs there, for the races.
        sanitizers_of = tuple(s for s in every if s == "asan" or any(s in exercise.stages[k - 1].sanitizers
                                                                     for k in stages))
        found.append(Implementation(key, materialize(exercise, mistake, root / key / exercise.header),
                                    False, part=_part(exercise, mistake), sanitizers=sanitizers_of))
    return found


def _part(exercise: Exercise, mistake: Mistake) -> int:
    """The part of the contract a chaff gets wrong: the first stage that catches it, other than the
    model stage, which catches a bit of everything; the model stage when only it does."""
    stages = mistake.stages(exercise)
    last = len(exercise.stages)
    return next((k for k in stages if k != last), stages[0] if stages else last)


@dataclass(frozen=True)
class Toolchain:
    """How the learner's tree compiles and links a test program in one instrumentation."""
    sanitizer: str
    compile: tuple[str, ...]
    link: tuple[str, ...]
    libraries: tuple[str, ...]


def toolchain(exercise: Exercise, sanitizer: str, limits: Limits) -> Toolchain | str:
    """The compile and link commands of the learner's tree (build/clang-<sanitizer>), with its
    precompiled GoogleTest built first; a string saying why when it cannot be built."""
    request = build.Request(exercise, build.Impl("exercises"), (COMPILER,))
    tree = build.tree_dir(COMPILER, sanitizer, request.impl)
    with build.locked(tree):
        built = build.configure_and_build(tree, "alloclab_pch", request, COMPILER, sanitizer, limits.build_timeout_seconds)
    if not built.ok:
        return built.problem or "the precompiled GoogleTest of the learner's tree did not build"
    try:
        commands = json.loads((tree / "compile_commands.json").read_text(encoding="utf-8"))
        ninja = (tree / "build.ninja").read_text(encoding="utf-8")
    except (OSError, ValueError) as err:
        return f"the learner's tree has no build files: {err}"
    pch = next((c["command"] for c in commands if c.get("file", "").endswith("judge/tests/support/pch.cpp")), None)
    linked = re.search(rf"^build test_{re.escape(exercise.name)}: .*\n((?:  .*\n)+)", ninja, re.M)
    if not pch or not linked:
        return "the learner's tree does not say how it compiles and links a test"
    words = shlex.split(pch)
    argv: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-o", "-c"):
            skip = True
        elif word not in ("-Werror", "-Wfatal-errors"):
            argv.append(word)
    values = dict(re.findall(r"^  (\w+) = (.*)$", linked.group(1), re.M))
    return Toolchain(sanitizer, tuple(argv), tuple(shlex.split(values.get("LINK_FLAGS", ""))),
                     tuple(shlex.split(values.get("LINK_LIBRARIES", ""))))


def include_dirs(exercise: Exercise) -> list[str]:
    """Where the learner's file finds headers besides the implementation's: the kit's test support
    (alloclab_test.hpp and the like) and the references of the exercises before (07's header
    includes 03's)."""
    earlier = sorted(p for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name < exercise.name)
    return [f"-I{ROOT / 'judge' / 'tests' / 'support'}", *(f"-I{p}" for p in earlier)]


def problem_of_the_file(source: Path) -> str:
    """What makes a file's verdict meaningless before it is compiled: it redefines GoogleTest's macros."""
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return f"cannot read {source}: {err.strerror}"
    if found := _MACRO_RE.search(text):
        return (f"the file defines or undefines GoogleTest's macro {found.group(1)}, so what its tests report "
                "is no longer GoogleTest's: nothing it says can be scored")
    return ""


def examine(exercise: Exercise, source: Path, limits: Limits, jobs: int | None = None,
            chaffs: bool = True) -> TestsVerdict:
    """The file's verdict; `chaffs` False judges its validity alone."""
    started = time.monotonic()
    verdict = TestsVerdict(exercise, source)
    verdict.problem = problem_of_the_file(source)
    if verdict.problem:
        return verdict
    try:
        every = implementations(exercise)
    except PatchError as err:
        verdict.problem = f"an implementation of the kit could not be written out: {err}"
        return verdict
    chains: dict[str, Toolchain] = {}
    for sanitizer in exercise.sanitizers:
        chain = toolchain(exercise, sanitizer, limits)
        if isinstance(chain, str):
            verdict.problem = chain
            return verdict
        chains[sanitizer] = chain
    work = OUT / exercise.name / _digest(source)
    # The file is compiled from a copy in the build folder that names the original (#line): a
    # quoted include looks beside the file first, where the learner's own header is, and the
    # header must be the implementation's. The original's folder comes last among the include
    # folders, so that the file's other includes are found as they are written.
    copy = work / MY_TESTS
    write_if_changed(copy, f'#line 1 "{source}"\n' + source.read_text(encoding="utf-8", errors="replace"))
    workers = max(jobs or os.cpu_count() or 2, 1)
    judged_wheats = [(impl, s) for impl in every if impl.wheat for s in impl.sanitizers]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # The reference alone first: a file that does not compile, defines main or never ends
        # against it is told so at once, without a program per implementation.
        first = _run(exercise, source, every[0], chains[every[0].sanitizers[0]], work, limits, limits.test_timeout_seconds)
        verdict.tests = first.tests
        if not first.compiled or first.problem.startswith(_MAIN):
            verdict.problem = first.compile_error or first.problem
            verdict.seconds = time.monotonic() - started
            return verdict
        if first.problem and not first.failed:
            # A file that hangs, floods, exits or crashes outside a test on the reference does so
            # everywhere: one run says it.
            verdict.invalid = _invalid(first)
            verdict.seconds = time.monotonic() - started
            return verdict
        runs = [first] + list(pool.map(lambda job: _run(exercise, source, job[0], chains[job[1]], work, limits,
                                                         limits.test_timeout_seconds), judged_wheats[1:]))
        for run in runs:
            verdict.invalid += _invalid(run)
        whole = [i for i in verdict.invalid if not i.test]
        verdict.valid = not verdict.invalid
        if not whole and chaffs:
            slowest = max((r.seconds for r in runs), default=0.0)
            limit = min(limits.test_timeout_seconds, max(HANG_FLOOR, HANG_FACTOR * slowest))
            leave_out = sorted({i.test for i in verdict.invalid})
            # A file with no valid test rejects nothing: what a global constructor might do on its
            # own is not a test.
            judged = [(impl, s) for impl in every if not impl.wheat for s in impl.sanitizers] if first.tests > len(leave_out) else []
            chaff_runs = list(pool.map(lambda job: _run(exercise, source, job[0], chains[job[1]], work, limits, limit,
                                                        leave_out), judged))
            rejected = {r.implementation.key for r in chaff_runs if r.rejected}
            verdict.parts = _parts(exercise, [impl for impl in every if not impl.wheat], rejected)
    verdict.seconds = time.monotonic() - started
    return verdict


_MAIN = "the file defines main"


def _digest(source: Path) -> str:
    try:
        return hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    except OSError:
        return "source"


def _parts(exercise: Exercise, chaffs: list[Implementation], rejected: set[str]) -> list[Part]:
    parts = []
    for stage in exercise.stages:
        mine = [c for c in chaffs if c.part == stage.number]
        if mine:
            parts.append(Part(stage.number, stage.title, sum(c.key in rejected for c in mine), len(mine)))
    return parts


def _invalid(run: Run) -> list[InvalidTest]:
    impl = run.implementation
    if not run.compiled:
        return [InvalidTest("", impl.name, impl.differs, run.sanitizer, (run.compile_error,), impl.differs_zh)]
    found = [InvalidTest(test, impl.name, impl.differs, run.sanitizer, tuple(messages), impl.differs_zh)
             for test, messages in run.failed.items()]
    if run.problem and not found:
        found.append(InvalidTest(run.running, impl.name, impl.differs, run.sanitizer, (run.problem,), impl.differs_zh))
    return found


def _run(exercise: Exercise, source: Path, impl: Implementation, chain: Toolchain, work: Path, limits: Limits,
         timeout: float, leave_out: list[str] | None = None) -> Run:
    run = Run(impl, chain.sanitizer)
    folder = work / chain.sanitizer
    folder.mkdir(parents=True, exist_ok=True)
    obj, binary, report = folder / f"{impl.key}.o", folder / impl.key, folder / f"{impl.key}.json"
    for stale in (obj, binary, report):
        stale.unlink(missing_ok=True)
    compiled = process.run([*chain.compile, f"-I{impl.header.parent}", *include_dirs(exercise), f"-I{source.parent}",
                            "-c", str(work / MY_TESTS), "-o", str(obj)], cwd=source.parent, timeout=limits.build_timeout_seconds, keep_bytes=100_000)
    if compiled.returncode != 0 or compiled.timed_out:
        run.compiled = False
        log = compiled.stderr.text() + compiled.stdout.text()
        error = next((d for d in build.parse_diagnostics(log) if d.severity == "error"), None)
        run.compile_error = (f"{error.file}:{error.line}:{error.column}: {error.message}" + "".join(
            "\n" + line for line in error.context) if error else
            ("the compile took too long and was stopped" if compiled.timed_out else log.strip()[-2000:]))
        return run
    if _defines_main(obj):
        run.problem = (f"{_MAIN}: the judge runs GoogleTest's own main, which counts and reports every test, and "
                       "a main of the file's own decides what is reported. Remove it; write only tests")
        return run
    linked = process.run([shutil.which("clang++") or "clang++", str(obj), *chain.link, *chain.libraries,
                          "-o", str(binary)], timeout=limits.build_timeout_seconds, keep_bytes=50_000)
    if linked.returncode != 0 or linked.timed_out:
        run.compiled = False
        run.compile_error = "the test program did not link:\n" + (linked.stderr.text() + linked.stdout.text()).strip()[-1500:]
        return run
    argv = [str(binary), f"--gtest_output=json:{report}", "--gtest_color=no"]
    if leave_out:
        argv.append("--gtest_filter=-" + ":".join(leave_out))
    ran = process.run(argv, env=judging.test_environment(limits), timeout=timeout, keep_bytes=limits.output_bytes)
    run.seconds = ran.seconds
    stdout, stderr = ran.stdout.text(), ran.stderr.text()
    data = gtest_report.read_report(report)
    if data is not None:
        for suite in data.get("testsuites", []):
            for test in suite.get("testsuite", []):
                name = f"{suite.get('name')}.{test.get('name')}"
                run.tests += 1
                failures = [without_root(f.get("failure", "")).strip() for f in test.get("failures", [])]
                if failures:
                    run.failed[name] = failures
    run.running = gtest_report.running_test(stdout) or ""
    if chain.sanitizer == "tsan" and data is not None and ran.returncode == 1 and "ThreadSanitizer" not in stderr:
        # Under ThreadSanitizer only races, crashes and hangs count: the same tests' assertions are
        # judged under AddressSanitizer, and a test of the heap or of AddressSanitizer's poisoning
        # cannot hold here.
        run.failed = {}
        return run
    if chain.sanitizer == "tsan":
        run.failed = {}
    if ran.timed_out:
        run.problem = f"the program did not end within {timeout:.0f} s"
    elif ran.stdout.truncated or ran.stderr.truncated:
        run.problem = (f"the tests printed {max(ran.stdout.total, ran.stderr.total):,} bytes, more than the "
                       f"{limits.output_bytes:,} the judge keeps: a test prints what it checks, not a flood")
    elif ran.returncode != 0 and not run.failed:
        run.problem = _stopped(ran, stderr)
    elif data is None:
        run.problem = ("the program ended without GoogleTest's report of its tests: a test calls exit, or the file "
                       "ends the program some other way before GoogleTest has reported")
    return run


def _stopped(ran: process.RunResult, stderr: str) -> str:
    said = re.search(r"^(?:==\d+==)?(?:ERROR|WARNING): (\w+Sanitizer: .*)$", stderr, re.M) or \
        re.search(r"^(SUMMARY: .*)$", stderr, re.M) or re.search(r"(runtime error: .*)$", stderr, re.M)
    if said:
        return said.group(1).strip()
    signal = ran.signal_name
    return f"the program was killed by {signal}" if signal else f"the program exited with status {ran.returncode}"


def _defines_main(obj: Path) -> bool:
    nm = shutil.which("llvm-nm") or shutil.which("nm")
    if not nm:
        return False
    listed = process.run([nm, "--defined-only", "-g", str(obj)], timeout=30, keep_bytes=2_000_000)
    return bool(re.search(r"^\S*\s+T main$", listed.stdout.text(), re.M))
