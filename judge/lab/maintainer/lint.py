"""The course linter: every way the catalog disagrees with itself, with the exercises' code and
tests, or with the course's shape (chapters and quizzes, course.py). `check` runs it first."""
from __future__ import annotations

import re
from pathlib import Path

from . import course, editions
from ..learner.serve import MANAGER_HEADER
from .mistakes import mistakes, model_problems, model_table_problems, serving_table_problems
from ..model.catalog import CATALOG, HINT_LEVELS, ROOT, SANITIZERS, Catalog, Hint, shown, tests_in_source

DIFFICULTIES = ("easy", "medium", "hard")
_SLUG_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
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


HINT_WIDTH = 100


def hint_layout_problems(path: Path = CATALOG) -> list[str]:
    """Hints are written for review: each a multi-line string, its lines at most HINT_WIDTH
    columns (docs/authoring.md, "Hints")."""
    problems, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{shown(path)}:{number}"
        if not inside and re.search(r'\btext = "(?!"")', line):
            problems.append(f'{where}: a hint on one line; write it as text = """\\ with its lines wrapped at '
                            f"{HINT_WIDTH} columns")
        elif inside and len(line) > HINT_WIDTH and " " in line.strip():
            problems.append(f"{where}: a hint's line is {len(line)} columns long; wrap it at {HINT_WIDTH}")
        if line.count('"""') % 2:
            inside = not inside
    return problems


def validate(catalog: Catalog) -> list[str]:
    """Every way the catalog disagrees with itself or with the files, the course's chapters and
    quizzes included; empty when valid."""
    problems = catalog_problems(catalog) + hint_layout_problems()
    problems += model_table_problems(list(catalog.exercises), ROOT / "docs" / "authoring.md")
    served = [ex for ex in catalog.exercises if ex.header == MANAGER_HEADER]
    if served:
        problems += serving_table_problems(served[0], ROOT / "docs" / "authoring.md")
    for ex in catalog.exercises:
        problems.extend(f"exercise {ex.name}: {p}" for p in course.problems(ex))
    problems += editions.problems(catalog)
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
        if len(ex.test_hints) < 3:
            problems.append(f"{where}: test_hints gives {len(ex.test_hints)} hints for writing tests of the contract; "
                            "give at least three, from the idea to an assertion")
        mine = ex.exercise_file.parent / "my_tests.cpp"
        if not mine.is_file():
            problems.append(f"{where}: {mine.relative_to(ROOT)} is missing: the learner's own tests start from it")
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
        programs = {st.program for st in ex.stages if st.program}
        for st in ex.stages:
            if st.program and not any(re.search(rf"^\s*\w*TEST\w*\(\s*{st.suite}\s*,", p.read_text(encoding="utf-8"), re.M)
                                      for p in (ex.tests_dir / st.program).glob("*.cpp")):
                problems.append(f"{where}: stage {st.number} is program {st.program!r}, but no test file of "
                                f"{(ex.tests_dir / st.program).relative_to(ROOT)} defines suite {st.suite}")
        for folder in sorted(p for p in ex.tests_dir.glob("*") if p.is_dir()) if ex.tests_dir.is_dir() else []:
            if folder.name not in programs:
                problems.append(f"{where}: {folder.relative_to(ROOT)} is built as a program of its own, but no "
                                f"stage names it as its program")
        last = ex.stages[-1] if ex.stages else None
        if last and not (last.suite.endswith("Model") and "model" in last.title):
            problems.append(f"{where}: the last stage must be the model stage, a suite named <Exercise>Model "
                            f"whose title says \"model\", not {last.suite} ({last.title!r})")
        elif last:
            problems.extend(f"{where}: {p}" for p in model_problems(last.suite, mistakes(ex)))
            for path in sorted(ex.tests_dir.glob("*_model.cpp")):
                if re.search(rf'^\s*#\s*include\s*"{re.escape(ex.header)}"', path.read_text(encoding="utf-8"), re.M):
                    problems.append(f"{where}: {path.name} includes {ex.header}: the model stage's generators must "
                                    "not, so that an edit of the header never recompiles them (the run of a "
                                    "sequence goes in model_run.cpp)")
        staged = {st.suite for st in ex.stages}
        for suite in sorted(set(in_source) - staged):
            problems.append(f"{where}: suite {suite} belongs to no stage, so it would never be judged")
        if ex.bench_dir.is_dir() and not ex.bench_subject:
            problems.append(f"{where}: has benchmarks but no bench_subject")
    return problems
