"""`autograder gradescope`: the zip a Gradescope programming assignment is configured with, and
the grader its `run_autograder` starts for each submission.

The zip holds Gradescope's two entry points at its root (judge/autograders/gradescope/setup.sh
and run_autograder), the kit as git tracks it under `alloclab/`, and `autograder.json`, which
names the exercises graded. Gradescope unpacks it into /autograder/source, runs setup.sh once
when it builds the image, then run_autograder once per submission.

`run(root)` grades the headers found in `root/submission` as `grade` does (grading.py, the
exercises judged as many at a time as there are cores) and always writes
`root/results/results.json` in Gradescope's format: one test per stage of each exercise, the
judge's report of that stage in Markdown, and a leaderboard of each passed exercise's benchmark
time, yours ÷ reference. When the grader itself fails, the file still appears, scoring 0 and
saying that the fault is not the learner's, so that staff can regrade once it is mended.
`root` is /autograder, or ALLOCLAB_AUTOGRADER_ROOT when set (how the judge's tests run it)."""
from __future__ import annotations

import dataclasses
import json
import os
import statistics
import stat
import subprocess
import sys
import time
import traceback
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core import build
from ..learner import bench
from ..model import catalog as cat
from ..model.catalog import ROOT, Catalog, Exercise, shown
from ..model.errors import UsageError
from ..model.files import write_atomically
from . import grading

ROOT_VARIABLE = "ALLOCLAB_AUTOGRADER_ROOT"
DEFAULT_ROOT = Path("/autograder")
PLATFORM = ROOT / "judge" / "autograders" / "gradescope"
DEFAULT_OUT = build.BUILD_ROOT / "autograder" / "gradescope.zip"
KIT = "alloclab"                 # the kit's folder in the zip: /autograder/source/alloclab
SETTINGS = "autograder.json"     # at the zip's root: /autograder/source/autograder.json
COMPILERS = ("clang",)           # what `grade` and `test` judge with by default
# The leaderboard's benchmarks run briefly: 3 repetitions of 0.02 s each, where `bench` runs 5
# of 0.04 s. One repetition was not enough: on one core, the references against themselves gave
# 1.57 for 01 and 45763 for 06, whose staging workload is two threads handing steps over. A
# figure whose repetitions moved by more than NOISY (bench's spread: the median distance of a
# repetition from the median, as a share of it) is left off the leaderboard, with a note.
# Only single-threaded rows count: a row of two threads handing work over (06's staging, 02's
# shared pool, 05's false sharing; Google Benchmark names them .../real_time or .../threads:N)
# times the machine's scheduler as much as the allocator, and on Gradescope's half a CPU the
# second thread may wait a whole time slice.
BENCH_MIN_TIME = 0.02
BENCH_REPETITIONS = 3
NOISY = 0.25
SINGLE_THREADED = "-(real_time|threads:)"   # Google Benchmark's filter: a leading - excludes what matches
OUTPUT_CHARS = 20_000            # the most of one report a test's output shows (head and tail)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every entry's date: the same kit gives the same zip
NOT_YOUR_FAULT = ("This is not a fault of your code: the grader could not do its work. The course staff "
                  "can see what went wrong and will grade your submission again once it is mended.")


# ---- the zip ----------------------------------------------------------------------------

def package(args, catalog: Catalog) -> bool:
    exercises = grading.chosen_exercises(catalog, args.exercises)
    if not exercises:
        raise UsageError("--exercises names no exercise")
    out = Path(args.out) if args.out else DEFAULT_OUT
    if out.suffix != ".zip":
        raise UsageError(f"{out}: Gradescope takes a .zip file")
    files = tracked_files()
    settings = {"exercises": [ex.name for ex in exercises], "compilers": list(COMPILERS)}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in ("setup.sh", "run_autograder"):
                _add(archive, name, (PLATFORM / name).read_bytes(), 0o755)
            _add(archive, SETTINGS, (json.dumps(settings, indent=2) + "\n").encode(), 0o644)
            for relative in files:
                path = ROOT / relative
                mode = 0o755 if path.stat().st_mode & stat.S_IXUSR else 0o644
                _add(archive, f"{KIT}/{relative}", path.read_bytes(), mode)
        os.replace(partial, out)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise UsageError(f"cannot write {out}: {err.strerror or err}") from None
    listed = ", ".join(f"{ex.id:02d}" for ex in exercises)
    points = sum(sum(ex.stage_points()) for ex in exercises)
    print(f"Wrote {_shown(out)} ({out.stat().st_size / 1e6:.1f} MB): setup.sh and run_autograder at its root, "
          f"the kit's {len(files)} tracked files in {KIT}/, grading exercise{'s' if len(exercises) > 1 else ''} "
          f"{listed} ({sum(len(ex.stages) for ex in exercises)} tests, one per stage, "
          f"{points:g} points) with {', '.join(cat.program(c) for c in COMPILERS)}.")
    print("To use it on Gradescope: create a Programming Assignment. In its Autograder Settings give it 2 CPUs, "
          "2 GB of memory and a 20-minute timeout (the seven references took 146 s with 2 cores and under 600 MB "
          "where the kit is developed; a header whose every test program hangs takes each one's time limit). "
          "Under Configure Autograder choose \"Zip file upload\", "
          "the base image Ubuntu 22.04 or 24.04, upload the zip and press \"Update Autograder\": setup.sh installs "
          "the toolchain and builds once what every submission reuses. To show the benchmark leaderboard, enable "
          "Leaderboard in the assignment's settings. Learners hand in their headers (arena.hpp, ...), alone or "
          "in their folders; each is found by its file name.")
    return True


def tracked_files() -> list[str]:
    """The kit's files as git tracks them (so never build/ or .git/), those present on disk."""
    try:
        listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise UsageError(f"the zip holds the files git tracks, and git could not list them: {err}") from None
    if listing.returncode != 0:
        raise UsageError("the zip holds the files git tracks, and this kit is not a git checkout: "
                         + listing.stderr.decode(errors="replace").strip())
    names = [n for n in listing.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return sorted(n for n in names if (ROOT / n).is_file() and not (ROOT / n).is_symlink())


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _shown(path: Path) -> str:
    return shown(path) if path.is_absolute() else str(path)


# ---- grading one submission ------------------------------------------------------------

class GraderFailure(Exception):
    """The grader cannot grade, through no fault of the submission."""


def autograder_root() -> Path:
    return Path(os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT)


def main(argv: list[str]) -> int:
    """What run_autograder starts: `ROOT` grades ROOT/submission into ROOT/results/results.json
    (ROOT: $ALLOCLAB_AUTOGRADER_ROOT or /autograder). What setup.sh starts: `--references ROOT
    SETTINGS` grades the references of the exercises SETTINGS names as a submission in ROOT,
    which builds every tree a submission reuses; 0 only when they score full marks."""
    if argv[:1] == ["--references"] and len(argv) == 3:
        return references(Path(argv[1]), Path(argv[2]))
    return run(Path(argv[0]) if argv else autograder_root())


def references(root: Path, recorded: Path) -> int:
    """Grades the references as one submission in `root` (a folder of its own, not /autograder),
    after judging each of them once in every slot a submission may take: whichever slot an
    exercise lands in then holds its build, its precompiled header and its reference listing."""
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / SETTINGS).write_bytes(recorded.read_bytes())
    try:
        chosen = settings(root)
        catalog, _ = fitted(cat.load())
        exercises = grading.chosen_exercises(catalog, ",".join(chosen["exercises"]))
        compilers = tuple(c for choice in chosen["compilers"] for c in build.compilers_for(choice))
    except (UsageError, GraderFailure) as err:
        print(f"the references cannot be graded: {err}")
        return 1
    for exercise in exercises:
        folder = root / "submission" / exercise.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / exercise.header).write_bytes(exercise.solution_file.read_bytes())
        os.chmod(folder / exercise.header, 0o644)
    slots = [f"grade{i}" for i in range(cores())]   # the names grading.grade_learner's slots take
    print(f"Building every exercise in {len(slots)} slot{'s' if len(slots) > 1 else ''}…", flush=True)

    def warm(slot: str) -> list[str]:
        wrong = []
        for exercise in exercises:
            header = root / "submission" / exercise.name / exercise.header
            grade = grading.grade_header(catalog, exercise, header, compilers, slot, root / "submission")
            if grade.score != grade.max_score:
                wrong.append(f"{exercise.name} in slot {slot}: {grade.message}")
        return wrong

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        wrong = [w for found in pool.map(warm, slots) for w in found]
    if wrong:
        print("The references do not score full marks, so this image would grade wrongly:\n" + "\n".join(wrong))
        return 1
    if run(root) != 0:
        return 1
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    full = round(sum(t["max_score"] for t in results["tests"]), 4)
    if not results["tests"] or results["score"] != full:
        print(f"The references score {results['score']:g} of {full:g}, not full marks: this image would grade "
              f"wrongly.\n{results['output']}")
        return 1
    print(f"The references score {full:g} of {full:g}: the build trees every submission reuses are ready.")
    return 0


def run(root: Path) -> int:
    """Grades one submission; writes root/results/results.json whatever happens. 0 when it was
    written, 1 when even that failed (run_autograder then writes its own)."""
    start = time.monotonic()
    try:
        results = grade_submission(root, start)
    except BaseException as err:  # noqa: BLE001 - whatever broke, the learner gets a results.json
        if isinstance(err, (GraderFailure, UsageError)):
            why = str(err)
        else:
            why = f"{type(err).__name__}: {err}"
            print("The grader failed; for the course staff, where:", flush=True)
            traceback.print_exc(file=sys.stdout)
        results = failed(why, time.monotonic() - start)
    target = root / "results" / "results.json"
    try:
        write_atomically(target, (json.dumps(results, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), 0o644)
    except OSError as err:
        print(f"cannot write {target}: {err.strerror or err}", flush=True)
        return 1
    print(f"{target}: {results['score']:g} points. {_plain(results['output'])}", flush=True)
    return 0


def settings(root: Path) -> dict:
    """What the zip recorded (root/source/autograder.json): the exercises graded and the compilers;
    every exercise with clang when there is no such file."""
    path = root / "source" / SETTINGS
    if not path.exists():
        return {"exercises": ["all"], "compilers": list(COMPILERS)}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise GraderFailure(f"{path} cannot be read: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), list):
        raise GraderFailure(f"{path} does not list the exercises to grade")
    return {"exercises": data["exercises"], "compilers": data.get("compilers") or list(COMPILERS)}


def grade_submission(root: Path, start: float) -> dict:
    submission = root / "submission"
    if not submission.is_dir():
        raise GraderFailure(f"there is no submission folder {submission}: the platform did not hand the "
                            "submission over")
    chosen = settings(root)
    catalog, jobs = fitted(cat.load())
    exercises = grading.chosen_exercises(catalog, ",".join(chosen["exercises"]))
    compilers = tuple(c for choice in chosen["compilers"] for c in build.compilers_for(choice))
    print(f"Grading {', '.join(ex.name for ex in exercises)}: {jobs} at a time, a test program stopped at "
          f"{catalog.limits.memory_mb} MB.", flush=True)
    grades = grading.grade_learner(catalog, submission, exercises, compilers, jobs)
    for grade in grades:   # Gradescope's log of the run is the staff's: what they should read first
        for flag in getattr(grade, "flags", []):
            print(f"For the staff, {grade.exercise} ({grade.source or grade.header}): {flag}", flush=True)
    leaderboard, notes = board(catalog, exercises, grades, submission, compilers[0])
    return results_json(grades, time.monotonic() - start, leaderboard, notes)


# What one job needs beside the test program it runs: the largest process of a whole grading
# run was a compiler of 372 MB (measured with `/usr/bin/time -v`, all seven references).
COMPILER_MB = 400
JOB_MB = 1024      # a job per this much of the container's memory, at most one per core


def container_memory_mb() -> int | None:
    """The container's memory limit in MB (its cgroup's), or None when it has none."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:
            return int(text) >> 20
        return None
    return None


def fitted(catalog: Catalog) -> tuple[Catalog, int]:
    """The catalog with its memory limit fitted to the container, and the jobs to run at once.
    Gradescope kills the whole container when it runs out of memory, and then no results.json is
    read at all: so no test may reach what is left of the container's memory once the compilers
    of the other jobs have had theirs, and the judge stops it first, with a report that names
    the limit. Without a container limit, the catalog's limits and one job per core."""
    jobs = cores()
    memory = container_memory_mb()
    if memory is None:
        return catalog, jobs
    jobs = max(1, min(jobs, memory // JOB_MB))
    test_mb = max(256, memory // jobs - COMPILER_MB)
    if test_mb >= catalog.limits.memory_mb:
        return catalog, jobs
    return dataclasses.replace(catalog, limits=dataclasses.replace(catalog.limits, memory_mb=test_mb)), jobs


def cores() -> int:
    """The cores this container may use: its CPU affinity, bounded by its cgroup's CPU quota
    (Gradescope gives an autograder a share of a larger machine, whose every core
    os.cpu_count() counts)."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = None
    try:   # cgroup v2: "max 100000" or "150000 100000"
        limit, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if limit != "max":
            quota = int(limit) / int(period)
    except (OSError, ValueError):
        try:   # cgroup v1
            limit = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
            period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
            if limit > 0 and period > 0:
                quota = limit / period
        except (OSError, ValueError):
            pass
    if quota is not None:
        count = min(count, max(1, round(quota)))
    return max(1, count)


def board(catalog: Catalog, exercises: list[Exercise], grades: list, submission: Path,
          compiler: str) -> tuple[list[dict], list[str]]:
    """The leaderboard: for each exercise that passed every stage and has benchmarks, the median
    over its single-threaded workloads of the exercise's allocator's time, your header ÷ the
    reference. With the notes on the figures that could not be measured."""
    entries, notes = [], []
    headers = None
    for exercise, grade in zip(exercises, grades):
        if grade.score < grade.max_score or grade.max_score == 0 or not exercise.bench_dir.is_dir() \
                or not exercise.bench_subject:
            continue
        headers = headers or grading.find_headers(submission, exercises)
        header = headers.get(exercise.name)
        if not isinstance(header, Path):
            continue
        ratio, problem = bench_ratio(catalog, exercise, header, compiler)
        if ratio is None:
            notes.append(f"{exercise.id:02d}: the leaderboard's benchmark could not be measured ({problem})")
            continue
        entries.append({"name": f"{exercise.id:02d} {exercise.slug}: time, yours ÷ reference",
                        "value": round(ratio, 3), "order": "asc"})
    return entries, notes


def bench_ratio(catalog: Catalog, exercise: Exercise, header: Path, compiler: str) -> tuple[float | None, str]:
    """The median over the exercise's single-threaded workloads of yours ÷ reference on the
    exercise's own rows, each benchmark run 3 times, briefly. (None, why) when it cannot be measured."""
    mine, problem = bench.measure(catalog, exercise, build.Impl("source", header.resolve()), compiler,
                                  BENCH_MIN_TIME, SINGLE_THREADED, BENCH_REPETITIONS)
    if mine is None:
        return None, f"your header: {problem}"
    ref, problem = bench.measure(catalog, exercise, build.Impl("solutions"), compiler, BENCH_MIN_TIME,
                                 SINGLE_THREADED, BENCH_REPETITIONS)
    if ref is None:
        return None, f"the reference: {problem}"
    ratios = []
    for workload, rows in mine.items():
        for allocator, row in rows.items():
            if not allocator.startswith(exercise.bench_subject):
                continue
            other = ref.get(workload, {}).get(allocator)
            spread = max((r or {}).get("spread", 0.0) for r in (row, other))
            if spread > NOISY:
                return None, (f"{workload}/{allocator} moved by ±{spread:.0%} from one repetition to the next, too "
                              "much to rank")
            value = bench.yours_over_reference(row, other)
            if value is not None:
                ratios.append(value)
    if not ratios:
        return None, f"no benchmark of {exercise.bench_subject} gave a time"
    return statistics.median(ratios), ""


# ---- results.json ---------------------------------------------------------------------------

def results_json(grades: list, seconds: float, leaderboard: list[dict] | None = None,
                 notes: list[str] | None = None) -> dict:
    """Gradescope's results.json for these grades: a test per stage, the score their sum."""
    tests = [stage_test(grade, stage) for grade in grades for stage in grade.stages]
    score = round(sum(t["score"] for t in tests), 4)
    max_score = round(sum(t["max_score"] for t in tests), 4)
    return {
        "score": score,
        "execution_time": max(0, round(seconds)),
        "output": summary(grades, score, max_score, leaderboard or [], notes or []),
        "output_format": "md",
        "test_output_format": "md",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "leaderboard": leaderboard or [],
        "extra_data": {"alloclab": [{"exercise": g.exercise, "status": g.status, "message": g.message,
                                     "score": g.score, "max_score": g.max_score, "digest": g.digest,
                                     "seconds": round(g.seconds, 1), "flags": list(getattr(g, "flags", []))}
                                    for g in grades]},
    }


def stage_test(grade, stage) -> dict:
    number = int(grade.exercise[:2])
    return {
        "name": f"{number:02d} · {grade.title} · stage {stage.number}: {stage.title}",
        "number": f"{number}.{stage.number}",
        "score": round(stage.earned, 4),
        "max_score": round(stage.points, 4),
        "status": "passed" if stage.passed else "failed",
        "output": stage_output(grade, stage),
        "output_format": "md",
        "visibility": "visible",
    }


def stage_output(grade, stage) -> str:
    """The stage's part of the judge's report, in Markdown: the verdict in a sentence, then the
    report of the stage (or the first compiler error) as the terminal shows it, in a code block."""
    if grade.status != grading.GRADED:
        return f"**Not graded:** {_md_text(grade.message)}"
    if grade.compile_error:
        return (f"**Your {grade.header} does not compile**, so no stage can pass. The first error:\n\n"
                f"{code_block(grade.compile_error)}")
    verdict = "passes" if stage.passed else "fails"
    return f"Stage {stage.number} ({_md_text(stage.title)}) {verdict}.\n\n{code_block(stage.report or grade.message)}"


def summary(grades: list, score: float, max_score: float, leaderboard: list[dict], notes: list[str]) -> str:
    lines = [f"**{score:g} of {max_score:g} points.** Each exercise is judged as `python3 judge/judge.py test N` "
             "judges it on your machine; each stage below shows its part of the report.", ""]
    for g in grades:
        lines.append(f"- {int(g.exercise[:2]):02d} {_md_cell(g.title)}: {g.score:g} of {g.max_score:g} points, "
                     f"{_md_cell(g.message)}")
    if leaderboard:
        lines += ["", "The leaderboard (your allocator's benchmark time ÷ the reference's, the median over the "
                  "exercise's single-threaded workloads; below 1 is faster; 3 short runs each on a shared machine, so differences of 10 % "
                  "or more can be noise):"]
        lines += [f"- {e['name'].split(':')[0]}: {e['value']:.2f}" for e in leaderboard]
    lines += ["", *(f"- {_md_text(n)}" for n in notes)] if notes else []
    return "\n".join(lines)


def failed(why: str, seconds: float) -> dict:
    """The results.json of a grader that could not grade: 0 points, and why."""
    return {
        "score": 0,
        "execution_time": max(0, round(seconds)),
        "output": f"**The grader failed:** {_md_text(why)}\n\n{NOT_YOUR_FAULT}",
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
        "leaderboard": [],
        "extra_data": {"alloclab": {"grader_failed": why}},
    }


def code_block(text: str) -> str:
    """`text` in a fenced code block whose fence no run of backticks inside it can close."""
    text = clipped(text.rstrip("\n"))
    run, fence = 0, 3
    for ch in text:
        run = run + 1 if ch == "`" else 0
        fence = max(fence, run + 1)
    return f"{'`' * fence}text\n{text}\n{'`' * fence}"


def clipped(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def _md_text(text: str) -> str:
    """Plain text set in Markdown: the characters that would format it escaped."""
    return "".join("\\" + ch if ch in "\\`*_[]<>#|" else ch for ch in text)


def _md_cell(text: str) -> str:
    return _md_text(" ".join(text.split()))


def _plain(markdown: str) -> str:
    return markdown.split("\n", 1)[0].replace("**", "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
