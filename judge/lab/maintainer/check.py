"""`check`: the maintainer's proof that the kit is sound. The judge's own unit tests pass, the
catalog is valid, no stage's test calls a member the skeleton marks for a later stage, every
exercise's mutants were proven against its reference as it is, every reference passes every
stage in every configuration with both compilers, every untouched skeleton compiles and fails
every stage, every known mistake is caught by the test it names, the serving engine built on the
references serves a short trace with every token equal to the plain engine's, and the learner's
docs build without warnings and load in a browser with nothing broken."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..learner import bench, serve, serve_verdict
from . import browser, docs, mutate, stage_marks
from ..core import build, examining, judging, listing, process, sanitizers
from .. import ui
from .lint import validate
from ..model.catalog import ROOT, Catalog, Exercise, Limits, shown
from ..model.errors import UsageError
from ..model import schema
from ..model.progress import Progress
from ..model.results import StageStatus, TestStatus, Verdict
from .mistakes import OUT as MISTAKES_OUT, SERVING_OUTCOMES, Mistake, PatchError, materialize, mistakes
from ..model.variants import Wheat, materialize_wheat, wheats

# Test files whose verdict under `examine` is known: each asserts something the contract leaves
# free, and names the wheat that does otherwise (`// Invalid on: <wheat>`).
EXAMINE_FIXTURES = ROOT / "judge" / "selftest" / "fixtures" / "examine"

# How many times in a row the reference must pass every thread stage: a flaky test shows.
THREAD_REPEATS = 20
# The seeds the reference's model stage must pass besides the learner's default one: each seed
# is a few hundred other sequences, so a model and a reference that disagree only rarely show.
MODEL_SEEDS = (2, 3, 4)


@dataclass
class Item:
    ok: bool | None   # None: skipped, with the reason in detail
    what: str
    detail: str = ""
    seconds: float = 0.0


def check_command(args, catalog: Catalog) -> bool:
    compilers = build.compilers_for("all")
    exercises = [catalog.resolve(args.exercise)] if args.exercise else list(catalog.exercises)
    items: list[Item] = []

    def report(item: Item) -> None:
        items.append(item)
        took = ui.paint(f"  {item.seconds:.1f} s", "dim") if item.seconds else ""
        sign = ui.paint(ui.SKIP + " skipped:", "yellow") if item.ok is None else ui.mark(item.ok)
        text = f"{sign} {item.what}{took}"
        if item.ok is not True and item.detail:
            text += "\n" + ui.indent(item.detail, "    ", max_lines=30, more="")
        running.print(text)

    slots = build.Slots("check", args.jobs)
    jobs = []
    for ex in exercises:
        # The references first: their builds list the tests (listing.py) for every other tree of
        # the same compiler, so the skeletons and the mistakes do not compile the tests twice.
        jobs += [(_reference, ex, compiler) for compiler in compilers]
        jobs.append((_skeleton, ex, "clang"))
        if any("tsan" in s.sanitizers for s in ex.stages):
            jobs += [(_thread_stages_repeated, ex, compiler) for compiler in compilers]
        if ex.header == serve.MANAGER_HEADER:
            jobs.append((_engine_threads, ex, "clang"))
        jobs.append((_model_seeds, ex, "clang"))
        for compiler in build.newer_clangs():  # a newer compiler must accept the references too
            jobs.append((_reference, ex, compiler))
        # g++ judges no known mistake, so its skeleton is judged in its reference's trees, which
        # then compile again only what includes the header; that far down the list, the
        # reference is done with them, and no job waits for the other to unlock a tree.
        jobs += [(_skeleton_in_reference_trees, ex, compiler) for compiler in compilers if compiler != "clang"]
        # Each wheat in its reference's trees too, with both compilers: only what includes the header
        # compiles again.
        jobs += [(_wheat, ex, _WheatJob(wheat, compiler)) for compiler in compilers for wheat in wheats(ex)]
        jobs.append((_examined, ex, "clang"))
        # Those judged on the same stages one after the other: a tree is configured for the
        # stages it holds, and configured again only when they change.
        for mistake in sorted(mistakes(ex), key=lambda m: m.stages(ex)):
            jobs.append((_mistake, ex, mistake))
        if ex.bench_dir.is_dir():
            jobs.append((_benchmarks, ex, "clang"))
    served = [ex for ex in exercises if ex.header == serve.MANAGER_HEADER]
    modules = _unit_test_modules()
    total = len(modules) + 1 + 1 + 2 + bool(served) + (not args.no_docs) + len(jobs)
    print(f"Checking the kit: {total} jobs, {max(args.jobs, 1)} at a time (about half an hour on two cores; "
          "each result is printed as its job ends).", flush=True)
    with _Running(total) as running:
        _check_all(args, catalog, exercises, served, modules, jobs, slots, running, report)
    return _summary(items)


def _check_all(args, catalog: Catalog, exercises: list[Exercise], served: list[Exercise], modules: list[str],
               jobs: list, slots: build.Slots, running: "_Running", report) -> None:
    report(_unit_tests(args.jobs, modules, running))
    with running.job("the catalog"):
        problems = validate(catalog)
    report(Item(not problems, "the catalog is valid", "\n".join(problems)))
    with running.job("the stage marks"):
        early = [problem for ex in exercises for problem in stage_marks.problems(ex)]
    report(Item(not early, "every stage's tests call only what the skeleton marks for that stage or an earlier one",
                "\n".join(early)))
    with running.job("the mutation records"):
        unproven = mutate.record_problems(exercises)
    report(Item(not unproven, "every exercise's mutants were proven against its reference as it is now",
                "\n".join(unproven)))
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        # The engine and the docs first: each is one long job that, left to the end, would keep
        # one core busy while the other waits.
        futures = [pool.submit(running.guarded, "the serving engine", lambda: [_serve(catalog)])]
        if served:
            futures.append(pool.submit(running.guarded, "the known mistakes served",
                                       lambda: list(_served_mistakes(catalog, served[0]))))
        if not args.no_docs:
            futures.append(pool.submit(running.guarded, "the learner's documentation", lambda: list(_docs(catalog))))
        futures += [pool.submit(running.guarded, _job_name(fn, ex, arg), lambda *job: [_timed(*job)],
                                fn, catalog, ex, arg, slots) for fn, ex, arg in jobs]
        for future in as_completed(futures):
            for item in future.result():
                report(item)


def _job_name(fn, ex: Exercise, arg) -> str:
    return f"{ex.name}: {fn.__name__.strip('_').replace('_', ' ')} {getattr(arg, 'name', arg)}"


class _Running:
    """`check`'s line at the foot of a terminal, as `grade` keeps one: the jobs done of all, the
    job running longest, the time so far, redrawn every second; the results print above it. A
    check runs for half an hour, and its first result comes only after minutes."""

    def __init__(self, total: int):
        self.line = ui.ProgressLine("check")
        self.total, self.done = total, 0
        self.started = time.monotonic()
        self.running: dict[str, float] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> "_Running":
        if self.line.live:
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        with self._lock:
            self.line.clear()

    @contextmanager
    def job(self, name: str):
        with self._lock:
            self.running[name] = time.monotonic()
            self._draw()
        try:
            yield
        finally:
            with self._lock:
                self.running.pop(name, None)
                self.done += 1
                self._draw()

    def guarded(self, name: str, items, *args) -> list[Item]:
        with self.job(name):
            return _guarded(name, lambda: items(*args))

    def print(self, text: str) -> None:
        with self._lock:
            self.line.clear()
            print(text, flush=True)
            self._draw()

    def _draw(self) -> None:
        elapsed = int(time.monotonic() - self.started)
        now = min(self.running, key=self.running.get, default="")
        self.line.show(min(self.done, self.total), self.total,
                       f"  {elapsed // 60}m {elapsed % 60:02d}s" + (f"  {now}" if now else ""))

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                self._draw()


def _docs(catalog: Catalog):
    """The learner's site builds without a warning and without the references; then every page of it
    loads in a real browser with nothing broken."""
    what = "the learner's documentation builds without warnings, and without the reference solutions"
    if not docs.available():
        yield Item(None, what, docs.missing())
        return
    start = time.monotonic()
    ok, detail = docs.build_docs(catalog)
    yield Item(ok, what, detail, time.monotonic() - start)
    what = ("every page of it, in both languages, loads in chromium with no missing image, broken link, script "
            "error or switch to the other language that misses its twin (a chapter as it looks: "
            f"{docs.SCREENSHOT.relative_to(ROOT)}, {docs.SCREENSHOT_ZH.relative_to(ROOT)})")
    if not ok:
        yield Item(None, what, "there is no site to load")
    elif not browser.executable():
        yield Item(None, what, "chromium is not installed (sudo apt-get install chromium)")
    else:
        start = time.monotonic()
        ok, detail = docs.check_in_browser(catalog)
        yield Item(ok, what, detail, time.monotonic() - start)


def _summary(items: list[Item]) -> bool:
    passed = sum(i.ok is True for i in items)
    failed = sum(i.ok is False for i in items)
    skipped = len(items) - passed - failed
    print(f"\n{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return failed == 0


def _guarded(what: str, items) -> list[Item]:
    try:
        return items()
    except Exception as err:  # one broken job must not hide the others' results
        return [Item(False, what, f"the judge failed: {type(err).__name__}: {err}")]


def _timed(fn, catalog, ex, arg, slots) -> Item:
    """Runs one job; the jobs that judge in build trees of their own get a slot, a tree name no
    other running job uses."""
    start = time.monotonic()
    try:
        if fn in _IN_A_SLOT:
            with slots.taken() as slot:
                item = fn(catalog, ex, arg, slot)
        else:
            item = fn(catalog, ex, arg)
    except Exception as err:  # one broken job must not hide the others' results
        item = Item(False, f"{ex.name}: {fn.__name__.strip('_')} {arg}", f"the judge failed: {type(err).__name__}: {err}")
    item.seconds = time.monotonic() - start
    return item


def _reference_request(ex: Exercise, compiler: str, **more) -> judging.Request:
    """The reference, as every job that judges it in its trees asks for it: the same request, so
    that no job configures a tree again for another. No line tables: the compiles are a sixth
    shorter without them, and `test N --solution` gives the lines of a reference that fails here."""
    return judging.Request(ex, build.Impl("solutions"), (compiler,), werror=True, line_tables=False, **more)


def _reference(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    # Each tree compiles only the stages judged in it (a ThreadSanitizer tree, the thread stages).
    verdict = judging.judge(_reference_request(ex, compiler, compile_only_judged=True), catalog.limits)
    what = (f"{ex.name}: the reference passes every stage with {build.program(compiler)} ({', '.join(ex.sanitizers)}), "
            "running exactly the tests its test files' text names")
    if not verdict.passed:
        return Item(False, what, _first_problem(verdict))
    differ = _listed_otherwise(ex, verdict)
    return Item(not differ, what, differ)


def _listed_otherwise(ex: Exercise, verdict: Verdict) -> str:
    """Where the tests a build of the reference ran (GoogleTest's own list) differ from those its
    test files' text names (listing.from_text), which the judge trusts instead for every build but
    a reference's; empty when they agree, or when the text cannot tell."""
    program_of = {s.number: s.program for s in ex.stages}
    told = {program: listing.from_text(ex, program) for program in set(program_of.values())}
    problems = []
    for config in verdict.configs:
        for result in config.stages:
            text = told[program_of[result.number]]
            if text is None:
                continue
            named = [n for n in text if listing.belongs(n, result.suite)]
            ran = [t.name for t in result.tests]
            if ran != named:
                extra, missing = [n for n in ran if n not in named], [n for n in named if n not in ran]
                problems.append(f"{config.label}, stage {result.number}: GoogleTest lists "
                                f"{', '.join(extra) or 'no other test'} beyond the text; the text names "
                                f"{', '.join(missing) or 'no other test'} beyond GoogleTest"
                                + ("" if extra or missing else "; the order differs"))
    if problems:
        problems.append("The judge reads a learner's tests from the text (core/listing.py, from_text): keep every "
                        "test a plain TEST at the top level of its file, outside #if, or make from_text say it "
                        "cannot tell.")
    return "\n".join(problems)


def _skeleton(catalog: Catalog, ex: Exercise, compiler: str, slot: str) -> Item:
    # Judged as a file, so in the trees of the known mistakes (build/<compiler>-<sanitizer>-source-
    # <slot>), whose model generators and precompiled header it then shares, and never in the
    # learner's; each tree compiles only the stages run in it, which still compiles every stage once.
    return _skeleton_judged(catalog, ex, compiler, slot=slot, line_tables=False)


def _skeleton_in_reference_trees(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    # Configured as the reference's request is, the header apart: a tree that changed its flags
    # would compile everything again.
    return _skeleton_judged(catalog, ex, compiler, tree_of=build.Impl("solutions"), line_tables=False)


def _skeleton_judged(catalog: Catalog, ex: Exercise, compiler: str, **where) -> Item:
    verdict = judging.judge(judging.Request(ex, build.Impl("source", ex.exercise_file), (compiler,), werror=True,
                                            every_stage=True, compile_only_judged=True, **where),
                            catalog.limits)
    what = f"{ex.name}: the untouched skeleton compiles and fails every stage with {build.program(compiler)}"
    unbuilt = [c for c in verdict.configs if not c.build.ok]
    if unbuilt:
        return Item(False, what, "it does not compile warning-free:\n" + _first_problem(verdict))
    passing = sorted({f"stage {s.number} ({c.sanitizer})" for c in verdict.configs for s in c.stages
                      if s.status == "passed"})
    crashed = sorted({t.name for c in verdict.configs for s in c.stages for t in s.tests
                      if t.status in (TestStatus.CRASHED, TestStatus.TIMEOUT)})
    detail = ""
    if passing:
        detail += "these stages pass on the skeleton, so they test nothing a learner must write: " + ", ".join(passing)
    if crashed:
        detail += ("\n" if detail else "") + "these tests crash or hang on the skeleton instead of failing: " + \
            ", ".join(crashed)
    return Item(not passing and not crashed, what, detail)


@dataclass(frozen=True)
class _WheatJob:
    wheat: Wheat
    compiler: str

    @property
    def name(self) -> str:
        return f"{self.wheat.name} ({self.compiler})"


def _wheat(catalog: Catalog, ex: Exercise, job: _WheatJob) -> Item:
    """A wheat, a correct implementation that differs from the reference where the contract leaves
    a choice, passes every stage: a stage that fails it asserts what the contract does not promise."""
    what = (f"{ex.name}: the wheat {job.wheat.name} passes every stage with {build.program(job.compiler)} "
            f"({', '.join(ex.sanitizers)})")
    try:
        header = materialize_wheat(ex, job.wheat, MISTAKES_OUT / "wheats" / job.compiler / ex.name / job.wheat.name /
                                   ex.header)
    except PatchError as err:
        return Item(False, what, f"the diff no longer applies to {ex.solution_file.relative_to(ROOT)}: {err}")
    verdict = judging.judge(judging.Request(ex, build.Impl("source", header), (job.compiler,), werror=True,
                                            line_tables=False, compile_only_judged=True,
                                            tree_of=build.Impl("solutions")), catalog.limits)
    if verdict.passed:
        return Item(True, what)
    return Item(False, what, f"{job.wheat.description}\n" + _first_problem(verdict) +
                "\nA stage that fails a correct implementation asserts what the contract does not promise: fix the "
                "test, or state the promise in the contract (and make the wheat keep it).")


def _examined(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    """`examine` on the files whose verdict is known: the skeleton's my_tests.cpp is valid; a file
    with no test is valid and rejects nothing; each file of judge/selftest/fixtures/examine/ that
    asserts what the contract leaves free is invalid on the wheat it names (and maybe on others:
    the reference's heap may place a buffer either way)."""
    what = (f"{ex.name}: examine finds the skeleton's own test file valid, a file with no test valid and rejecting "
            "nothing, and each file asserting what the contract leaves free invalid, on the wheat named in it")
    problems = []
    mine = ex.exercise_file.parent / examining.MY_TESTS
    verdict = examining.examine(ex, mine, catalog.limits, jobs=1, chaffs=False)
    if not verdict.valid:
        problems.append(f"{shown(mine)} is not valid: {verdict.problem or verdict.invalid[0]}")
    empty = MISTAKES_OUT / "examine" / ex.name / "no_test.cpp"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_text(f'#include "{ex.header}"\n#include <gtest/gtest.h>\n', encoding="utf-8")
    verdict = examining.examine(ex, empty, catalog.limits, jobs=1)
    if not verdict.valid or verdict.chaffs_caught or not verdict.chaffs_total:
        problems.append(f"a file with no test: valid {verdict.valid}, {verdict.chaffs_caught} of "
                        f"{verdict.chaffs_total} known mistakes rejected {verdict.problem}")
    for fixture in sorted(EXAMINE_FIXTURES.glob(f"{ex.name}*.cpp")):
        named = re.search(r"^// Invalid on: (\S+)", fixture.read_text(encoding="utf-8"), re.M)
        verdict = examining.examine(ex, fixture, catalog.limits, jobs=1, chaffs=False)
        wheats_failed = sorted({i.wheat for i in verdict.invalid})
        if not named or verdict.valid or named.group(1) not in wheats_failed:
            problems.append(f"{shown(fixture)}: invalid on {', '.join(wheats_failed) or 'no wheat'}, where its "
                            f"`// Invalid on:` line says {named.group(1) if named else '(no such line)'} "
                            f"{verdict.problem}")
    return Item(not problems, what, "\n".join(problems))


def _thread_stages_repeated(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    """Every stage that runs under ThreadSanitizer, run THREAD_REPEATS times in one process
    against the reference: a test that passes only most of the time is a broken test."""
    what = (f"{ex.name}: the reference passes the thread stages {THREAD_REPEATS} times in a row under "
            f"ThreadSanitizer with {build.COMPILERS[compiler]}")
    limits = catalog.limits
    threaded = [s for s in ex.stages if "tsan" in s.sanitizers]
    for program in dict.fromkeys(s.program for s in threaded):
        ours = [s for s in threaded if s.program == program]
        suites = ":".join(f"{s.suite}.*" for s in ours)
        with build.tests_built(_reference_request(ex, compiler), compiler, "tsan",
                               limits.build_timeout_seconds, program=program,
                               only_stages=judging.only_stages(ex, ours, program)) as (binary, built):
            if not built.ok:
                return Item(False, what, built.problem or "the reference does not build")
            failure = _repeated(binary, limits, limits.test_timeout_seconds * THREAD_REPEATS,
                                f"--gtest_filter={suites}")
        if failure:
            return Item(False, what, failure)
    return Item(True, what)


def _repeated(binary: Path, limits: Limits, timeout: float, *args: str) -> str:
    """Runs a test binary THREAD_REPEATS times in one process, as a learner's tests run (the
    sanitizers' options): what went wrong in one of the runs, or "" when none did."""
    result = process.run([str(binary), *args, f"--gtest_repeat={THREAD_REPEATS}", "--gtest_brief=1"],
                         cwd=binary.parent, env=judging.test_environment(limits), timeout=timeout,
                         keep_bytes=limits.output_bytes)
    if result.returncode == 0 and not result.timed_out:
        return ""
    finding = sanitizers.summarize(result.stderr.text())
    failed = re.findall(r"^\[  FAILED  \] (\w+\.\w+)", result.stdout.text(), re.M)
    why = ("timed out" if result.timed_out else finding.line() if finding else
           "failed: " + ", ".join(sorted(set(failed))) if failed else f"exit status {result.returncode}")
    return f"one of the {THREAD_REPEATS} runs {why}"


def _model_seeds(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    """The reference agrees with the model under more seeds than the learner's default one."""
    stage = ex.stages[-1]
    what = (f"{ex.name}: the reference agrees with the model stage under seeds "
            f"{', '.join(map(str, MODEL_SEEDS))} with {build.COMPILERS.get(compiler, compiler)}")
    limits = catalog.limits
    with build.tests_built(_reference_request(ex, compiler), compiler,
                           stage.sanitizers[0], limits.build_timeout_seconds) as (binary, built):
        if not built.ok:
            return Item(False, what, built.problem or "the reference does not build")
        for seed in MODEL_SEEDS:
            result = process.run([str(binary), f"--gtest_filter={stage.suite}.*", "--gtest_brief=1"],
                                 cwd=binary.parent, env=judging.test_environment(limits, seed),
                                 timeout=limits.test_timeout_seconds, keep_bytes=limits.output_bytes)
            if result.returncode != 0 or result.timed_out:
                out = result.stdout.text()
                at = out.find("disagree")
                why = "timed out" if result.timed_out else out[max(at - 40, 0):][:3000] if at >= 0 else out[-3000:]
                return Item(False, what, f"seed {seed}: {why}")
    return Item(True, what)


def _mistake(catalog: Catalog, ex: Exercise, mistake: Mistake, slot: str) -> Item:
    what = f"{ex.name}: the known mistake {mistake.path.name} is caught by {', '.join(mistake.caught_by) or '?'}"
    if not mistake.description or not mistake.caught_by:
        return Item(False, what, "the file must start with `Mistake: ...` and `Caught by: Suite.Test` lines")
    stages = []
    for test in mistake.caught_by:
        stage = ex.stage_for_suite(test.split(".")[0])
        if stage is None:
            return Item(False, what, f"{test} belongs to no stage of the catalog")
        stages.append(stage)
    sanitizer = stages[0].sanitizers[0]
    try:
        # At one path per slot and exercise: a tree configured for that path is not configured
        # again for the next mistake, it only compiles what includes the header.
        wrong = materialize(ex, mistake, MISTAKES_OUT / slot / ex.name / ex.header)
    except PatchError as err:
        return Item(False, what, f"the diff no longer applies to {ex.solution_file.relative_to(ROOT)}: {err}. "
                                 "Make the mistake again on the new reference and save its `diff -u`.")
    request = judging.Request(ex, build.Impl("source", wrong), ("clang",), tuple(sorted({s.number for s in stages})),
                              slot=slot, sanitizers=(sanitizer,), shrink=False, line_tables=False,
                              compile_only_judged=True, tests=tuple(mistake.caught_by))
    verdict = judging.judge(request, catalog.limits)
    outcomes = {t.name: t for c in verdict.configs for s in c.stages for t in s.tests}
    # Each stage runs the tests the file names, and nothing else: a run of one test that fails at
    # exit (a leak LeakSanitizer reports once the test is over) fails that test.
    alone_and_failed = {s.tests[0].name for c in verdict.configs for s in c.stages
                        if len(s.tests) == 1 and s.status != StageStatus.PASSED}
    if not all(c.build.ok for c in verdict.configs):
        return Item(False, what, "it does not compile, so it proves nothing:\n" + _first_problem(verdict))
    missing = [t for t in mistake.caught_by if t not in outcomes]
    if missing:
        return Item(False, what, f"no such test: {', '.join(missing)}")
    escaped = [t for t in mistake.caught_by if outcomes[t].ok and t not in alone_and_failed]
    if escaped:
        return Item(False, what, f"{', '.join(escaped)} passed: the mistake is not caught")
    return Item(not verdict.passed, what)


def _benchmarks(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    what = f"{ex.name}: the benchmarks build and run against the reference"
    try:
        results = bench.measure(catalog, ex, build.Impl("solutions"), compiler, min_time=0.01)
    except bench.BenchError as err:
        return Item(False, what, str(err))
    lacking = [w for w, allocators in results.items() if not any(a.startswith(ex.bench_subject) for a in allocators)]
    if lacking:
        return Item(False, what, f"no benchmark of {ex.bench_subject} in workload(s) {', '.join(lacking)}, "
                                 "so nothing can be compared there")
    return Item(bool(results), what, "" if results else "the benchmark binary ran no benchmark")


ENGINE_GUARDS = "alloclab_engine_guards"


def _serve(catalog: Catalog) -> Item:
    """A short `serve --trace tiny --with reference` under each manager, as --compare serves it: the
    engine builds on the references (so a change to any of them that breaks it shows), every manager
    can serve the trace on its default budget, and each run says what the kit promises of it."""
    what = ("the serving engine builds on the references and serves the tiny trace under each manager with every "
            "request's tokens equal to the plain engine's, no block held at the end, no heap allocation of the "
            "engine's own in its steady state, and its output as its schema says (serve --trace tiny --compare "
            "--with reference); and on four times the chat trace's budget, the same, with no more sequences at once "
            "than max_seqs")
    if not serve.SOURCE.is_file():
        return Item(None, what, f"the engine's sources ({shown(serve.SOURCE)}) are not in this tree yet")
    start = time.monotonic()
    described = json.loads(serve.SCHEMA.read_text(encoding="utf-8"))
    problems = []
    for manager in serve.COMPARED:
        try:
            result = serve.serve_once(catalog, "tiny", manager, "reference")
            serve.svg(result, "check")          # the timeline draws from what the engine printed
        except (serve.ServeError, UsageError) as err:
            return Item(False, what, f"{manager}: {err}", time.monotonic() - start)
        found = [f"the output breaks {shown(serve.SCHEMA)}: {e}" for e in schema.errors(result, described)]
        if result["matches_plain_engine"] is not True:
            found.append(f"matches_plain_engine is {json.dumps(result['matches_plain_engine'])}: " + serve.MISMATCH)
        problems += [f"{manager}: {f}" for f in found + _broken_promises(result)]
    try:
        problems += _serve_wide(catalog)
    except (serve.ServeError, UsageError) as err:
        problems.append(str(err))
    return Item(not problems, what, "\n".join(problems), time.monotonic() - start)


def _engine_threads(catalog: Catalog, ex: Exercise, compiler: str) -> Item:
    """The engine's own tests (judge/engine/tests/) on the references, under ThreadSanitizer and
    THREAD_REPEATS times: what the engine refuses before it serves, how the reserving manager
    answers a call it cannot, and its two threads (the scheduler and the model runner, handing
    each step over through the ring), which must not race. The learner's stage 4 runs them under
    AddressSanitizer alone, since neither thread ever calls the manager while the other runs:
    what ThreadSanitizer could find there is the kit's, and this job proves it absent."""
    what = (f"{ex.name}: the engine's own tests, its two-thread pipeline among them, pass {THREAD_REPEATS} times "
            f"in a row under ThreadSanitizer with {build.COMPILERS[compiler]} on the references")
    try:
        binary = serve.build_engine(catalog, "reference", serve.sources(catalog, Progress(), "reference"),
                                    compiler=compiler, target=ENGINE_GUARDS, sanitizer="tsan")
    except (serve.ServeError, UsageError) as err:
        return Item(False, what, str(err))
    failure = _repeated(binary, catalog.limits, catalog.limits.bench_timeout_seconds)
    return Item(not failure, what, failure)


def _broken_promises(result: dict) -> list[str]:
    """What a run of the references shows wrong: what `serve` fails a run for (tokens, a leak,
    requests unfinished), and any heap allocation of the engine's own in its steady state."""
    broken = list(serve.failures(result).values())
    if result["heap_per_step"]["engine"] != 0:
        broken.append(f"the engine itself made {result['heap_per_step']['engine']} heap allocations per steady-state "
                      "step, not 0: an engine keeps malloc off its hot path, the kit's thesis")
    return broken


def _serve_wide(catalog: Catalog) -> list[str]:
    """The chat trace with the tiny model on the largest budget of `serve --sweep`, under each
    manager: batches far larger than the tight budget's, where every token must still match, the
    engine must still allocate nothing of its own, and forked samples must not run it past max_seqs."""
    binary = serve.build_engine(catalog, "reference", serve.sources(catalog, Progress(), "reference"))
    timeout = catalog.limits.bench_timeout_seconds
    first = serve.run(binary, "chat", "reserve", timeout, model="tiny")
    if first["matches_plain_engine"] is not True:
        return ["the chat trace with the tiny model: " + serve.MISMATCH]
    budget = round(first["kv_blocks"] * serve.SWEEP_FACTORS[-1])
    problems = []
    for manager in serve.COMPARED:
        result = serve.run(binary, "chat", manager, timeout, budget, model="tiny", plain=False)
        where = f"{manager} on {budget} blocks (the chat trace, the tiny model)"
        if result["tokens_digest"] != first["tokens_digest"]:
            problems.append(f"{where}: " + serve.MISMATCH)
        problems += [f"{where}: {f}" for f in _broken_promises(result)]
        if result["peak_running"] > result["max_seqs"]:
            problems.append(f"{where}: {result['peak_running']} sequences ran at once, more than max_seqs "
                            f"{result['max_seqs']}: forked samples must count at admission")
    return problems


# What `serve` makes of a run, in the words of a mistake file's `Serving:` line.
_SERVED_AS = {serve.CRASHED: "crashes", serve.STOPPED: "stopped", serve.TIMED_OUT: "hangs"}


def _served_mistakes(catalog: Catalog, ex: Exercise):
    """Serves every known mistake of the served exercise on the chat trace with the tiny model,
    under `prefix` and `paged`, and proves that `serve` makes of it what its `Serving:` line says:
    "below the reference" when every token is right and `serve --compare` would mark a figure the
    manager decides worse than the reference's (the reference's runs here give those figures).
    One tree, build/serve-mistakes, for all of them: each rebuilds the one engine file that
    includes the header."""
    chosen = serve.sources(catalog, Progress(), "reference")
    # The reference's tokens, compared once with the plain engine's: each mistake's run is then
    # compared with them by digest, without running the plain engine again.
    what = f"{ex.name}: the reference served with the tiny model matches the plain engine under prefix and paged"
    start = time.monotonic()
    want: dict[str, str] = {}
    theirs: dict[str, dict] = {}   # what the reference decided, as `serve --compare` judges a manager
    try:
        binary = serve.build_engine(catalog, "mistakes", serve.with_source(catalog, chosen, ex.solution_file))
        for manager in MANAGERS_SERVED:
            result = serve.run(binary, "chat", manager, SERVED_MISTAKE_SECONDS, model="tiny")
            if found := serve.failures(result):
                yield Item(False, what, f"{manager}: " + "; ".join(found.values()))
                return
            want[manager] = result["tokens_digest"]
            theirs[manager] = serve_verdict.reference_figures(result)
    except serve.ServeError as err:
        yield Item(False, what, str(err), time.monotonic() - start)
        return
    yield Item(True, what, "", time.monotonic() - start)
    for mistake in mistakes(ex):
        start = time.monotonic()
        what = f"{ex.name}: serving the known mistake {mistake.name} {mistake.serving}"
        try:
            wrong = materialize(ex, mistake, MISTAKES_OUT / "served" / ex.name / ex.header)   # one path: no new configure
            binary = serve.build_engine(catalog, "mistakes", serve.with_source(catalog, chosen, wrong))
        except (PatchError, serve.ServeError) as err:
            yield Item(False, what, str(err), time.monotonic() - start)
            continue
        seen: dict[str, list[str]] = {}
        for manager in MANAGERS_SERVED:
            try:
                result = serve.run(binary, "chat", manager, SERVED_MISTAKE_SECONDS, model="tiny", plain=False)
                found = list(serve.failures(result))
                if result["tokens_digest"] != want[manager]:
                    found.append(serve.TOKENS_DIFFER)
                worse = [c.what for c in serve_verdict.manager_checks(manager, result, theirs[manager]) if not c.met]
                if worse and not found:
                    found.append(BELOW_THE_REFERENCE)
            except serve.ServeError as err:
                found = [_SERVED_AS.get(err.ending, str(err))]
            for f in found:
                seen.setdefault(f, []).append(manager)
            if mistake.serving in seen:
                break   # shown: the other manager need not serve it
        observed = "; ".join(f"{f} ({', '.join(m)})" for f, m in seen.items()) or "it passes under both managers"
        if mistake.serving in SERVING_OUTCOMES:
            ok = mistake.serving in seen
        else:
            ok = not seen
        yield Item(ok, what, f"serve: {observed}", time.monotonic() - start)


BELOW_THE_REFERENCE = "below the reference"   # what `serve --compare` fails a manager for
SERVED_MISTAKE_SECONDS = 60   # the tiny model serves the chat trace in a few seconds
MANAGERS_SERVED = ("prefix", "paged")

_IN_A_SLOT = (_skeleton, _mistake)


def _first_problem(verdict: Verdict) -> str:
    for config in verdict.configs:
        if not config.build.ok:
            err = config.build.error
            if err:
                return f"[{config.label}] {err.where()}: {err.message}"
            return f"[{config.label}] {config.build.problem}"
        for stage in config.stages:
            if stage.status == StageStatus.PASSED:
                continue
            for problem in stage.problems:
                return f"[{config.label}] stage {stage.number}: {problem}"
            for test in stage.tests:
                if not test.ok:
                    message = test.messages[0] if test.messages else ""
                    return f"[{config.label}] {test.name} {test.status}: {message}"
    return "; ".join(verdict.tampering)


# unittest, with Ctrl-C as a terminal delivers it. A shell that starts `check` in the background
# without job control makes it ignore SIGINT, and every process it starts would inherit that: the
# tests that stop `watch` with Ctrl-C would then wait forever. A handled signal is reset to its
# default in the programs this process starts.
_UNITTEST_WITH_CTRL_C = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                         "sys.argv[0] = 'python -m unittest'; runpy.run_module('unittest', run_name='__main__')")


def _unit_test_modules() -> list[str]:
    return sorted(p.name for p in (ROOT / "judge" / "selftest").glob("test_*.py"))


def _unit_tests(jobs: int, modules: list[str], running: _Running) -> Item:
    """The judge's own tests, one process per test module, `jobs` modules at a time: many of
    them build and judge headers, or wait out a time limit on purpose, and one after the other
    they were the longest step of `check`."""
    start = time.monotonic()

    def run(module: str) -> tuple[str, int, subprocess.CompletedProcess]:
        with running.job(f"the judge's unit tests: {module}"):
            return _run_module(module)

    def _run_module(module: str) -> tuple[str, int, subprocess.CompletedProcess]:
        proc = subprocess.run([sys.executable, "-c", _UNITTEST_WITH_CTRL_C, "discover", "-s",
                               str(ROOT / "judge" / "selftest"), "-t", str(ROOT / "judge"), "-p", module],
                              capture_output=True, text=True, cwd=ROOT)
        ran = re.search(r"^Ran (\d+) tests?", proc.stderr, re.M)
        return module, int(ran.group(1)) if ran else 0, proc

    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        done = list(pool.map(run, modules))
    count = sum(n for _, n, _ in done)
    failed = [(module, proc) for module, n, proc in done if proc.returncode != 0 or n == 0]
    detail = "\n".join(f"{module}:\n{proc.stderr[-3000:]}" for module, proc in failed)
    return Item(not failed and count > 0, f"the judge's own unit tests pass ({count} tests in {len(modules)} modules)",
                detail, time.monotonic() - start)
