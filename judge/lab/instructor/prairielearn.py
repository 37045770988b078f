"""`autograder prairielearn`: AllocLab as an external grader of PrairieLearn.

`package` writes a folder a course takes to its PrairieLearn course:
    image/                 the grading image's build context
      Dockerfile           FROM the development container's base, with the kit's toolchain, the kit
                           at /opt/alloclab, an unprivileged user the learner's code runs as, and
                           the build trees warmed by grading each chosen exercise's reference
      alloclab/            the kit (platforms.kit_files), its entry point among them:
                           judge/autograders/prairielearn/run
    questions/AllocLab/NN-slug/
      info.json            external grading on the image, the entry point naming the exercise,
                           a timeout fitted to the exercise, networking off
      question.html        the statement, the upload of the exercise's header, the results
      clientFilesQuestion/ the chapter and its figures, which the statement links
    README.md              the steps to take it to a course

`run` is what the entry point runs in the grading container: it grades the header PrairieLearn
put in $ROOT/student (`ROOT` is /grade, or ALLOCLAB_PRAIRIELEARN_ROOT; ALLOCLAB_GRADE_ROOT, its
former name, still works) exactly as `judge.py test`
judges it, through grading.py, and always writes $ROOT/results/results.json, in the format
judge/schemas/prairielearn-results.schema.json describes: one test per stage, worth the stage's
points. Which exercise a question grades is the entry point's argument, written in the
question's info.json: the one file a course edits per question, so no server.py is needed and a
question cannot disagree with itself. Without an argument every exercise whose header was handed
in is graded. What both platforms share is in platforms.py."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import uuid
from html import escape
from pathlib import Path

from ..core import build
from ..model import catalog as cat
from ..model.catalog import ROOT, Catalog, Exercise, shown
from ..model.errors import UsageError
from ..model.files import write_atomically
from ..model.results import StageStatus, TestStatus
from . import grading, platforms
from .grading import ExerciseGrade, GradeStatus, Header, StageGrade, Unjudged

ROOT_VARIABLE = "ALLOCLAB_PRAIRIELEARN_ROOT"
ROOT_ALIAS = "ALLOCLAB_GRADE_ROOT"
DEFAULT_ROOT = Path("/grade")
IMAGE_ENV = "ALLOCLAB_PRAIRIELEARN_IMAGE"      # the image's name in the course's registry
IMAGE_NAME = "alloclab/prairielearn-grader"     # the default name; the tag is the kit's digest
KIT = "/opt/alloclab"                           # where the image holds the kit
LEARNER_USER = "alloclab-learner"               # the unprivileged user the learner's code runs as
FILES = platforms.AUTOGRADERS / "prairielearn"
ENTRY_POINT = "judge/autograders/prairielearn/run"
TOPIC = "AllocLab"
SLOT = "prairielearn"         # the build trees the grader judges in (ALLOCLAB_SLOT, when set, names others)
COMPILERS = ("clang",)                          # as `judge.py test` judges by default
MARKER = ".alloclab-prairielearn"               # marks a folder `package` wrote, so it may rewrite it
# PrairieLearn takes results.json up to 1 MB; each test's output and the whole report are cut to
# these many characters (head and tail), which keeps any exercise's results far below it.
TEST_OUTPUT_CHARS = 24_000
REPORT_CHARS = 96_000
RESULTS_BYTES = 1_000_000
# The grading job's time limit: a warm build of the learner's tests and up to three runs of the
# test time limit (a hang, then the stage again without the test that hung) per configuration,
# and the judge's own start. PrairieLearn allows at most 600 seconds.
BUILD_ALLOWANCE_SECONDS = 90
START_SECONDS = 30
LONGEST_TIMEOUT = 600
NOT_YOUR_FAULT = platforms.not_your_fault("prairielearn")


# ---------------------------------------------------------------------------------------------
# package: the folder a course copies


def package(args, catalog: Catalog) -> bool:
    exercises = grading.chosen_exercises(catalog, args.exercises)
    if not exercises:
        raise UsageError("--exercises names no exercise")
    out: Path = args.out or build.BUILD_ROOT / "autograder" / "prairielearn"
    image = args.image or os.environ.get(IMAGE_ENV, "")
    tag = write(out, catalog, exercises, image)
    print(f"Wrote {shown(out)}: {len(exercises)} question{'s' if len(exercises) != 1 else ''} "
          f"({', '.join(ex.name for ex in exercises)}) graded by the image {tag}")
    print(f"  build and push it: docker build --platform linux/amd64 -t {tag} {shown(out / 'image')} "
          f"&& docker push {tag}")
    print(f"  then copy {shown(out / 'questions')}/ into your course's questions/ and sync the image "
          f"({shown(out / 'README.md')} says each step)")
    if not image:
        print(f"  First name the image in your registry with --image (or {IMAGE_ENV}): {IMAGE_NAME} is a placeholder "
              "name you cannot push to.")
    return True


def write(out: Path, catalog: Catalog, exercises: list[Exercise], image: str = "") -> str:
    """Writes the folder; returns the image's full name (name:tag) its questions use."""
    _clear(out)
    kit_files = platforms.kit_files()
    kit = out / "image" / "alloclab"
    for relative in kit_files:
        target = kit / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    tag = _image_tag(image, kit, kit_files)
    _write_dockerfile(out / "image" / "Dockerfile", exercises)
    for ex in exercises:
        _write_question(out / "questions" / TOPIC / ex.name, ex, tag, catalog)
    readme = (FILES / "README.md.in").read_text(encoding="utf-8")
    (out / "README.md").write_text(_fill(readme, image=tag, exercises=", ".join(ex.name for ex in exercises)),
                                   encoding="utf-8")
    (out / MARKER).write_text("written by `judge.py autograder prairielearn`; it rewrites this folder whole\n",
                              encoding="utf-8")
    return tag


def _clear(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"{out} is a file: give a folder to write the autograder into")
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise UsageError(f"{out} is not empty and was not written by `autograder prairielearn`: give an empty "
                             "or new folder, so nothing of yours is overwritten")
        shutil.rmtree(out)
    out.mkdir(parents=True)


def _image_tag(image: str, kit: Path, files: list[str]) -> str:
    """The image's name with a tag: the one given, or the kit's digest, so that a changed kit is
    a new tag PrairieLearn pulls, and an unchanged one keeps its tag."""
    if image and ":" in image.rsplit("/", 1)[-1]:
        return image
    digest = hashlib.sha256()
    for relative in files:
        digest.update(relative.encode() + b"\0" + (kit / relative).read_bytes() + b"\0")
    return f"{image or IMAGE_NAME}:{digest.hexdigest()[:12]}"


def base_image() -> str:
    """The image the development container is built FROM: the grading image starts from it."""
    text = (ROOT / ".devcontainer" / "Dockerfile").read_text(encoding="utf-8")
    found = re.search(r"^FROM\s+(\S+)", text, re.M)
    if found is None:
        raise UsageError(".devcontainer/Dockerfile has no FROM line to build the grading image from")
    return found.group(1)


def _write_dockerfile(path: Path, exercises: list[Exercise]) -> None:
    template = (FILES / "Dockerfile.in").read_text(encoding="utf-8")
    path.write_text(_fill(template, base=base_image(), kit=KIT, user=LEARNER_USER, entry=f"{KIT}/{ENTRY_POINT}",
                          exercises=",".join(ex.name for ex in exercises)), encoding="utf-8")


def _fill(template: str, **values: str) -> str:
    """`@name@` in a template replaced by its value; a name left unfilled is the judge's fault."""
    def one(match: re.Match) -> str:
        return values[match.group(1)]
    return re.sub(r"@([a-z_]+)@", one, template)


def timeout_for(exercise: Exercise, catalog: Catalog) -> int:
    """Seconds PrairieLearn lets one grading job of `exercise` run (see BUILD_ALLOWANCE_SECONDS)."""
    configs = len(COMPILERS) * len(exercise.sanitizers)
    seconds = START_SECONDS + configs * (BUILD_ALLOWANCE_SECONDS + 3 * catalog.limits.test_timeout_seconds)
    return int(min(LONGEST_TIMEOUT, seconds))


def question_uuid(exercise: Exercise) -> str:
    """A question's uuid, the same each time the folder is written: PrairieLearn keys a
    question's students' work on it, so a rewritten question must keep it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://alloclab.invalid/prairielearn/{exercise.name}"))


def info_json(exercise: Exercise, image: str, catalog: Catalog) -> dict:
    return {
        "uuid": question_uuid(exercise),
        "title": f"AllocLab {exercise.id:02d}: {exercise.title}",
        "topic": TOPIC,
        "tags": ["alloclab", "c++", exercise.difficulty],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "entrypoint": [f"{KIT}/{ENTRY_POINT}", exercise.name],
            "timeout": timeout_for(exercise, catalog),
            "enableNetworking": False,
        },
    }


def _write_question(folder: Path, exercise: Exercise, image: str, catalog: Catalog) -> None:
    folder.mkdir(parents=True)
    (folder / "info.json").write_text(json.dumps(info_json(exercise, image, catalog), indent=2) + "\n",
                                      encoding="utf-8")
    files = folder / "clientFilesQuestion"
    files.mkdir()
    chapter = exercise.chapter.read_text(encoding="utf-8")
    (files / exercise.chapter.name).write_text(chapter, encoding="utf-8")
    for figure in sorted(set(re.findall(r"\]\((figures/[^)\s]+)\)", chapter))):
        source = exercise.chapter.parent / figure
        if source.is_file():
            (files / figure).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, files / figure)
    stages = "\n".join(
        f"      <li>Stage {s.number}, {escape(s.title)} ({points:g} points): {escape(s.goal)}</li>"
        for s, points in zip(exercise.stages, exercise.stage_points()))
    template = (FILES / "question.html.in").read_text(encoding="utf-8")
    (folder / "question.html").write_text(_fill(
        template, number=f"{exercise.id:02d}", title=escape(exercise.title), summary=escape(exercise.summary),
        header=escape(exercise.header), chapter=escape(exercise.chapter.name),
        chapter_path=escape(shown(exercise.chapter)), exercise=escape(exercise.name),
        skeleton=escape(shown(exercise.exercise_file)), stages=stages,
        total=f"{sum(exercise.stage_points()):g}"), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# run: the grading job


def grade_root() -> Path:
    return platforms.root_of(ROOT_VARIABLE, ROOT_ALIAS, DEFAULT_ROOT)


def grading_slot() -> str:
    return os.environ.get("ALLOCLAB_SLOT") or SLOT


def run(root: Path, names: str = "all", catalog: Catalog | None = None, slot: str | None = None) -> dict:
    """Grades what $ROOT/student holds and writes $ROOT/results/results.json; returns what it
    wrote. A failure of the grader itself is written as such (platforms.results_always)."""
    def grade_them() -> dict:
        results_dir = root / "results"
        results_dir.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(results_dir, 0o755)   # the learner's code, run as another user, cannot write in it
        except OSError:
            pass   # a folder someone else made: the results are still written last, whole
        loaded = catalog or cat.load()
        exercises = grading.chosen_exercises(loaded, names)
        if not exercises:
            raise UsageError(f"the entry point's argument {names!r} names no exercise")
        student = root / "student"
        found = grading.find_headers(student, exercises) if student.is_dir() else \
            {ex.name: Unjudged(GradeStatus.NOT_SUBMITTED, "no file was handed in") for ex in exercises}
        if names.strip().lower() == "all":   # every exercise handed in, readable or not
            handed = [ex for ex in exercises if isinstance(found[ex.name], Header)
                      or found[ex.name].status == GradeStatus.UNREADABLE]
            exercises = handed or exercises
        return results(grade(loaded, student, exercises, found, slot or grading_slot()))

    return platforms.results_always(grade_them, failure, lambda outcome: _write_results(root, outcome))


def grade(catalog: Catalog, student: Path, exercises: list[Exercise], found: dict[str, Header | Unjudged],
          slot: str) -> list[ExerciseGrade]:
    """Each exercise's grade, one after the other in one slot: a grading job grades one
    submission, and its build trees, warmed when the image was built, are the slot's."""
    compilers = platforms.compilers_of(COMPILERS)
    return [grading.grade_header(catalog, ex, found[ex.name], compilers, slot, student) for ex in exercises]


def results(grades: list[ExerciseGrade]) -> dict:
    """results.json for these grades: ungradable when no exercise's header was handed in, else
    the share of the points earned, with one test per stage."""
    graded = [g for g in grades if g.status == GradeStatus.GRADED]
    if not graded:
        why = [g.message for g in grades]
        return {"gradable": False, "score": 0.0,
                "message": "; ".join(why) + ". Hand in the header the question asks for, under its name; this "
                           "costs no attempt.",
                "format_errors": why, "tests": [], "output": ""}
    earned = sum(g.total for g in grades)
    most = sum(g.max_score + (g.tests.points if g.tests else 0.0) for g in grades)
    single = len(grades) == 1
    tests = []
    for g in grades:
        for s in g.stages:
            name = f"Stage {s.number}: {s.title}" if single else f"{g.exercise}, stage {s.number}: {s.title}"
            tests.append({"name": name, "description": s.goal, "points": round(s.earned, 4),
                          "max_points": round(s.points, 4), "message": _stage_message(g, s),
                          "output": platforms.clipped(s.report, TEST_OUTPUT_CHARS)})
        if g.tests:
            tests.append({"name": "Your tests" if single else f"{g.exercise}, your tests",
                          "description": "my_tests.cpp: valid on every correct implementation, then the share of the "
                                         "known mistakes rejected",
                          "points": round(g.tests.earned, 4), "max_points": round(g.tests.points, 4),
                          "message": g.tests.message, "output": platforms.clipped(g.tests.report, TEST_OUTPUT_CHARS)})
    lines = [f"{g.exercise} ({g.title}): {g.message}; {g.score:g} of {g.max_score:g} points" +
             (f"; your tests: {g.tests.message}, {round(g.tests.earned, 2):g} of {g.tests.points:g}" if g.tests else "")
             for g in grades]
    output = "\n\n".join(part for g in grades for part in
                         ([f"The first compiler error in {g.header}:\n{g.compile_error}"] if g.compile_error else [])
                         + [g.report])
    return {"gradable": True, "score": round(earned / most, 6) if most else 0.0, "message": "\n".join(lines),
            "output": platforms.clipped(output, REPORT_CHARS), "tests": tests}


def _stage_message(g: ExerciseGrade, s: StageGrade) -> str:
    """One line on a stage: passes, or where it fails and its first failing test."""
    if g.status != GradeStatus.GRADED:
        return g.message
    if s.passed:
        return "passes in every configuration judged"
    if g.compile_error:
        return "not tested: " + g.message
    if g.voided:
        return g.message
    for config in (g.verdict or {}).get("configs", []):
        for stage in config.get("stages", []):
            if stage.get("number") != s.number or stage.get("status") == StageStatus.PASSED:
                continue
            where = f"{config.get('compiler')} · {config.get('sanitizer')}"
            tests = stage.get("tests", [])
            failing = [t for t in tests if t.get("status") != TestStatus.PASSED]
            if failing:
                first = failing[0]
                return (f"fails under {where}: {len(failing)} of {len(tests)} tests do not pass, the first "
                        f"{first.get('name')} ({first.get('status')})")
            problems = stage.get("problems") or ["the output says why"]
            return f"fails under {where}: {problems[0].splitlines()[0] if problems[0] else 'see the output'}"
    return "fails: the output says why"


def failure(err: BaseException) -> dict:
    """results.json when the grader itself failed: ungradable, so no attempt is spent, and
    saying it is not the learner's fault."""
    return {"gradable": False, "score": 0.0, "message": NOT_YOUR_FAULT,
            "output": platforms.clipped(f"The grader's error: {type(err).__name__}: {err}\n\n{platforms.trace(err)}",
                                        REPORT_CHARS), "tests": []}


def _write_results(root: Path, outcome: dict) -> None:
    data = json.dumps(outcome, indent=1).encode()
    if len(data) > RESULTS_BYTES:   # never reached with the limits above; PrairieLearn would refuse it
        outcome = dict(outcome, output=platforms.clipped(outcome.get("output", ""), 2000),
                       tests=[dict(t, output=platforms.clipped(t["output"], 2000)) for t in outcome.get("tests", [])])
        data = json.dumps(outcome, indent=1).encode()
    write_atomically(root / "results" / "results.json", data, 0o644)


def warm(names: str) -> bool:
    """Grades each exercise's reference once in the grading slot, as the image is built, so that a
    grading job only compiles the learner's code; True when every reference scores full marks
    (else the image must not be built)."""
    catalog = cat.load()
    compilers = platforms.compilers_of(COMPILERS)
    ok = True
    for _, grade in platforms.warm(catalog, grading.chosen_exercises(catalog, names), compilers, [grading_slot()]):
        outcome = results([grade])
        full = outcome["gradable"] and outcome["score"] == 1
        print(f"{grade.exercise}: the reference scores {outcome['score']:g}" + ("" if full else " (it must score 1)"))
        if not full:
            print(outcome["message"], outcome["output"], sep="\n")
        ok = ok and full
    return ok


def main(argv: list[str]) -> int:
    """The entry point's Python: `grade [EXERCISES]` (the grading job) or `warm EXERCISES`
    (the image build). Exit status 0 when results.json was written (grade) or every reference
    scored 1 (warm), else 1: the entry point's script reads it (selftest/test_layers.py says why
    this is not cli.main's)."""
    try:
        if argv[:1] == ["warm"] and len(argv) == 2:
            return 0 if warm(argv[1]) else 1
        if argv[:1] == ["grade"] and len(argv) <= 2:
            outcome = run(grade_root(), argv[1] if len(argv) == 2 else "all")
            print(outcome.get("message", ""))
            return 0
        raise UsageError("usage: run [EXERCISES] | run --warm EXERCISES")
    except Exception as err:   # results.json could not be written: the entry point writes its own
        print(f"judge: the PrairieLearn grader failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
