"""The catalog (judge/catalog.toml): which exercises exist, in which order, with which stages."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "judge" / "catalog.toml"
SANITIZERS = ("asan", "tsan")
DIFFICULTIES = ("easy", "medium", "hard")
FORMAT_VERSION = 2
HINT_LEVELS = ("concept", "approach", "code")

# TEST(Suite, Name), TEST_F, TEST_P, TYPED_TEST and TYPED_TEST_P as they open a test in a test file.
_TEST_RE = re.compile(r"^\s*(?:TEST(?:_F|_P)?|TYPED_TEST(?:_P)?)\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.MULTILINE)
_SLUG_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def shown(path: Path | str) -> str:
    """A path as the learner sees it: relative to the kit when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except (ValueError, OSError):
        return str(path)


def without_root(text: str) -> str:
    """Text from a compiler or a test with the kit's absolute path left out of every path in it."""
    return text.replace(str(ROOT) + "/", "")


class CatalogError(Exception):
    """The catalog cannot be read, or an exercise name names nothing."""


@dataclass(frozen=True)
class Limits:
    """The catalog's [limits], the one place they are written (CMakeLists.txt reads the test
    time limit from there too, for ctest)."""
    test_timeout_seconds: float
    output_bytes: int
    memory_mb: int
    build_timeout_seconds: float
    bench_timeout_seconds: float


@dataclass(frozen=True)
class Hint:
    level: str      # one of HINT_LEVELS
    text: str
    tests: tuple[str, ...] = ()   # the tests of the stage's suite it is for; () for the whole stage


@dataclass(frozen=True)
class Stage:
    number: int
    suite: str
    title: str
    goal: str
    sanitizers: tuple[str, ...]
    hints: tuple[Hint, ...] = ()

    @property
    def stage_hints(self) -> tuple[Hint, ...]:
        """The hints for the whole stage, in order."""
        return tuple(h for h in self.hints if not h.tests)

    def hints_for(self, test: str) -> tuple[Hint, ...]:
        """The hints written for one test of the stage (its name in the suite), in order."""
        return tuple(h for h in self.hints if test in h.tests)

    @property
    def hinted_tests(self) -> tuple[str, ...]:
        """The tests that have hints of their own, in the order their first hint comes."""
        return tuple(dict.fromkeys(t for h in self.hints for t in h.tests))


@dataclass(frozen=True)
class Exercise:
    id: int
    slug: str
    title: str
    summary: str
    difficulty: str
    header: str
    sanitizers: tuple[str, ...]
    stages: tuple[Stage, ...]
    bench_subject: str = ""

    @property
    def name(self) -> str:
        """The folder name shared by every piece of the exercise, such as `01-arena`."""
        return f"{self.id:02d}-{self.slug}"

    @property
    def exercise_file(self) -> Path:
        return ROOT / "exercises" / self.name / self.header

    @property
    def solution_file(self) -> Path:
        return ROOT / "solutions" / self.name / self.header

    @property
    def chapter(self) -> Path:
        return ROOT / "chapters" / f"{self.name}.md"

    @property
    def quiz_file(self) -> Path:
        return ROOT / "chapters" / f"{self.name}.quiz.toml"

    @property
    def tests_dir(self) -> Path:
        return ROOT / "judge" / "tests" / self.name

    @property
    def mistakes_dir(self) -> Path:
        return ROOT / "judge" / "mistakes" / self.name

    @property
    def bench_dir(self) -> Path:
        return ROOT / "judge" / "bench" / self.name

    def stage_for_suite(self, suite: str) -> Stage | None:
        return next((s for s in self.stages if s.suite == suite), None)


@dataclass(frozen=True)
class Catalog:
    exercises: tuple[Exercise, ...]
    limits: Limits = field(default_factory=lambda: load().limits)
    format_version: int = FORMAT_VERSION

    def resolve(self, name: str) -> Exercise:
        """`1`, `01`, `arena` and `01-arena` all name exercise 01."""
        key = name.strip().lower()
        for ex in self.exercises:
            if key in (str(ex.id), f"{ex.id:02d}", ex.slug, ex.name):
                return ex
        known = ", ".join(f"{ex.id} ({ex.slug})" for ex in self.exercises)
        raise CatalogError(f"no exercise is called '{name}'. The exercises are: {known}.")


_CONVERT = (f"To convert it: put `format_version = {FORMAT_VERSION}` at the top, remove each exercise's "
            "`hints = [...]`, and give every [[exercise.stage]] its own hints, at least three, in the order "
            "concept, approach, code: `hints = [{ level = \"concept\", text = \"...\" }, ...]`. "
            "docs/authoring.md describes the format.")


def load(path: Path = CATALOG) -> Catalog:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise CatalogError(f"cannot read the catalog {path}: {err}") from None
    version = data.get("format_version", 1)
    old_hints = [str(raw.get("slug", "?")) for raw in data.get("exercise", [])
                 if isinstance(raw, dict) and "hints" in raw]
    if version != FORMAT_VERSION:
        raise CatalogError(f"the catalog {shown(path)} has format_version = {version!r}"
                           f"{' (none given: version 1)' if 'format_version' not in data else ''}, and this judge "
                           f"reads format_version = {FORMAT_VERSION} only. {_CONVERT}")
    if old_hints:
        raise CatalogError(f"the catalog {shown(path)} gives exercise-level hints ({', '.join(old_hints)}), as "
                           f"format 1 did; in format {FORMAT_VERSION} hints belong to stages. {_CONVERT}")
    try:
        limits = Limits(**data["limits"])
        exercises = [_exercise(raw) for raw in data.get("exercise", [])]
    except (TypeError, KeyError, ValueError, AttributeError) as err:
        raise CatalogError(f"the catalog {path} is malformed: {err}") from None
    exercises.sort(key=lambda ex: ex.id)
    return Catalog(tuple(exercises), limits, version)


def _hint(raw) -> Hint:
    if (not isinstance(raw, dict) or not {"level", "text"} <= set(raw) <= {"level", "text", "tests"}
            or not isinstance(raw["text"], str)):
        raise ValueError(f"a hint is a table {{ level = ..., text = \"...\" }}, optionally with "
                         f"tests = [\"TestName\", ...], not {raw!r}")
    if raw["level"] not in HINT_LEVELS:
        raise ValueError(f"hint level {raw['level']!r} is not one of {', '.join(HINT_LEVELS)}")
    tests = raw.get("tests", [])
    if not isinstance(tests, list) or not tests and "tests" in raw or not all(isinstance(t, str) and t for t in tests):
        raise ValueError(f"a hint's tests are a non-empty list of test names, not {tests!r}")
    return Hint(raw["level"], raw["text"].strip(), tuple(tests))


def _exercise(raw: dict) -> Exercise:
    sanitizers = tuple(raw.get("sanitizers", ["asan"]))
    stages = tuple(
        Stage(
            number=i,
            suite=st["suite"],
            title=st.get("title", st["suite"]),
            goal=st.get("goal", ""),
            sanitizers=tuple(st.get("sanitizers", sanitizers)),
            hints=tuple(_hint(h) for h in st.get("hints", [])),
        )
        for i, st in enumerate(raw.get("stage", []), start=1)
    )
    return Exercise(
        id=int(raw["id"]),
        slug=raw["slug"],
        title=raw["title"],
        summary=raw.get("summary", ""),
        difficulty=raw.get("difficulty", ""),
        header=raw["header"],
        sanitizers=sanitizers,
        stages=stages,
        bench_subject=raw.get("bench_subject", ""),
    )


def tests_in_source(exercise: Exercise) -> dict[str, list[str]]:
    """The tests each suite contains, read from the test files' text. The catalog's check reads
    suites from it without a build; a verdict counts the tests from the test binary instead
    (listing.py), which sees what the preprocessor and the parameterized tests make of them,
    and falls back to this only when the reference itself cannot be built."""
    suites: dict[str, list[str]] = {}
    for path in sorted(exercise.tests_dir.glob("*.cpp")):
        for suite, name in _TEST_RE.findall(path.read_text(encoding="utf-8")):
            suites.setdefault(suite, []).append(name)
    return suites


# What a concept hint must not contain: it names the idea, and the code comes two hints later.
_CODE_RE = re.compile(r"`|->|::|==|!=|&&|\|\||\w\(\)")  # not "++": C++ is a word here


def hint_problems(hints: tuple[Hint, ...], of: str = "stage") -> list[str]:
    """How a stage's hints (or one test's, `of` = "test") break the rules: at least three, at
    least one of each level, in the order concept, approach, code, and no code in a concept hint."""
    problems = []
    if len(hints) < 3:
        whose = "every stage" if of == "stage" else "a test with hints of its own"
        problems.append(f"{len(hints)} hint(s); {whose} needs at least 3 ({', '.join(HINT_LEVELS)})")
    levels = [h.level for h in hints]
    missing = [level for level in HINT_LEVELS if level not in levels]
    if missing and hints:
        problems.append(f"no {' and no '.join(missing)} hint")
    if levels != sorted(levels, key=HINT_LEVELS.index):
        problems.append(f"the hints go {', '.join(levels)}; they must go concept, then approach, then code")
    for number, hint in enumerate(hints, start=1):
        if not hint.text:
            problems.append(f"hint {number} is empty")
        code = _CODE_RE.search(hint.text)
        if hint.level == "concept" and code:
            problems.append(f"hint {number} is a concept hint but contains code ({code.group()!r}): it names the "
                            "idea and asks a question; the code belongs in a later hint")
    return problems


def validate(catalog: Catalog) -> list[str]:
    """Every way the catalog disagrees with itself or with the files, the course's chapters and
    quizzes included; empty when valid."""
    from . import course
    problems = catalog_problems(catalog)
    for ex in catalog.exercises:
        problems.extend(f"exercise {ex.name}: {p}" for p in course.problems(ex))
    return problems


def catalog_problems(catalog: Catalog) -> list[str]:
    """Every way the catalog disagrees with itself or with the exercises' code and tests."""
    problems: list[str] = []
    if not catalog.exercises:
        problems.append("the catalog lists no exercise")
    ids = [ex.id for ex in catalog.exercises]
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"exercise ids must be 1, 2, 3, ... in order; they are {ids}")
    slugs = [ex.slug for ex in catalog.exercises]
    if len(set(slugs)) != len(slugs):
        problems.append("two exercises share a slug")
    for ex in catalog.exercises:
        where = f"exercise {ex.name}"
        if not _SLUG_RE.match(ex.slug):
            problems.append(f"{where}: slug '{ex.slug}' must be lower-case words joined by '-'")
        if ex.difficulty not in DIFFICULTIES:
            problems.append(f"{where}: difficulty must be one of {', '.join(DIFFICULTIES)}")
        for path in (ex.exercise_file, ex.solution_file, ex.chapter):
            if not path.is_file():
                problems.append(f"{where}: {path.relative_to(ROOT)} is missing")
        if not ex.stages:
            problems.append(f"{where}: no stages")
        bad = [s for s in ex.sanitizers if s not in SANITIZERS]
        if bad or not ex.sanitizers:
            problems.append(f"{where}: sanitizers must be chosen from {SANITIZERS}, not {list(ex.sanitizers)}")
        in_source = tests_in_source(ex) if ex.tests_dir.is_dir() else {}
        if not in_source:
            problems.append(f"{where}: no tests in {ex.tests_dir.relative_to(ROOT)}")
        for st in ex.stages:
            if st.suite not in in_source:
                problems.append(f"{where}: stage {st.number} names suite {st.suite}, which no test file defines")
            if not set(st.sanitizers) <= set(ex.sanitizers) or not st.sanitizers:
                problems.append(f"{where}: stage {st.number} runs under {list(st.sanitizers)}, "
                                f"which must be among the exercise's {list(ex.sanitizers)}")
            problems.extend(f"{where}: stage {st.number}: {p}" for p in hint_problems(st.stage_hints))
            for test in st.hinted_tests:
                if st.suite in in_source and test not in in_source[st.suite]:
                    problems.append(f"{where}: stage {st.number}: a hint names test {test!r}, which suite {st.suite} "
                                    f"does not define (its tests: {', '.join(in_source[st.suite])})")
                problems.extend(f"{where}: stage {st.number}: the hints for {st.suite}.{test}: {p}"
                                for p in hint_problems(st.hints_for(test), "test"))
        staged = {st.suite for st in ex.stages}
        for suite in sorted(set(in_source) - staged):
            problems.append(f"{where}: suite {suite} belongs to no stage, so it would never be judged")
        if ex.bench_dir.is_dir() and not ex.bench_subject:
            problems.append(f"{where}: has benchmarks but no bench_subject")
    return problems
