"""`autograder gradescope`: the zip a Gradescope programming assignment is configured with, and
the grader its `run_autograder` starts for each submission.

The zip holds Gradescope's two entry points at its root (judge/autograders/gradescope/setup.sh
and run_autograder, with the not-your-fault.txt run_autograder reads), the kit under `alloclab/`
(platforms.kit_files), and `autograder.json`, which names the exercises graded. Gradescope
unpacks it into /autograder/source, runs setup.sh once when it builds the image, then
run_autograder once per submission.

`run(root)` grades the headers found in `root/submission` as `grade` does (grading.py, the
exercises judged as many at a time as there are cores) and always writes
`root/results/results.json` in Gradescope's format: one test per stage of each exercise, the
judge's report of that stage in Markdown, and a leaderboard of each passed exercise's benchmark
time, yours ÷ reference. When the grader itself fails, the file still appears, scoring 0 and
saying that the fault is not the learner's, so that staff can regrade once it is mended.
`root` is /autograder, or ALLOCLAB_GRADESCOPE_ROOT when set (how the judge's tests run it;
ALLOCLAB_AUTOGRADER_ROOT, its former name, still works). What both platforms share is in
platforms.py, the leaderboard in leaderboard.py, results.json in gradescope_results.py."""
from __future__ import annotations

import json
import os
import stat
import sys
import time
import zipfile
from pathlib import Path

from ..core import build
from ..model import catalog as cat
from ..model.catalog import ROOT, Catalog, shown
from ..model.errors import UsageError
from ..model.files import write_atomically
from . import grading, leaderboard, platforms
from .gradescope_results import TESTS_TAG, failed, plain, results_json
from .platforms import GraderFailure

ROOT_VARIABLE = "ALLOCLAB_GRADESCOPE_ROOT"
ROOT_ALIAS = "ALLOCLAB_AUTOGRADER_ROOT"
DEFAULT_ROOT = Path("/autograder")
PLATFORM = platforms.AUTOGRADERS / "gradescope"
DEFAULT_OUT = build.BUILD_ROOT / "autograder" / "gradescope.zip"
KIT = "alloclab"                 # the kit's folder in the zip: /autograder/source/alloclab
SETTINGS = "autograder.json"     # at the zip's root: /autograder/source/autograder.json
COMPILERS = ("clang",)           # what `grade` and `test` judge with by default
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every entry's date: the same kit gives the same zip


# ---- the zip ----------------------------------------------------------------------------

def package(args, catalog: Catalog) -> bool:
    exercises = grading.chosen_exercises(catalog, args.exercises)
    if not exercises:
        raise UsageError("--exercises names no exercise")
    out = Path(args.out) if args.out else DEFAULT_OUT
    if out.suffix != ".zip":
        raise UsageError(f"{out}: Gradescope takes a .zip file")
    files = platforms.kit_files()
    settings = {"exercises": [ex.name for ex in exercises], "compilers": list(COMPILERS)}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            entry_points = (("setup.sh", 0o755), ("run_autograder", 0o755), (platforms.NOT_YOUR_FAULT_FILE, 0o644))
            for name, mode in entry_points:
                _add(archive, name, (PLATFORM / name).read_bytes(), mode)
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
          f"the kit's {len(files)} files in {KIT}/, grading exercise{'s' if len(exercises) > 1 else ''} "
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


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _shown(path: Path) -> str:
    return shown(path) if path.is_absolute() else str(path)


# ---- grading one submission ------------------------------------------------------------

def autograder_root() -> Path:
    return platforms.root_of(ROOT_VARIABLE, ROOT_ALIAS, DEFAULT_ROOT)


def main(argv: list[str]) -> int:
    """What run_autograder starts: `ROOT` grades ROOT/submission into ROOT/results/results.json
    (ROOT: $ALLOCLAB_GRADESCOPE_ROOT or /autograder). What setup.sh starts: `--references ROOT
    SETTINGS` grades the references of the exercises SETTINGS names as a submission in ROOT,
    which builds every tree a submission reuses; 0 only when they score full marks."""
    if argv[:1] == ["--references"] and len(argv) == 3:
        return references(Path(argv[1]), Path(argv[2]))
    return run(Path(argv[0]) if argv else autograder_root())


def references(root: Path, recorded: Path) -> int:
    """Grades the references as one submission in `root` (a folder of its own, not /autograder),
    after warming every slot a submission may take with them (platforms.warm)."""
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / SETTINGS).write_bytes(recorded.read_bytes())
    try:
        chosen = settings(root)
        catalog, _ = platforms.fitted(cat.load())
        exercises = grading.chosen_exercises(catalog, ",".join(chosen["exercises"]))
        compilers = platforms.compilers_of(chosen["compilers"])
    except (UsageError, GraderFailure) as err:
        print(f"the references cannot be graded: {err}")
        return 1
    for exercise in exercises:
        folder = root / "submission" / exercise.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / exercise.header).write_bytes(exercise.solution_file.read_bytes())
        os.chmod(folder / exercise.header, 0o644)
    slots = [f"grade{i}" for i in range(platforms.cores())]   # the names grading.judge_pairs's slots take
    print(f"Building every exercise in {len(slots)} slot{'s' if len(slots) > 1 else ''}…", flush=True)
    wrong = [f"{grade.exercise} in slot {slot}: {grade.message}"
             for slot, grade in platforms.warm(catalog, exercises, compilers, slots) if grade.score != grade.max_score]
    if wrong:
        print("The references do not score full marks, so this image would grade wrongly:\n" + "\n".join(wrong))
        return 1
    if run(root) != 0:
        return 1
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    # The references are headers without tests of their own: their stages must score full marks.
    stages = [t for t in results["tests"] if TESTS_TAG not in t.get("tags", [])]
    full = round(sum(t["max_score"] for t in stages), 4)
    if not stages or round(sum(t["score"] for t in stages), 4) != full:
        print(f"The references score {results['score']:g} of {full:g}, not full marks: this image would grade "
              f"wrongly.\n{results['output']}")
        return 1
    print(f"The references score {full:g} of {full:g}: the build trees every submission reuses are ready.")
    return 0


def run(root: Path) -> int:
    """Grades one submission; writes root/results/results.json whatever happens. 0 when it was
    written, 1 when even that failed (run_autograder then writes its own)."""
    start = time.monotonic()
    target = root / "results" / "results.json"

    def failure(err: BaseException) -> dict:
        if not platforms.expected(err):   # Gradescope's log of the run is the staff's, not the learner's
            print(f"The grader failed; for the course staff, where:\n{platforms.trace(err)}", end="", flush=True)
        return failed(platforms.reason(err), time.monotonic() - start)

    def write(results: dict) -> None:
        write_atomically(target, (json.dumps(results, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), 0o644)

    try:
        results = platforms.results_always(lambda: grade_submission(root, start), failure, write)
    except OSError as err:
        print(f"cannot write {target}: {err.strerror or err}", flush=True)
        return 1
    print(f"{target}: {results['score']:g} points. {plain(results['output'])}", flush=True)
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
    catalog, jobs = platforms.fitted(cat.load())
    exercises = grading.chosen_exercises(catalog, ",".join(chosen["exercises"]))
    compilers = platforms.compilers_of(chosen["compilers"])
    print(f"Grading {', '.join(ex.name for ex in exercises)}: {jobs} at a time, a test program stopped at "
          f"{catalog.limits.memory_mb} MB.", flush=True)
    grades = grading.grade_learner(catalog, submission, exercises, compilers, jobs)
    for grade in grades:   # Gradescope's log of the run is the staff's: what they should read first
        for flag in grade.flags:
            print(f"For the staff, {grade.exercise} ({grade.source or grade.header}): {flag}", flush=True)
    board, notes = leaderboard.board(catalog, exercises, grades, submission, compilers[0])
    return results_json(exercises, grades, time.monotonic() - start, board, notes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
