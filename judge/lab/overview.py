"""The learner's progress over the whole kit, as `list` prints it and `watch` shows it: each
exercise passed (✓), the stage reached, or not started, and an overall progress bar."""
from __future__ import annotations

from pathlib import Path

from . import progress, ui
from .catalog import Catalog, Exercise


def state_of(exercise: Exercise, path: Path = progress.STATE) -> tuple[str, int | None]:
    """("passed" | "failing" | "not started", the first failing stage when failing)."""
    entry = progress.status(exercise, path)
    status = entry.get("status")
    if status == "passed":
        return "passed", None
    if status == "failing":
        stage = entry.get("stage")
        return "failing", stage if isinstance(stage, int) else None
    return "not started", None


def passed_count(catalog: Catalog, path: Path = progress.STATE) -> int:
    return sum(state_of(ex, path)[0] == "passed" for ex in catalog.exercises)


def status_text(exercise: Exercise, path: Path = progress.STATE, colour: bool = True) -> str:
    state, stage = state_of(exercise, path)
    paint = ui.paint if colour else (lambda text, _: text)
    if state == "passed":
        return paint(f"{ui.OK} passed", "green")
    if state == "failing":
        return paint(f"{ui.FAIL} at stage {stage} of {len(exercise.stages)}" if stage else f"{ui.FAIL} failing",
                     "yellow")
    return "not started"


def render(catalog: Catalog, path: Path = progress.STATE) -> str:
    lines = []
    width = max([44, *(len(ex.title) for ex in catalog.exercises)])
    for ex in catalog.exercises:
        lines.append(f"{ex.id:02d}  {ex.title:<{width}} {ex.difficulty:<7} {status_text(ex, path)}")
        lines.append(ui.paint(f"    {ex.summary}", "dim"))
    lines.append("")
    lines.append(f"Progress {ui.bar(passed_count(catalog, path), len(catalog.exercises))}")
    return "\n".join(lines)


def summary(catalog: Catalog, path: Path = progress.STATE) -> str:
    """One line: the bar, then every exercise's state in a word or two."""
    parts = []
    for ex in catalog.exercises:
        state, stage = state_of(ex, path)
        if state == "passed":
            parts.append(f"{ex.id:02d} {ui.OK}")
        elif state == "failing":
            parts.append(f"{ex.id:02d} stage {stage}/{len(ex.stages)}" if stage else f"{ex.id:02d} {ui.FAIL}")
        else:
            parts.append(f"{ex.id:02d} ·")
    return f"{ui.bar(passed_count(catalog, path), len(catalog.exercises), width=12)}  " + "  ".join(parts)


def next_hint(exercise: Exercise, path: Path = progress.STATE) -> str:
    """The next hint, with its number, as `hint` prints it and `watch` shows it for `h`."""
    hint = progress.next_hint(exercise, path)
    if hint is None:
        return (f"You have seen all {len(exercise.hints)} hints for exercise {exercise.id:02d}. The chapter, "
                f"chapters/{exercise.name}.md, explains the design and its pitfalls; `judge.py test {exercise.id} -v` "
                "shows every message.")
    number, text = hint
    heading = f"Hint {number} of {len(exercise.hints)} for exercise {exercise.id:02d} ({exercise.title}):"
    return ui.paint(heading, "bold") + "\n" + text
