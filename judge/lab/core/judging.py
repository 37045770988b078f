"""Judges one exercise: builds its tests against an implementation in every configuration the
catalog asks for, runs each stage in its own process, and records what happened to every test.

A verdict of "passed" means every test the suite contains ran, in every configuration, and
passed; anything else (a crash, a hang, an early exit, a missing report, a sanitizer report,
a framework the header tampered with) is a failure that says what happened.

This module runs the judgement; results.py holds what it finds, gtest_report.py reads what the
test programs say."""
from __future__ import annotations

import os
import shlex
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from . import build, integrity, listing, process, sanitizers
from .build import Request
from ..model.catalog import Exercise, Limits, Stage, shown, tests_in_source
from .gtest_report import CANARY, read_report, record_finished, record_report, running_test
from ..model.results import (BuildSummary, ConfigResult, Finding, StageResult, StageStatus, TestOutcome, TestStatus,
                             Verdict)


def implementation_file(exercise: Exercise, impl: build.Impl) -> Path:
    if impl.kind == "source":
        return impl.path
    return exercise.solution_file if impl.kind == "solutions" else exercise.exercise_file


class _MacroCheck:
    """Whether the header tampered with the test framework's macros. It needs only the
    preprocessor, so it starts once the first build is done, beside the first tests: during the
    build it would take a core from the compiler. Its verdict is remembered for a header whose
    directives did not change (integrity.tampered_macros), so a one-line edit rarely waits for it."""

    def __init__(self, pool: ThreadPoolExecutor, compiler: str, focus: Path):
        self._pool, self._compiler, self._focus, self._future = pool, compiler, focus, None

    def start(self, tree: Path, target: str) -> None:
        """Starts the check, with the include folders of `target`'s build in `tree`."""
        if self._future is None:
            self._future = self._pool.submit(integrity.tampered_macros, self._compiler, self._focus,
                                             build.include_dirs(tree, target))

    def result(self) -> list[str]:
        return self._future.result() if self._future is not None else []


class _Prebuilds:
    """Builds of the configurations judged later, started while an earlier one builds or runs its
    tests, so that the two cores work on both side by side instead of taking them in turn. When a
    compiler's first configuration starts, the trees of its later ones are configured and their
    groundwork built (what compiles whatever the header holds: on a first judge, seconds of one
    core). A program is prebuilt in the later configurations of the same compiler once the first
    has compiled a unit of it (a program of its own once the first starts building it, which only
    happens once the stages before it pass): after an edit the two configurations compile side by
    side, and a header that does not compile is never compiled for the later one. When the later
    configuration's turn comes, its build finds the work done."""

    def __init__(self, request: Request, limits: Limits, plan: list[tuple[str, str, list[Stage]]]):
        self._request, self._limits, self._plan = request, limits, plan
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._started: set[tuple[str, str, str]] = set()
        self._stop = process.Stop()
        self._spent: dict[tuple[str, str], float] = {}   # the seconds built ahead, by configuration

    def __enter__(self) -> "_Prebuilds":
        return self

    def __exit__(self, *_) -> None:
        # Every configuration judged has built in its turn, waiting on its tree's lock for what was
        # started ahead for it: what still runs now is for one not judged (after a compile error, a
        # hang or Ctrl-C), and is stopped rather than waited for. A step killed half-way is built
        # again next time: Ninja logs only the steps that finished.
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._stop.now()
        self._pool.shutdown(wait=True)

    def _submit(self, work: Callable[..., object], *args) -> None:
        def stoppable() -> None:
            with process.stoppable(self._stop):
                work(*args)
        self._pool.submit(stoppable)

    def spent(self, compiler: str, sanitizer: str) -> float:
        """The seconds spent building ahead for a configuration: part of its build, though done
        while an earlier one built or ran, so its report counts them."""
        return self._spent.get((compiler, sanitizer), 0.0)

    def _count(self, compiler: str, sanitizer: str, built: build.BuildResult) -> None:
        self._spent[compiler, sanitizer] = self.spent(compiler, sanitizer) + built.seconds

    def ahead(self, compiler: str, sanitizer: str) -> None:
        for c, s, group in self._not_started(compiler, sanitizer, "", "groundwork"):
            self._submit(self._groundwork, c, s, group)

    def _groundwork(self, compiler: str, sanitizer: str, stages: list[Stage]) -> None:
        self._count(compiler, sanitizer, build.groundwork_built(self._request, compiler, sanitizer,
                                                                self._limits.build_timeout_seconds, "",
                                                                _held(self._request, sanitizer, stages, "")))

    def after(self, compiler: str, sanitizer: str, program: str) -> None:
        later = self._not_started(compiler, sanitizer, program, program)
        if later and not program:
            # Held until the first configuration has compiled a unit of the program: a header
            # that does not compile is then reported as soon as the first build alone finds it.
            tree = build.request_tree(self._request, compiler, sanitizer)
            target = f"test_{build.program_name(self._request.exercise.name)}"
            self._submit(self._compiled_once, tree, target, build.ninja_log_size(tree))
        for c, s, group in later:
            self._submit(self._build, c, s, group, program)

    def _compiled_once(self, tree: Path, target: str, offset: int) -> None:
        """Returns once Ninja has logged an object of `target` in `tree` after `offset` bytes of its log
        (Ninja logs only the steps that succeed), once the judge is done, or after a few seconds."""
        deadline = time.monotonic() + _FIRST_OBJECT_WAIT_SECONDS
        while not self._stop.wait(0.05) and time.monotonic() < deadline:
            if f"CMakeFiles/{target}.dir/" in build.ninja_log_since(tree, offset):
                return

    def _not_started(self, compiler: str, sanitizer: str, program: str,
                     work: str) -> list[tuple[str, str, list[Stage]]]:
        """The configurations of `compiler` judged after its `sanitizer` one that judge stages of
        `program`, with those stages, for which `work` was not started yet; marks it started."""
        mine = [(c, s, wanted) for c, s, wanted in self._plan if c == compiler]
        found = []
        for c, s, wanted in mine[[s for _, s, _ in mine].index(sanitizer) + 1:]:
            group = [stage for stage in wanted if stage.program == program]
            if group and (c, s, work) not in self._started:
                self._started.add((c, s, work))
                found.append((c, s, group))
        return found

    def _build(self, compiler: str, sanitizer: str, stages: list[Stage], program: str) -> None:
        with _tests_built(self._request, compiler, sanitizer, stages, program, self._limits) as (_, built):
            self._count(compiler, sanitizer, built)   # counted before the tree unlocks for its own turn


# How long the later configurations' build of the main program waits for the first configuration's
# first object at most: a first judge compiles the precompiled header before any.
_FIRST_OBJECT_WAIT_SECONDS = 3.0


def _held(request: Request, sanitizer: str, stages: list[Stage], program: str) -> tuple[int, ...]:
    """The stages `program`'s binary holds in a configuration: only those the catalog judges in it
    (a ThreadSanitizer tree, the thread stages), since the others would be compiled at its cost
    and never run."""
    exercise = request.exercise
    held = stages if request.compile_only_judged else \
        [s for s in exercise.stages if sanitizer in s.sanitizers and s.program == program]
    return only_stages(exercise, held, program)


def _tests_built(request: Request, compiler: str, sanitizer: str, stages: list[Stage], program: str, limits: Limits,
                 later: dict[str, list[Stage]] | None = None):
    """build.tests_built for `program`'s `stages` in one configuration. `later`: the stages of the
    programs the configuration judges after this one, by program. The first build of a tree builds
    the list_ twin with the test binary; and a later program already built in the tree (exercise
    07's engine, once stages 1 to 3 have passed) is linked in the same build, on the other core,
    since after an edit its link is all that is left of it: it is still run only once the stages
    before it pass."""
    held = _held(request, sanitizer, stages, program)

    def beside(tree: Path) -> list[str]:
        targets = [listing.to_build(tree, request.exercise, request.impl, program)]
        for other, group in (later or {}).items():
            binary = f"test_{build.program_name(request.exercise.name, other)}"
            if not held and not _held(request, sanitizer, group, other) and (tree / binary).is_file():
                targets.append(binary)
        return [t for t in targets if t]
    return build.tests_built(request, compiler, sanitizer, limits.build_timeout_seconds, program, held, beside)


def judge(request: Request, limits: Limits) -> Verdict:
    """Builds and runs the exercise's stages in every configuration; never raises for what the
    judged code does."""
    start = time.monotonic()
    exercise = request.exercise
    focus = implementation_file(exercise, request.impl)
    stages = [s for s in exercise.stages if not request.stages or s.number in request.stages]
    configs: list[ConfigResult] = []
    hung_under = ""   # the configuration whose every stage hung on its first run
    failed: set[int] = set()   # the stages that failed in a configuration judged so far
    plan = [(compiler, sanitizer, [s for s in stages if sanitizer in s.sanitizers])
            for compiler in request.compilers for sanitizer in request.sanitizers or exercise.sanitizers]
    plan = [(compiler, sanitizer, wanted) for compiler, sanitizer, wanted in plan if wanted]
    with ThreadPoolExecutor(max_workers=1) as pool, _Prebuilds(request, limits, plan) as prebuilds:
        macros = _MacroCheck(pool, request.compilers[0], focus)
        unbuilt_under = ""   # the configuration whose build stopped at a compiler error; not carried to
        for compiler, sanitizer, wanted in plan:   # another compiler, which may accept what this one refused
            if configs and configs[-1].compiler != compiler:
                unbuilt_under = ""
            if hung_under:  # the same code hangs in every build: another limit's wait would teach nothing
                configs.append(_not_judged(compiler, sanitizer, wanted, _from_source(exercise, wanted),
                                           f"not judged: every stage hung under {hung_under}"))
                continue
            if unbuilt_under:  # the same header fails to compile in every build: one error is the lesson
                configs.append(_not_judged(compiler, sanitizer, wanted, _from_source(exercise, wanted),
                                           f"not built: the header does not compile under {unbuilt_under}"))
                continue
            prebuilds.ahead(compiler, sanitizer)
            config, hung = _judge_config(request, compiler, sanitizer, wanted, focus, limits, macros, failed,
                                         prebuilds)
            config.build.seconds += prebuilds.spent(compiler, sanitizer)
            configs.append(config)
            hung_under = config.label if hung else ""
            unbuilt_under = config.label if config.build.error else ""
        tampering = macros.result()
    for stage in (s for c in configs for s in c.stages):
        if tampering and (stage.status == StageStatus.PASSED or any(t.status != TestStatus.NOT_RUN for t in stage.tests)):
            stage.status = StageStatus.TAMPERED   # what its tests reported went through the altered macros
    _replayed_on(request, configs)
    passed = bool(configs) and all(s.status == StageStatus.PASSED for c in configs for s in c.stages)
    left_out = [s.number for s in exercise.stages if s not in stages]
    return Verdict(exercise.name, exercise.title, request.impl.label, shown(focus), passed, configs,
                   tampering, time.monotonic() - start, left_out)


def _replayed_on(request: Request, configs: list[ConfigResult]) -> None:
    """The model stage's failure says which command runs its sequences again, as `test N --seed
    S` (judge/tests/support/model_check.hpp): on the learner's header. A run on another file
    names that file in it, or the command would replay the sequences on the wrong header."""
    impl, number = request.impl, request.exercise.id
    given = {"source": f" --source {shlex.quote(shown(impl.path))}" if impl.path else "",
             "solutions": " --solution"}.get(impl.kind, "")
    if not given:
        return
    said, meant = f"judge.py test {number} --seed ", f"judge.py test {number}{given} --seed "
    for test in (t for c in configs for s in c.stages for t in s.tests):
        test.messages = [m.replace(said, meant) for m in test.messages]


def test_environment(limits: Limits, seed: int | None = None, shrink: bool = True) -> dict[str, str]:
    """The environment a test binary runs in: the sanitizers' options and the judge's limits, and
    the seed of the model stage's sequences (RapidCheck reads RC_PARAMS) when one is chosen."""
    env = dict(os.environ, **sanitizers.environment(limits.memory_mb), GTEST_COLOR="no")
    env.pop("RC_PARAMS", None)
    params = ([f"seed={seed}"] if seed is not None else []) + ([] if shrink else ["noshrink=1"])
    if params:
        env["RC_PARAMS"] = " ".join(params)
    return env


def _not_judged(compiler: str, sanitizer: str, stages: list[Stage], expected: dict[str, list[str]],
                why: str) -> ConfigResult:
    return ConfigResult(compiler, sanitizer, BuildSummary(True, 0.0, problem=why), [
        StageResult(s.number, s.suite, s.title, s.goal, StageStatus.FAILED,
                    [TestOutcome(name, TestStatus.NOT_RUN) for name in expected.get(s.suite, [])], [why])
        for s in stages])


def expected_tests(tree: Path, exercise: Exercise, impl: build.Impl, stages: list[Stage],
                   limits: Limits, program: str = "") -> dict[str, list[str]]:
    """Every test each stage must run, by suite, as GoogleTest counts them (see listing); from
    the test files' text when the reference cannot be built to list them."""
    listed = listing.tests_of(tree, exercise, impl, limits, program)
    if listed is None:
        return _from_source(exercise, stages)
    return {s.suite: [name for name in listed if listing.belongs(name, s.suite)] for s in stages}


def _from_source(exercise: Exercise, stages: list[Stage]) -> dict[str, list[str]]:
    found = tests_in_source(exercise)
    return {s.suite: [f"{s.suite}.{name}" for name in found.get(s.suite, [])] for s in stages}


def _judge_config(request: Request, compiler: str, sanitizer: str, stages: list[Stage], focus: Path,
                  limits: Limits, macros: _MacroCheck, failed: set[int],
                  prebuilds: _Prebuilds) -> tuple[ConfigResult, bool]:
    """One configuration's result, and whether every stage hung on its first run. A stage with a
    program of its own (catalog.Stage.program) is built and run only once no stage before it has
    failed, in this configuration or one judged before (`failed`, which this adds to), unless the
    request asks for every stage: a learner whose first stage fails does not wait for the engine.
    Once built in the tree, it is relinked beside the main program's build (_tests_built)."""
    programs: dict[str, list[Stage]] = {}
    for stage in sorted(stages, key=lambda s: (s.program != "", s.number)):
        programs.setdefault(stage.program, []).append(stage)
    result, hung = ConfigResult(compiler, sanitizer, BuildSummary(True, 0.0)), False
    judged: list[StageResult] = []
    waiting = ""   # why a program was not built
    for program, group in programs.items():
        before = sorted(n for n in failed if n < group[0].number)
        if program and before and not request.every_stage:
            waiting = (f"not built yet: {_numbered(before)} must pass first (stage {group[0].number} is a program "
                       "of its own, long to build)")
            judged += _not_judged(compiler, sanitizer, group, _from_source(request.exercise, group), waiting).stages
            continue
        prebuilds.after(compiler, sanitizer, program)
        later = {} if program else {other: stages_of for other, stages_of in programs.items() if other}
        stage_results, summary, hung_here = _judge_program(request, compiler, sanitizer, group, focus, limits, macros,
                                                           program, later)
        judged += stage_results
        hung = hung or (hung_here and not program)
        result.build.seconds += summary.seconds
        if not summary.ok and result.build.ok:
            summary.seconds = result.build.seconds
            result.build = summary
        elif summary.warnings and not result.build.warnings:
            result.build.warnings = summary.warnings
        failed.update(r.number for r in stage_results if r.status != StageStatus.PASSED)
    if waiting and not any(p == "" for p in programs) and len(programs) == 1:
        result.build.problem = waiting   # nothing was built in this configuration
    result.stages = sorted(judged, key=lambda r: r.number)
    return result, hung


def _numbered(numbers: list[int]) -> str:
    return f"stage {numbers[0]}" if len(numbers) == 1 else "stages " + ", ".join(map(str, numbers))


def _judge_program(request: Request, compiler: str, sanitizer: str, stages: list[Stage], focus: Path,
                   limits: Limits, macros: _MacroCheck, program: str,
                   later: dict[str, list[Stage]] | None = None) -> tuple[list[StageResult], BuildSummary, bool]:
    """Builds one test program of the exercise (and links the `later` ones, see _tests_built) and
    runs its stages."""
    exercise, impl = request.exercise, request.impl
    with _tests_built(request, compiler, sanitizer, stages, program, limits, later) as (binary, built):
        error = built.first_error(focus)
        summary = BuildSummary(built.ok, built.seconds, error, built.warnings_in(focus)[:5], built.problem)
        macros.start(binary.parent, binary.name)   # a header that breaks the build by tampering is told so too
        if not built.ok:
            return [StageResult(s.number, s.suite, s.title, s.goal, StageStatus.NOT_BUILT) for s in stages], summary, False
        listed = time.monotonic()
        expected = expected_tests(binary.parent, exercise, impl, stages, limits, program)
        summary.seconds += time.monotonic() - listed  # the listing build, when the tests changed
        if request.tests:
            expected = {suite: [n for n in names if n in request.tests] for suite, names in expected.items()}
        env = test_environment(limits, request.seed, request.shrink)
        results, hung = run_stages(binary, stages, expected, env, limits, focus, named=bool(request.tests))
    return results, summary, hung


def only_stages(exercise: Exercise, stages: list[Stage], program: str = "") -> tuple[int, ...]:
    """The stage numbers a test binary of `program` must hold to run `stages`, or () when that is
    all of its stages: a tree builds the same binary whichever job asks for every stage."""
    numbers = tuple(sorted(s.number for s in stages))
    every = tuple(sorted(s.number for s in exercise.stages if s.program == program))
    return () if numbers == every else numbers


_SHARED_HANG_HEAD = "every stage hung on its first run"
SHARED_HANG = (_SHARED_HANG_HEAD + " (in {names}): the hang is most likely in code every test runs, such as "
               "the constructor, so the judge stopped there instead of waiting out each test in turn; the "
               "tests after it run again once it is fixed")


def run_stages(binary: Path, stages: list[Stage], expected: dict[str, list[str]], env: dict[str, str],
               limits: Limits, focus: Path, named: bool = False) -> tuple[list[StageResult], bool]:
    """Runs every stage at once, each in its own process. When every stage hangs on its first
    run, the hang is in code all tests share (a constructor that never returns): one time
    limit is spent on the whole exercise, not one per test and stage. Otherwise a stage whose
    test hung or crashed is run again without it, so that the other tests still get their
    verdicts."""
    with tempfile.TemporaryDirectory(prefix="alloclab-") as tmp, ThreadPoolExecutor(max(len(stages), 1)) as pool:
        process.hand_over(Path(tmp))
        runs = [_StageRun(binary, stage, expected.get(stage.suite, []), env, limits, focus,
                          Path(tmp) / str(stage.number), named) for stage in stages]
        again = list(pool.map(_StageRun.step, runs))
        hung = [r for r in runs if r.wanted]
        everywhere = len(hung) > 1 and all(r.first_hung for r in hung)
        if everywhere:
            names = ", ".join(r.first_hung for r in hung)
            hung[0].result.problems.append(SHARED_HANG.format(names=names))
            for r in hung[1:]:
                r.result.problems.append(f"{_SHARED_HANG_HEAD}: see stage {hung[0].stage.number}")
            again = [False] * len(runs)
        list(pool.map(_StageRun.finish, [r for r, more in zip(runs, again) if more]))
    return [r.done() for r in runs], everywhere


class _StageRun:
    """One stage over its runs. A test that crashes or hangs is recorded as such, and the
    stage is run again without it, so one crash does not hide the verdict on the others."""

    def __init__(self, binary: Path, stage: Stage, expected: list[str], env: dict[str, str], limits: Limits,
                 focus: Path, tmp: Path, named: bool = False):
        self.binary, self.stage, self.env, self.limits, self.focus, self.tmp = binary, stage, env, limits, focus, tmp
        self.named = named   # run the expected tests by name, not the whole suite
        self.result = StageResult(stage.number, stage.suite, stage.title, stage.goal)
        self.outcomes: dict[str, TestOutcome] = {}
        self.wanted = list(expected)
        self.hangs = self.crashes = self.runs = 0
        self.first_hung = ""   # the test the first run hung in

    def finish(self) -> None:
        while self.step():
            pass

    def step(self) -> bool:
        """One run of the stage's tests not yet judged; True when another run is needed."""
        self.runs += 1
        result, outcomes, wanted, limits = self.result, self.outcomes, self.wanted, self.limits
        excluded = [name for name in wanted if name in outcomes]
        if self.named:
            pattern = ":".join([n for n in wanted if n not in outcomes] + [f"{CANARY}.*"])
        else:
            pattern = (f"{listing.stage_filter(self.stage.suite)}:{CANARY}.*"
                       + ("-" + ":".join(excluded) if excluded else ""))
        if not self.tmp.is_dir():
            self.tmp.mkdir(parents=True)
            process.hand_over(self.tmp)
        report_path = self.tmp / f"report-{len(excluded)}.json"
        run = process.run([str(self.binary), f"--gtest_filter={pattern}", f"--gtest_output=json:{report_path}",
                          "--gtest_brief=0"], cwd=self.tmp, env=self.env,
                         timeout=limits.test_timeout_seconds, keep_bytes=limits.output_bytes)
        result.seconds += run.seconds
        stdout, stderr = run.stdout.text(), run.stderr.text()
        finding = sanitizers.summarize(stderr, str(self.focus))
        if finding and sanitizers.hit_memory_limit(finding):
            finding.limit = f"limit: memory_mb = {limits.memory_mb}"
        for label, captured in (("standard output", run.stdout), ("standard error", run.stderr)):
            if captured.truncated:
                note = (f"the tests printed {captured.total:,} bytes to {label}; the judge kept the first and "
                        f"last {limits.output_bytes // 2:,} (limit: output_bytes = {limits.output_bytes})")
                # The results come from the report file, not from the captured output,
                # so a noisy program is still judged on its tests.
                if note not in result.notes:
                    result.notes.append(note)
        report = read_report(report_path)
        if report is not None and not run.timed_out:
            record_report(report, wanted, outcomes, result)
            if run.returncode != 0 and all(outcomes[n].ok for n in wanted if n in outcomes):
                # Every test passed, yet the run failed: a report at exit, such as a leak.
                if finding:
                    result.findings.append(finding)
                    result.problems.append(finding.line())
                else:
                    result.problems.append(f"the test binary exited with status {run.returncode} "
                                           "after its tests finished")
            return False
        # No complete report: the process crashed, hung, or ended early.
        running = running_test(stdout)
        record_finished(stdout, outcomes, wanted)
        if running is None or running not in wanted:
            result.problems.append(_early_end(run, finding, running))
            if finding:
                result.findings.append(finding)
            return False
        if run.timed_out:
            self.hangs += 1
            if self.runs == 1:
                self.first_hung = running
            outcomes[running] = TestOutcome(running, TestStatus.TIMEOUT, [
                f"no result after {limits.test_timeout_seconds:g} s (limit: test_timeout_seconds); the judge "
                "stopped it. An infinite loop, or a deadlock if threads are involved?"], None, run.seconds)
        else:
            self.crashes += 1
            outcomes[running] = TestOutcome(running, TestStatus.CRASHED, [_crash_text(run, finding)],
                                            finding)
        if self.hangs >= 2 or self.crashes >= len(wanted):
            result.problems.append("the judge stopped re-running this stage after "
                                   + (f"{self.hangs} hangs" if self.hangs > 1 else f"{self.crashes} crashes"))
            return False
        return True

    def done(self) -> StageResult:
        result = self.result
        for name in self.wanted:
            result.tests.append(self.outcomes.get(name) or TestOutcome(name, TestStatus.NOT_RUN))
        if not self.wanted:
            result.problems.append(f"no test file defines a test of suite {self.stage.suite}")
        if result.problems == [] and all(t.ok for t in result.tests) and result.tests:
            result.status = StageStatus.PASSED
        return result


def _crash_text(run: process.RunResult, finding: Finding | None) -> str:
    if finding:
        return finding.line()
    if run.signal_name:
        return f"the test crashed: {run.signal_name}{_SIGNAL_MEANING.get(run.signal_name, '')}"
    return f"the test ended the whole test program (exit status {run.returncode}) before it finished"


_SIGNAL_MEANING = {
    "SIGSEGV": " (segmentation fault: a read or write of memory the program does not own, such as a null "
               "or dangling pointer, or a stack overflow)",
    "SIGABRT": " (abort: std::terminate, a failed assert, or an exception thrown from a noexcept function)",
    "SIGFPE": " (arithmetic error, such as an integer division by zero)",
    "SIGBUS": " (bus error: a misaligned or unmapped access)",
    "SIGILL": " (illegal instruction, often __builtin_unreachable() reached)",
    "SIGKILL": " (killed, often for using too much memory)",
}


def _early_end(run: process.RunResult, finding: Finding | None, running: str | None) -> str:
    if run.timed_out:
        return (f"the test program produced no result within {run.seconds:.0f} s (limit: test_timeout_seconds) "
                "and was stopped")
    if finding:
        return finding.line() + " (outside any test: in a static initializer or at exit)"
    if run.signal_name:
        return f"the test program crashed outside any test: {run.signal_name}{_SIGNAL_MEANING.get(run.signal_name, '')}"
    return (f"the test program ended with status {run.returncode} before writing its report, so its tests "
            "cannot count as passed. Does the code under test call exit(), quick_exit() or _Exit(), perhaps "
            "from a static initializer?")
