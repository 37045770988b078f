"""The catalog (judge/catalog.toml): which exercises exist, in which order, with which stages."""
from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from . import words
from .errors import UsageError

ROOT = Path(__file__).resolve().parents[3]
CATALOG = ROOT / "judge" / "catalog.toml"
SANITIZERS = ("asan", "tsan")
FORMAT_VERSION = 2
COMPILERS = {"clang": "clang++", "gcc": "g++"}
HINT_LEVELS = ("concept", "approach", "code")
# Every chapter's level-2 parts, in order; the learner reads the last once every stage passes.
CHAPTER_PARTS = ("The lesson", "The task", "After you pass")
# The Chinese edition: the chapters and quizzes under the same names, and the catalog's words.
ZH = ROOT / "chapters" / "zh"
ZH_CATALOG = ROOT / "judge" / "catalog.zh.toml"
ZH_CHAPTER_PARTS = ("讲解", "任务", "通过之后")

# TEST(Suite, Name), TEST_F, TEST_P, TYPED_TEST, TYPED_TEST_P and the model stage's
# ALLOCLAB_MODEL_TEST(Suite, Name, ...) as they open a test in a test file.
TEST_OPENING = re.compile(r"^\s*(?:TEST(?:_F|_P)?|TYPED_TEST(?:_P)?|ALLOCLAB_MODEL_TEST)\(\s*(\w+)\s*,\s*(\w+)\s*[,)]",
                      re.MULTILINE)


def shown(path: Path | str) -> str:
    """A path as the learner sees it: relative to the kit when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except (ValueError, OSError):
        return str(path)


def without_root(text: str) -> str:
    """Text from a compiler or a test with the kit's absolute path left out of every path in it."""
    return text.replace(str(ROOT) + "/", "")


def program(compiler: str) -> str:
    """The program a compiler name runs: `clang` is clang++, `gcc` g++, anything else itself
    (`clang++-19`, `g++-12`, a path)."""
    return COMPILERS.get(compiler, compiler)


class CatalogError(UsageError):
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
    points: float = 0.0           # what the stage is worth when graded (see Exercise.stage_points)
    program: str = ""             # a program of its own, built once the stages before it pass (see below)

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
    test_hints: tuple[str, ...] = ()   # questions that lead the learner's own tests to what the contract promises
    test_points: float = 0.0           # what the learner's tests are worth when graded; 0: not graded
    edition: str = "en"           # "zh": its words from the Chinese catalog (see translated)

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
    def reader_chapter(self) -> Path:
        """The chapter the learner is pointed to: the Chinese one in the Chinese edition, when it
        is there."""
        zh = ZH / self.chapter.name
        return zh if self.edition == "zh" and zh.is_file() else self.chapter

    @property
    def after_you_pass(self) -> str:
        """Where the part to read after the pass is, as `test` and `hint` point to it."""
        chapter = self.reader_chapter
        parts = CHAPTER_PARTS if chapter == self.chapter else ZH_CHAPTER_PARTS
        return words.say("part", chapter=shown(chapter), part=parts[-1])

    @property
    def quiz_file(self) -> Path:
        return ROOT / "chapters" / f"{self.name}.quiz.toml"

    @property
    def reader_quiz(self) -> Path:
        zh = ZH / self.quiz_file.name
        return zh if self.edition == "zh" and zh.is_file() else self.quiz_file

    @property
    def tests_dir(self) -> Path:
        return ROOT / "judge" / "tests" / self.name

    @property
    def mistakes_dir(self) -> Path:
        return ROOT / "judge" / "mistakes" / self.name

    @property
    def bench_dir(self) -> Path:
        return ROOT / "judge" / "bench" / self.name

    def stage_points(self) -> tuple[float, ...]:
        """What each stage is worth when graded: the catalog's `points`, or equal shares of 100
        when the exercise's stages give none (the catalog gives all or none)."""
        if any(s.points for s in self.stages):
            return tuple(s.points for s in self.stages)
        return tuple(100 / len(self.stages) for _ in self.stages)

    def stage_for_suite(self, suite: str) -> Stage | None:
        return next((s for s in self.stages if s.suite == suite), None)


@dataclass(frozen=True)
class Catalog:
    exercises: tuple[Exercise, ...]
    limits: Limits
    format_version: int = FORMAT_VERSION

    def resolve(self, name: str) -> Exercise:
        """`1`, `01`, `arena` and `01-arena` all name exercise 01."""
        key = name.strip().lower()
        for ex in self.exercises:
            if key in (str(ex.id), f"{ex.id:02d}", ex.slug, ex.name):
                return ex
        known = words.listing(f"{ex.id} ({ex.slug})" for ex in self.exercises)
        raise CatalogError(words.say("no_exercise", name=name, known=known))


def load(path: Path = CATALOG) -> Catalog:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise CatalogError(f"cannot read the catalog {path}: {err}") from None
    version = data.get("format_version", 1)
    if version != FORMAT_VERSION:
        raise CatalogError(f"the catalog {shown(path)} has format_version = {version!r}"
                           f"{' (none given: version 1)' if 'format_version' not in data else ''}, and this judge "
                           f"reads format_version = {FORMAT_VERSION} only (docs/authoring.md describes it)")
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


def _points(stage: dict) -> float:
    points = stage.get("points", 0)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0 or "points" in stage and not points:
        raise ValueError(f"stage {stage.get('suite', '?')}: points is a positive number, not {points!r}")
    return float(points)


def _test_points(raw: dict) -> float:
    points = raw.get("test_points", 0)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
        raise ValueError(f"exercise {raw.get('slug', '?')}: test_points is a number of points, 0 or more, not {points!r}")
    return float(points)


def _program(stage: dict) -> str:
    """A stage whose tests are costly to build (exercise 07's engine) keeps them in a subfolder of
    the exercise's tests, `program`, which CMake builds into a program of its own: the judge builds
    it only once every stage before it passes, so a learner whose first stage fails does not wait
    for it."""
    program = stage.get("program", "")
    if not isinstance(program, str) or program and not re.fullmatch(r"[a-z][a-z0-9-]*", program):
        raise ValueError(f"stage {stage.get('suite', '?')}: program is the name of a subfolder of the exercise's "
                         f"tests, in lower case, not {program!r}")
    return program


def _exercise(raw: dict) -> Exercise:
    if "hints" in raw:
        raise ValueError(f"exercise {raw.get('slug', '?')} gives hints of its own; hints belong to its stages")
    sanitizers = tuple(raw.get("sanitizers", ["asan"]))
    stages = tuple(
        Stage(
            number=i,
            suite=st["suite"],
            title=st.get("title", st["suite"]),
            goal=st.get("goal", ""),
            sanitizers=tuple(st.get("sanitizers", sanitizers)),
            hints=tuple(_hint(h) for h in st.get("hints", [])),
            points=_points(st),
            program=_program(st),
        )
        for i, st in enumerate(raw.get("stage", []), start=1)
    )
    if any(s.points for s in stages) and not all(s.points for s in stages):
        raise ValueError(f"exercise {raw.get('slug', '?')}: either every stage gives its points or none does "
                         "(then each is worth an equal share of 100)")
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
        test_hints=tuple(h.strip() for h in raw.get("test_hints", [])),
        test_points=_test_points(raw),
    )


def tests_in_source(exercise: Exercise) -> dict[str, list[str]]:
    """The tests each suite contains, read from the test files' text. The catalog's check reads
    suites from it without a build; a verdict counts the tests from the test binary instead
    (listing.py), which sees what the preprocessor and the parameterized tests make of them,
    and falls back to this only when the reference itself cannot be built."""
    suites: dict[str, list[str]] = {}
    for path in sorted(exercise.tests_dir.glob("*.cpp")) + sorted(exercise.tests_dir.glob("*/*.cpp")):
        for suite, name in TEST_OPENING.findall(path.read_text(encoding="utf-8")):
            suites.setdefault(suite, []).append(name)
    return suites


# -- the Chinese edition of the catalog's words ------------------------------------------------

def english_words(exercise: Exercise) -> dict:
    """What judge/catalog.zh.toml translates of an exercise: its title, summary and hints for
    writing tests, and each stage's suite, title, goal and hints."""
    words_of = {"title": exercise.title, "summary": exercise.summary}
    if exercise.test_hints:   # an exercise written before there were any keeps its digest
        words_of["test_hints"] = list(exercise.test_hints)
    return {**words_of,
            "stages": [{"suite": s.suite, "title": s.title, "goal": s.goal,
                        "hints": [{"level": h.level, "text": h.text, "tests": list(h.tests)} for h in s.hints]}
                       for s in exercise.stages]}


def words_digest(exercise: Exercise) -> str:
    """The SHA-256 of the exercise's English words as canonical JSON (sorted keys, no spaces,
    UTF-8): a translation's `follows`, which changes with those words and nothing else."""
    text = json.dumps(english_words(exercise), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def translations(path: Path = ZH_CATALOG) -> dict[int, dict]:
    """The Chinese catalog's [[exercise]] tables by id; none when it is missing or unreadable
    (the learner then reads English, and `check` says what is wrong with the file)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    tables = data.get("exercise", []) if isinstance(data, dict) else []
    return {t["id"]: t for t in tables if isinstance(t, dict) and isinstance(t.get("id"), int)} \
        if isinstance(tables, list) else {}


def translated(exercise: Exercise, table: dict | None = None, path: Path = ZH_CATALOG,
               language: str | None = None) -> Exercise:
    """The exercise in the learner's language (or in `language`: the docs build both). In
    Chinese, each text the Chinese catalog gives replaces the English one; a text it lacks, or a
    stage whose hints do not match the English ones (in number, levels and tests), stays English."""
    if (language or words.language()) != "zh" or exercise.edition == "zh":
        return exercise
    if table is None:
        table = translations(path).get(exercise.id, {})
    raw_stages = table.get("stage", [])
    by_suite = {s.get("suite"): s for s in raw_stages if isinstance(s, dict)} if isinstance(raw_stages, list) else {}
    stages = tuple(_translated_stage(s, by_suite.get(s.suite, {})) for s in exercise.stages)
    raw_hints = table.get("test_hints")
    test_hints = exercise.test_hints
    if isinstance(raw_hints, list) and len(raw_hints) == len(test_hints) and all(isinstance(h, str) for h in raw_hints):
        test_hints = tuple(h.strip() for h in raw_hints)
    return replace(exercise, title=_text(table, "title", exercise.title),
                   summary=_text(table, "summary", exercise.summary), stages=stages, test_hints=test_hints,
                   edition="zh")


def translated_catalog(catalog: Catalog, path: Path = ZH_CATALOG) -> Catalog:
    if words.language() != "zh":
        return catalog
    tables = translations(path)
    return replace(catalog, exercises=tuple(translated(ex, tables.get(ex.id, {})) for ex in catalog.exercises))


def _text(table: dict, key: str, english: str) -> str:
    value = table.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else english


def _translated_stage(stage: Stage, table: dict) -> Stage:
    hints = stage.hints
    raw = table.get("hints")
    if isinstance(raw, list) and len(raw) == len(stage.hints):
        try:
            zh = tuple(_hint(h) for h in raw)
        except ValueError:
            zh = ()
        if [(h.level, h.tests) for h in zh] == [(h.level, h.tests) for h in stage.hints]:
            hints = zh
    return replace(stage, title=_text(table, "title", stage.title), goal=_text(table, "goal", stage.goal),
                   hints=hints)
