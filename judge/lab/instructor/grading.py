"""Grading: a learner's headers found in whatever they handed in, each judged as `judge.py test`
judges it, and scored stage by stage. `grade` and both autograders grade through here, so an
instructor's verdict is the one the learner saw.

A stage scores its points when it passes in every configuration it is judged in (compiler and
instrumentation); an exercise scores the sum of its stages. When the catalog gives an exercise
`test_points`, the learner's own tests beside the header (my_tests.cpp) are judged as `examine`
judges them and score apart: nothing unless valid, then the share of the known mistakes rejected. A header that changes the test
framework's macros scores nothing, since its passes prove nothing.

Headers are judged in slots: build trees that jobs running at once never share, reused from one
learner to the next so that each judgement compiles only the learner's code. A slot's folder
holds the header being judged under its exercise's file name, which compiler messages quote;
reports show the learner's own path in its place."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from .. import ui
from ..core import build, examining, judging, process
from ..learner import examine as examine_report, report
from ..model.catalog import Catalog, Exercise, shown
from ..model.files import write_atomically
from ..model.results import StageStatus, Verdict

STAGING = build.BUILD_ROOT / "grade"
LARGEST_HEADER = 1 << 20          # bytes; a larger "header" is not judged
SKIPPED_FOLDERS = {"solutions", "build", "judge", "node_modules", "__MACOSX"}
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


class GradeStatus(StrEnum):
    """What became of an exercise's header; the values are the words grades.json records."""
    GRADED = "graded"
    NOT_SUBMITTED = "not submitted"
    AMBIGUOUS = "ambiguous"
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Unjudged:
    """Why an exercise has no header to judge."""
    status: GradeStatus
    why: str

    def __str__(self) -> str:
        return f"{self.status}: {self.why}"


@dataclass(frozen=True)
class Header:
    """A header handed in, read once: its bytes are both hashed and judged."""
    path: Path
    data: bytes

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class StageGrade:
    number: int
    title: str
    goal: str
    points: float        # what the stage is worth
    earned: float        # `points` when it passed in every configuration, else 0
    passed: bool
    report: str = ""     # this stage in every configuration, as `test` reports it, in plain text


@dataclass
class TestsGrade:
    """The learner's own tests of the exercise (`examine`): valid on every correct implementation,
    then the share of the known mistakes they reject, of the catalog's `test_points`."""
    points: float
    earned: float
    valid: bool
    caught: int
    total: int
    message: str
    report: str = ""
    source: str = ""     # the test file's path inside the learner's folder; "" when none was handed in
    digest: str = ""     # sha256 of the test file judged


@dataclass
class ExerciseGrade:
    exercise: str        # 01-arena
    title: str
    header: str          # arena.hpp
    status: GradeStatus
    message: str         # one line: what a table cell or a summary says
    score: float
    max_score: float
    stages: list[StageGrade] = field(default_factory=list)
    report: str = ""         # the whole report, as `judge.py test` prints it, in plain text
    compile_error: str = ""  # the first compiler error and the lines the compiler quotes; "" when it built
    digest: str = ""         # sha256 of the header judged
    seconds: float = 0.0
    verdict: dict | None = None   # Verdict.to_json(), the learner's path in place of the slot's
    source: str = ""             # the header's path inside the learner's folder
    flags: list[str] = field(default_factory=list)   # what an instructor should read before trusting the score
    voided: bool = False   # scored 0 whatever its verdict: it changes the test framework or includes the reference
    tests: TestsGrade | None = None   # the learner's own tests, when the catalog gives them points

    @property
    def total(self) -> float:
        """The header's score and the tests'."""
        return self.score + (self.tests.earned if self.tests else 0.0)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(data: dict) -> "ExerciseGrade":
        fields = dict(data)
        fields["stages"] = [StageGrade(**s) for s in data.get("stages", [])]
        fields["status"] = GradeStatus(data["status"])
        fields["tests"] = TestsGrade(**data["tests"]) if data.get("tests") else None
        return ExerciseGrade(**fields)


def tests_file(exercise: Exercise, found: Header | Unjudged) -> Path | None:
    """The learner's own tests of the exercise: examine's file beside the header handed in."""
    if isinstance(found, Unjudged):
        return None
    path = found.path.parent / examining.MY_TESTS
    return path if path.is_file() and not path.is_symlink() else None


def tests_digest(exercise: Exercise, found: Header | Unjudged) -> str:
    path = tests_file(exercise, found)
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path else ""
    except OSError:
        return ""


def grade_tests(catalog: Catalog, exercise: Exercise, found: Header | Unjudged,
                learner_folder: Path | None = None) -> TestsGrade | None:
    """The learner's own tests, judged as `examine` judges them; None when the catalog gives them
    no points. Never raises for what the file does."""
    if not exercise.test_points:
        return None
    path = tests_file(exercise, found)
    if path is None:
        return TestsGrade(exercise.test_points, 0.0, False, 0, 0,
                          f"no {examining.MY_TESTS} was handed in beside {exercise.header}")
    source = path.relative_to(learner_folder).as_posix() if learner_folder else path.name
    try:
        if path.stat().st_size > LARGEST_HEADER:
            return TestsGrade(exercise.test_points, 0.0, False, 0, 0, f"{source} is over {LARGEST_HEADER >> 20} MB",
                              source=source)
    except OSError as err:
        return TestsGrade(exercise.test_points, 0.0, False, 0, 0, f"{source} cannot be read ({err.strerror})",
                          source=source)
    verdict = examining.examine(exercise, path, catalog.limits, jobs=1)
    earned = exercise.test_points * verdict.chaffs_caught / verdict.chaffs_total \
        if verdict.valid and verdict.chaffs_total else 0.0
    if verdict.problem:
        message = "not judged: " + verdict.problem.splitlines()[0]
    elif not verdict.valid:
        message = f"not valid: {len({i.test for i in verdict.invalid})} test(s) fail on a correct implementation"
    else:
        message = f"valid; rejects {verdict.chaffs_caught} of {verdict.chaffs_total} known mistakes"
    text = examine_report.render(verdict)   # an instructor's words are English (cli.py)
    return TestsGrade(exercise.test_points, earned, verdict.valid, verdict.chaffs_caught, verdict.chaffs_total,
                      message, _ANSI_RE.sub("", text).replace(str(path), source), source,
                      tests_digest(exercise, found))


def find_headers(folder: Path, exercises: list[Exercise]) -> dict[str, Header | Unjudged]:
    """Each exercise's header in a learner's folder, found by its file name anywhere below (a
    clone of the kit and a flat upload both work) and read, or why there is none.
    Hidden folders and the kit's own (solutions/, judge/, build/) are not searched, symbolic
    links are not followed."""
    wanted = {ex.header: ex for ex in exercises}
    found: dict[str, list[Path]] = {ex.name: [] for ex in exercises}
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            path = Path(here) / name
            if name in wanted and not path.is_symlink():
                found[wanted[name].name].append(path)
    headers: dict[str, Header | Unjudged] = {}
    for ex in exercises:
        paths = found[ex.name]
        if not paths:
            headers[ex.name] = Unjudged(GradeStatus.NOT_SUBMITTED, f"no file named {ex.header} was handed in")
        elif len(paths) > 1:
            listed = ", ".join(p.relative_to(folder).as_posix() for p in paths[:4])
            headers[ex.name] = Unjudged(GradeStatus.AMBIGUOUS, f"{len(paths)} files are named {ex.header} ({listed}); "
                                        "hand in exactly one")
        else:
            headers[ex.name] = read_header(paths[0])
    return headers


# Functions an allocator's header has no use for, but a header that wants to rewrite its own test
# program's report, or to reach outside it, does: the learner's code runs inside the test program,
# so no judge can rule that out at run time. A header that uses one is flagged for a human to read.
_OUTSIDE_RE = re.compile(
    r"\b(fopen|freopen|fdopen|ofstream|ifstream|fstream|filesystem|openat|creat|unlink|rename|atexit|"
    r"at_quick_exit|quick_exit|_exit|popen|system|execl|execle|execlp|execv|execve|execvp|clone|ptrace|dlopen|"
    r"dlsym|syscall|kill|raise|signal|sigaction|setjmp|longjmp|testing|gtest|getpid|environ|getenv)\b"
    r"|\b(v?fork)\s*\(\s*\)|/proc/")
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def flags_of(text: str) -> list[str]:
    """Why a header deserves a human's reading before its score is trusted; [] for an allocator
    that only allocates."""
    used = sorted({m.group(0).split("(")[0].strip() for m in _OUTSIDE_RE.finditer(_COMMENT_RE.sub(" ", text))})
    if not used:
        return []
    return [f"uses {', '.join(used)}: an allocator needs none of these, and a header could use them to "
            "rewrite its test program's results or reach outside it; read it before you trust its score"]


def ungraded(exercise: Exercise, unjudged: Unjudged) -> ExerciseGrade:
    """The grade of a header that could not be judged: 0, and why."""
    why = str(unjudged)
    points = exercise.stage_points()
    return ExerciseGrade(exercise.name, exercise.title, exercise.header, unjudged.status, why, 0.0, sum(points),
                         [StageGrade(s.number, s.title, s.goal, p, 0.0, False, why)
                          for s, p in zip(exercise.stages, points)], report=why)


def read_header(path: Path) -> Header | Unjudged:
    """The header's bytes, or why they cannot be judged."""
    try:
        size = path.stat().st_size
        if size > LARGEST_HEADER:
            return Unjudged(GradeStatus.UNREADABLE, f"{path.name} is {size / 1e6:.1f} MB, and a header over "
                            f"{LARGEST_HEADER >> 20} MB is not judged")
        return Header(path, path.read_bytes())
    except OSError as err:
        return Unjudged(GradeStatus.UNREADABLE, f"{path.name} cannot be read ({err.strerror or err})")


@contextmanager
def slot_folder(slot: str):
    """The slot's staging folder, held for the whole judgement: two graders started at once
    with the same slot names take turns on it."""
    folder = STAGING / slot
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def grade_header(catalog: Catalog, exercise: Exercise, found: Header | Unjudged, compilers: tuple[str, ...],
                 slot: str, learner_folder: Path | None = None) -> ExerciseGrade:
    """Judges one header (or scores 0 the reason `found` gives instead) in slot `slot`. Never
    raises for what the header does."""
    if isinstance(found, Unjudged):
        return ungraded(exercise, found)
    source = found.path.relative_to(learner_folder).as_posix() if learner_folder else found.path.name
    with slot_folder(slot) as folder:
        staged = folder / exercise.name / exercise.header
        staged.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(staged, found.data, 0o644)
        impl = build.Impl("source", staged)
        verdict = judging.judge(judging.Request(exercise, impl, compilers, slot=slot, every_stage=True), catalog.limits)
        borrowed = included_reference(exercise, [build.tree_dir(c.compiler, c.sanitizer, impl, slot)
                                                 for c in verdict.configs if c.build.ok])
    refused = (f"{source} includes the kit's reference solution ({shown(borrowed)}): its tests judged the "
               "reference, not the learner's code" if borrowed else "")
    grade = scored(exercise, verdict, staged, source, found.digest, refused)
    grade.flags = flags_of(found.data.decode("utf-8", "replace"))
    grade.tests = grade_tests(catalog, exercise, found, learner_folder)
    if grade.tests:
        grade.report += (f"\n\nThe learner's own tests ({grade.tests.source or examining.MY_TESTS}): "
                         f"{round(grade.tests.earned, 2):g} of {grade.tests.points:g} points, {grade.tests.message}\n"
                         + grade.tests.report)
    return grade


def included_reference(exercise: Exercise, trees: list[Path]) -> str:
    """The reference header the judged test binary's objects were compiled with, if any: a header
    that includes the kit's own solution passes every test without a line of its own. The
    compiler's dependency records, which ninja keeps, say what each object included: those of
    the exercise's test objects alone are read (a program's seam_ objects among them: exercise 07's
    engine includes the header there), not the whole tree's."""
    reference = exercise.solution_file.resolve()
    target = re.compile(rf"(test|seam)_{re.escape(exercise.name)}(-[a-z0-9-]+)?\.dir")
    for tree in trees:
        folders = sorted((tree / "CMakeFiles").glob(f"*_{exercise.name}*.dir"))
        objects = [o.relative_to(tree).as_posix() for d in folders if target.fullmatch(d.name)
                   for o in sorted(d.rglob("*.o"))]
        if not objects:
            continue
        result = process.run(["ninja", "-C", str(tree), "-t", "deps", *objects], timeout=60, keep_bytes=20_000_000)
        for line in result.stdout.text().splitlines():
            if line.startswith(" ") and line.strip() and (tree / line.strip()).resolve() == reference:
                return str(reference)
    return ""


def scored(exercise: Exercise, verdict: Verdict, staged: Path, source: str, header_digest: str,
           refused: str = "") -> ExerciseGrade:
    """The grade of a verdict, every mention of the slot's copy of the header replaced by the
    learner's own path. `refused` says why a header scores 0 whatever its verdict."""
    def own(text: str) -> str:
        text = _ANSI_RE.sub("", text)
        for name in (str(staged), shown(staged)):
            text = text.replace(name, source)
        return text

    stages = []
    for stage, points in zip(exercise.stages, exercise.stage_points()):
        results = [s for c in verdict.configs for s in c.stages if s.number == stage.number]
        passed = bool(results) and not verdict.tampering and not refused and \
            all(s.status == StageStatus.PASSED for s in results)
        stages.append(StageGrade(stage.number, stage.title, stage.goal, points, points if passed else 0.0, passed,
                                 own(_refusal(refused) + stage_report(verdict, stage.number))))
    error = _compile_error(verdict)
    grade = ExerciseGrade(exercise.name, exercise.title, exercise.header, GradeStatus.GRADED, "",
                          sum(s.earned for s in stages), sum(s.points for s in stages), stages,
                          own(_refusal(refused) + report.render(verdict, exercise, every_message=True)), own(error),
                          header_digest,
                          verdict.seconds, json.loads(own(json.dumps(verdict.to_json()))), source,
                          voided=bool(refused or verdict.tampering))
    grade.message = own(f"scored 0: {refused}" if refused else _message(grade, verdict, error))
    return grade


def _refusal(refused: str) -> str:
    return f"{ui.FAIL} Scored 0: {refused}.\n\n" if refused else ""


def stage_report(verdict: Verdict, number: int) -> str:
    """Stage `number` in every configuration it was judged in, as the report shows it, with the
    build's failure in place of its tests when the header did not build."""
    lines = [f"{ui.FAIL} The header under test changes the test framework: {t}. Tests judged through "
             "altered assertions prove nothing, so no stage scores." for t in verdict.tampering]
    for config in verdict.configs:
        stage = next((s for s in config.stages if s.number == number), None)
        if stage is None:
            continue
        if not config.build.ok or config.build.problem:
            lines.extend(report.config_lines(config, number, False, every_message=True))
        else:
            lines.append(config.label)
            lines.extend(report.stage_lines(stage, True, False, every_message=True))
    return "\n".join(lines)


def _compile_error(verdict: Verdict) -> str:
    for config in verdict.configs:
        b = config.build
        if b.ok:
            continue
        if b.error:
            return "\n".join([f"{b.error.where()}: {b.error.severity}: {b.error.message}", *b.error.context])
        return b.problem
    return ""


def _message(grade: ExerciseGrade, verdict: Verdict, error: str) -> str:
    if verdict.tampering:
        return "scored 0: the header changes the test framework's macros"
    if error:
        return "does not compile: " + error.splitlines()[0]
    passed = [s.number for s in grade.stages if s.passed]
    if len(passed) == len(grade.stages):
        return "passes every stage"
    failing = next(s for s in grade.stages if not s.passed)
    head = f"stage{'s' if len(passed) > 1 else ''} {', '.join(map(str, passed))} of {len(grade.stages)} pass" \
        if passed else "no stage passes"
    return f"{head}; the first failing is stage {failing.number} ({failing.title})"


Pair = tuple[Path, Exercise, Header]   # a learner's folder, an exercise, the header it handed in for it


def judge_pairs(catalog: Catalog, pairs: list[Pair], compilers: tuple[str, ...],
                jobs: int) -> Iterator[tuple[Pair, ExerciseGrade]]:
    """Each pair's grade, `jobs` pairs at a time, each in a slot of its own, as each is done."""
    slots = build.Slots("grade", jobs)

    def one(folder: Path, exercise: Exercise, header: Header) -> ExerciseGrade:
        with slots.taken() as slot:
            return grade_header(catalog, exercise, header, compilers, slot, folder)

    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        futures = {pool.submit(one, *pair): pair for pair in pairs}
        for future in as_completed(futures):
            yield futures[future], future.result()


def grade_learner(catalog: Catalog, folder: Path, exercises: list[Exercise], compilers: tuple[str, ...],
                  jobs: int) -> list[ExerciseGrade]:
    """Every chosen exercise of one learner's folder, `jobs` at a time, in catalog order: what
    the autograders grade a submission with."""
    headers = find_headers(folder, exercises)
    grades = {ex.name: ungraded(ex, found) for ex in exercises if isinstance(found := headers[ex.name], Unjudged)}
    pairs = [(folder, ex, found) for ex in exercises if isinstance(found := headers[ex.name], Header)]
    grades.update((ex.name, grade) for (_, ex, _), grade in judge_pairs(catalog, pairs, compilers, jobs))
    return [grades[ex.name] for ex in exercises]


def chosen_exercises(catalog: Catalog, names: str) -> list[Exercise]:
    """`all` or a comma-separated list (`1,2,arena`), in catalog order."""
    if names.strip().lower() == "all":
        return list(catalog.exercises)
    picked = {catalog.resolve(name).id for name in names.split(",") if name.strip()}
    return [ex for ex in catalog.exercises if ex.id in picked]


def elapsed(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{seconds:.1f} s"
