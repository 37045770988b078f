"""`grade DIR`: a class's submissions judged in parallel on the instructor's machine.

DIR holds one folder per learner. Every (learner, exercise) pair is judged as `judge.py test`
judges it, `--jobs` pairs at a time, each in a slot of its own (grading.py), under the catalog's
limits: a header that hangs, floods or crashes costs its own pair's time only.

OUTDIR gets grades.csv (one row per learner; a column for an exercise's header, and one beside it
for the learner's own tests when the catalog gives them points), grades.json, and for each learner a folder with
each exercise's report (NN-slug.txt) and grade (NN-slug.json). A grade records the hash of the
header it judged: a rerun judges again only the pairs whose header changed, so an interrupted
run resumes where it stopped. After changing the kit's tests, grade into a fresh OUTDIR."""
from __future__ import annotations

import csv
import io
import json
import sys
import time
from pathlib import Path

from .. import ui
from ..core import build
from ..model.catalog import Catalog, Exercise, shown
from ..model.errors import UsageError
from ..model.files import write_atomically
from . import grading
from .grading import ExerciseGrade, Header, Pair, Unjudged


def grade_command(args, catalog: Catalog) -> bool:
    folder: Path = args.folder
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: give the folder that holds one folder per learner")
    out: Path = args.out or build.BUILD_ROOT / "grades"
    learners = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                      and p.resolve() != out.resolve())   # OUTDIR may be inside DIR
    if not learners:
        raise UsageError(f"{folder} holds no learner's folder: put each learner's files in a folder of their own")
    exercises = grading.chosen_exercises(catalog, args.exercises)
    if not exercises:
        raise UsageError("--exercises names no exercise")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    compilers = build.compilers_for(args.compiler)
    start = time.monotonic()
    grades, judged, unchanged = grade_class(catalog, learners, exercises, compilers, args.jobs, out)
    write_tables(out, learners, exercises, grades)
    totals = [sum(grades[(learner.name, ex.name)].total for ex in exercises) for learner in learners]
    most = sum(sum(ex.stage_points()) + ex.test_points for ex in exercises)
    missing = len(grades) - judged - unchanged
    print(f"Graded {len(learners)} learner{'s' if len(learners) != 1 else ''} × {len(exercises)} "
          f"exercise{'s' if len(exercises) != 1 else ''} in {grading.elapsed(time.monotonic() - start)} "
          f"({judged} judged, {unchanged} unchanged since the last run, {missing} with no header to judge): "
          f"mean total {sum(totals) / len(totals):.1f} of {most:g} → {shown(out / 'grades.csv')}")
    flagged = sorted(f"{learner} ({exercise})" for (learner, exercise), g in grades.items() if g.flags)
    if flagged:
        print(ui.paint(f"  Read before you trust their scores: {', '.join(flagged[:6])}"
                       f"{', …' if len(flagged) > 6 else ''}: grades.json says why under `flags`.", "yellow"))
    return True


def grade_class(catalog: Catalog, learners: list[Path], exercises: list[Exercise], compilers: tuple[str, ...],
                jobs: int, out: Path) -> tuple[dict[tuple[str, str], ExerciseGrade], int, int]:
    """Every pair's grade, by (learner, exercise name); how many pairs were judged, and how many
    were unchanged since their saved grade (the others had no header to judge)."""
    grades: dict[tuple[str, str], ExerciseGrade] = {}
    todo: list[Pair] = []
    unchanged = 0
    for learner in learners:
        headers = grading.find_headers(learner, exercises)
        for ex in exercises:
            found = headers[ex.name]
            saved = _saved(out, learner.name, ex, found, compilers)
            if saved is not None:
                grades[(learner.name, ex.name)] = saved
                unchanged += 1
            elif isinstance(found, Unjudged):
                grades[(learner.name, ex.name)] = _keep(out, learner.name, grading.ungraded(ex, found), compilers)
            else:
                todo.append((learner, ex, found))
    todo.sort(key=lambda item: item[1].id)   # a slot stays on one exercise as long as it can
    # A bar on a terminal; one line per graded pair elsewhere (a log).
    with ui.ProgressLine("grading", log=sys.stdout) as progress:
        if todo:
            progress.show(0, len(todo))
        pairs = grading.judge_pairs(catalog, todo, compilers, jobs)
        for count, ((learner, ex, _), grade) in enumerate(pairs, 1):
            grade = _keep(out, learner.name, grade, compilers)
            grades[(learner.name, ex.name)] = grade
            said = f"{learner.name} · {ex.name}: {grade.score:g}/{grade.max_score:g} ({grade.message})"
            if grade.tests:
                said += f"; tests {round(grade.tests.earned, 2):g}/{grade.tests.points:g} ({grade.tests.message})"
            progress.show(count, len(todo), f"  {said[:60]}", plain=said)
    return grades, len(todo), unchanged


def _grade_file(out: Path, learner: str, exercise: str) -> Path:
    return out / learner / f"{exercise}.json"


def _saved(out: Path, learner: str, exercise: Exercise, found: Header | Unjudged,
           compilers: tuple[str, ...]) -> ExerciseGrade | None:
    """The saved grade of the pair when it judged this very header with these compilers."""
    if isinstance(found, Unjudged):
        return None
    try:
        saved = json.loads(_grade_file(out, learner, exercise.name).read_text(encoding="utf-8"))
        grade = ExerciseGrade.from_json(saved["grade"])
        tests = grade.tests.digest if grade.tests else ""
        if saved.get("compilers") == list(compilers) and grade.digest == found.digest and \
                bool(grade.tests) == bool(exercise.test_points) and tests == grading.tests_digest(exercise, found):
            return grade
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _keep(out: Path, learner: str, grade: ExerciseGrade, compilers: tuple[str, ...]) -> ExerciseGrade:
    """Writes the pair's report and grade as soon as it is known, so that an interrupted run
    keeps it."""
    folder = out / learner
    write_atomically(folder / f"{grade.exercise}.txt", (grade.report.rstrip("\n") + "\n").encode())
    record = {"compilers": list(compilers), "grade": grade.to_json()}
    write_atomically(_grade_file(out, learner, grade.exercise), json.dumps(record, indent=1).encode())
    return grade


def write_tables(out: Path, learners: list[Path], exercises: list[Exercise],
                 grades: dict[tuple[str, str], ExerciseGrade]) -> None:
    text = io.StringIO()
    table = csv.writer(text, lineterminator="\n")
    # An exercise whose tests the catalog grades has a column for them, beside its header's.
    tested = [ex.name for ex in exercises if ex.test_points]
    table.writerow(["student", *(name for ex in exercises for name in
                                 ([ex.name, f"{ex.name} tests"] if ex.name in tested else [ex.name])), "total"])
    summary = []
    for learner in learners:
        row = [grades[(learner.name, ex.name)] for ex in exercises]
        total = sum(g.total for g in row)
        table.writerow([learner.name, *(cell for g in row for cell in
                                        ([_number(g.score), _number(g.tests.earned if g.tests else 0.0)]
                                         if g.exercise in tested else [_number(g.score)])), _number(total)])
        summary.append({"student": learner.name, "total": round(total, 2),
                        "exercises": {g.exercise: {"score": round(g.score, 2), "max_score": round(g.max_score, 2),
                                                   "status": g.status, "message": g.message,
                                                   "stages_passed": [s.number for s in g.stages if s.passed],
                                                   "flags": g.flags,
                                                   "tests": _tests_summary(g),
                                                   "report": f"{learner.name}/{g.exercise}.txt"} for g in row}})
    write_atomically(out / "grades.csv", text.getvalue().encode())
    document = {"exercises": [{"name": ex.name, "title": ex.title, "header": ex.header,
                               "max_score": round(sum(ex.stage_points()), 2),
                               "stage_points": [round(p, 2) for p in ex.stage_points()],
                               "test_points": round(ex.test_points, 2)} for ex in exercises],
                "students": summary}
    write_atomically(out / "grades.json", (json.dumps(document, indent=1) + "\n").encode())


def _tests_summary(grade: ExerciseGrade) -> dict | None:
    tests = grade.tests
    if tests is None:
        return None
    return {"score": round(tests.earned, 2), "max_score": round(tests.points, 2), "valid": tests.valid,
            "chaffs_caught": tests.caught, "chaffs_total": tests.total, "message": tests.message,
            "source": tests.source or None}


def _number(score: float) -> str:
    return f"{round(score, 2):g}"
