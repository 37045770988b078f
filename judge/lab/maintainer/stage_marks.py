"""A stage tests only what the skeleton asks of it by then. The skeleton marks each member with
the stage that first asks for it (`/// Stage 3: the largest used() ever seen`), and a learner
who does the stages in order writes nothing earlier; so a test of stage 1 that calls `peak()`
fails a learner who followed stage 1 exactly. `check` reads the skeleton's marks and every
stage's test files, without a build, and names each call of a member marked for a later stage."""
from __future__ import annotations

import re
from pathlib import Path

from ..model.catalog import TEST_OPENING, Exercise, shown
from .mutate import code_mask

# "Stage 3", "Stage 1 to 4", "Stages 2 and 3": the first number is the stage that first asks.
_MARK_RE = re.compile(r"\bStages? (\d+)")
_ATTRIBUTE_RE = re.compile(r"\[\[.*?\]\]")
_CLASS_RE = re.compile(r"^\s*(?:template\s*<.*>\s*)?(?:class|struct)\s+(\w+)(?!.*;\s*$)")
_TEMPLATE_RE = re.compile(r"^\s*template\s*<.*>\s*$")
_FUNCTION_RE = re.compile(r"(~?\w+)\s*\(")
_NOT_A_NAME = {"operator", "explicit", "return", "if", "while", "for", "switch", "sizeof", "alignof",
               "static_assert", "decltype", "noexcept"}


def marks(skeleton: Path) -> dict[str, int]:
    """Each member function and class the skeleton marks, with the earliest stage its comments
    name. A member with no mark of its own inherits its class's."""
    text = skeleton.read_text(encoding="utf-8")
    lines, code = text.split("\n"), code_mask(text)
    found: dict[str, int] = {}
    comment: list[int] = []                 # the stages named by the comment just above
    classes: list[tuple[int, int | None]] = []  # (brace depth inside the class, its stage)
    depth = 0
    for raw, masked in zip(lines, code):
        stripped = raw.strip()
        if stripped.startswith("//"):
            comment += [int(n) for n in _MARK_RE.findall(stripped)]
            continue
        if not masked.strip() or _TEMPLATE_RE.match(masked):
            # A blank line parts a comment from what follows; a template head does not.
            comment = [] if not stripped else comment
            continue
        inherited = next((stage for _, stage in reversed(classes) if stage is not None), None)
        stage = min(comment) if comment else inherited
        declaration = _ATTRIBUTE_RE.sub("", masked)
        opened = _CLASS_RE.match(declaration)
        # A declaration sits in a class's body or in the namespace, never in a function's body.
        at_declaration_depth = depth == classes[-1][0] if classes else depth <= 1
        if opened:
            if stage is not None:
                found[opened.group(1)] = min(stage, found.get(opened.group(1), stage))
            if "{" in masked:
                classes.append((depth + 1, stage))
        elif at_declaration_depth and "(" in declaration:
            # A member with no mark, in a class with none, is asked for from the first stage.
            stage = 1 if stage is None else stage
            name = next((n for n in _FUNCTION_RE.findall(declaration) if n not in _NOT_A_NAME), "")
            if name and not name.startswith("~"):
                found[name] = min(stage, found.get(name, stage))
        depth += masked.count("{") - masked.count("}")
        while classes and depth < classes[-1][0]:
            classes.pop()
        comment = []
    return found


def _test_stages(ex: Exercise) -> dict[Path, list[tuple[int, int, str]]]:
    """Each test file's tests: (the line it opens at, its stage, Suite.Name), in file order."""
    stage_of = {st.suite: st.number for st in ex.stages}
    files: dict[Path, list[tuple[int, int, str]]] = {}
    for path in sorted(ex.tests_dir.glob("*.cpp")) + sorted(ex.tests_dir.glob("*/*.cpp")):
        text = path.read_text(encoding="utf-8")
        for m in TEST_OPENING.finditer(text):
            if m.group(1) in stage_of:
                line = text.count("\n", 0, m.start()) + 1
                files.setdefault(path, []).append((line, stage_of[m.group(1)], f"{m.group(1)}.{m.group(2)}"))
    return files


def problems(ex: Exercise) -> list[str]:
    """Every call, in a test of stage K, of a member or class the skeleton first marks for a
    stage after K."""
    if not ex.exercise_file.is_file() or not ex.tests_dir.is_dir():
        return []
    marked = {name: stage for name, stage in marks(ex.exercise_file).items() if stage > 1}
    if not marked:
        return []
    members = "|".join(sorted(map(re.escape, marked)))
    call = re.compile(rf"(?:\.|->)\s*({members})\s*(?:<[^;(]*>)?\s*\(|\b({members})\b")
    found = []
    for path, tests in _test_stages(ex).items():
        lines = code_mask(path.read_text(encoding="utf-8"))
        for number, code in enumerate(lines, start=1):
            # The lines above a file's first test (its helpers) belong to its earliest stage.
            owner = [t for t in tests if t[0] <= number]
            _, stage, test = owner[-1] if owner else min(tests, key=lambda t: t[1])
            for m in call.finditer(code):
                name = m.group(1) or m.group(2)
                if m.group(2) and not name[0].isupper():
                    continue  # a bare lower-case name is a free function or a variable, not a class
                if marked[name] > stage:
                    found.append(f"{shown(path)}:{number}: {test} (stage {stage}) uses {name}, which "
                                 f"{shown(ex.exercise_file)} marks for stage {marked[name]}: a learner who "
                                 f"does the stages in order fails stage {stage} with a correct {name} still "
                                 f"to write. Move the assertion to a test of stage {marked[name]}.")
    return found
