"""The learner's progress over the whole kit, as `list` prints it and `watch` shows it: each
exercise passed (✓), the stage reached, does not compile, one stage judged alone, or not
started; the hints taken and the quiz score; an overall progress bar. And the next hint, for
the first stage that fails."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from . import course, progress, ui
from .catalog import Catalog, Exercise, shown

# What the last verdict said, as progress.record wrote it.
STATES = ("passed", "failing", "does not compile", "stage passed", "stage failed")


def state_of(exercise: Exercise, path: Path = progress.STATE) -> tuple[str, int | None]:
    """(one of STATES or "not started", the stage the state is about: the first failing one, or
    the one judged alone)."""
    entry = progress.status(exercise, path)
    status, stage = entry.get("status"), entry.get("stage")
    if status not in STATES:
        return "not started", None
    return status, stage if isinstance(stage, int) and 1 <= stage <= len(exercise.stages) else None


def passed_count(catalog: Catalog, path: Path = progress.STATE) -> int:
    return sum(state_of(ex, path)[0] == "passed" for ex in catalog.exercises)


def status_text(exercise: Exercise, path: Path = progress.STATE, colour: bool = True) -> str:
    state, stage = state_of(exercise, path)
    paint = ui.paint if colour else (lambda text, _: text)
    of = f"{stage} of {len(exercise.stages)}"
    if state == "passed":
        return paint(f"{ui.OK} passed", "green")
    text = {
        "failing": f"{ui.FAIL} at stage {of}" if stage else f"{ui.FAIL} failing",
        "does not compile": f"{ui.FAIL} does not compile",
        "stage passed": f"stage {of} passes (judged alone)",
        "stage failed": f"{ui.FAIL} stage {of} fails (judged alone)",
    }.get(state, "not started")
    if progress.status(exercise, path).get("passed_once"):
        text += " · passed once"
    return text if state == "not started" else paint(text, "yellow")


def extras(exercise: Exercise, path: Path = progress.STATE) -> str:
    """The hints taken and the quiz score, in a few words; empty when there is neither."""
    parts = []
    taken = progress.hints_taken(exercise, path)
    if taken:
        parts.append("hints taken: " + ", ".join(f"{n} for stage {s}" for s, n in sorted(taken.items())))
    quiz = progress.status(exercise, path).get("quiz")
    if isinstance(quiz, dict) and isinstance(quiz.get("right"), int) and isinstance(quiz.get("of"), int):
        parts.append(f"quiz: {quiz['right']} of {quiz['of']} right")
    return " · ".join(parts)


def render(catalog: Catalog, path: Path = progress.STATE) -> str:
    lines = []
    width = max([44, *(len(ex.title) for ex in catalog.exercises)])
    for ex in catalog.exercises:
        lines.append(f"{ex.id:02d}  {ex.title:<{width}} {ex.difficulty:<7} {status_text(ex, path)}")
        lines.append(ui.paint(f"    {ex.summary}", "dim"))
        more = extras(ex, path)
        if more:
            lines.append(f"    {more}")
    lines.append("")
    lines.append(f"Progress {ui.bar(passed_count(catalog, path), len(catalog.exercises))}")
    return "\n".join(lines)


def summary(catalog: Catalog, path: Path = progress.STATE) -> str:
    """One line: the bar, then every exercise's state in a word or two."""
    parts = []
    for ex in catalog.exercises:
        state, stage = state_of(ex, path)
        word = {
            "passed": ui.OK,
            "failing": f"stage {stage}/{len(ex.stages)}" if stage else ui.FAIL,
            "does not compile": f"{ui.FAIL} compile",
            "stage passed": f"stage {stage} {ui.OK}",
            "stage failed": f"stage {stage} {ui.FAIL}",
        }.get(state, "·")
        parts.append(f"{ex.id:02d} {word}")
    return f"{ui.bar(passed_count(catalog, path), len(catalog.exercises), width=12)}  " + "  ".join(parts)


def next_hint(exercise: Exercise, path: Path = progress.STATE) -> str:
    """The next hint of the first stage that fails, by the last verdict in the progress file,
    as `hint` prints it and `watch` shows it for `h`. The caller makes sure that verdict
    describes the file as it is (`hint` judges it again when it does not)."""
    state, stage = state_of(exercise, path)
    if state == "passed":
        return (ui.paint(f"{ui.OK} Exercise {exercise.id:02d} passes every stage: no hint needed.", "green") +
                f" Now read {course.after_you_pass(exercise)}: the mistakes the tests catch and the decisions the "
                "reference makes.")
    if state == "does not compile":
        return (f"{ui.FAIL} Your {exercise.header} does not compile, and no hint is about the compiler: fix the "
                f"first error that `python3 judge/judge.py test {exercise.id}` shows, then ask again.")
    number = stage if state == "failing" and stage else 1
    current = exercise.stages[number - 1]
    if not current.hints:
        return f"Stage {number} ({current.title}) has no hints; {shown(exercise.chapter)} explains it."
    which, new = progress.take_hint(exercise, number, path)
    hint = current.hints[which - 1]
    total = len(current.hints)
    lines = [ui.paint(f"Stage {number} ({current.title}) is the first stage that fails." if state == "failing"
                      else f"Stage {number} ({current.title}):", "dim")]
    if not new:
        lines.append(f"You have seen all {total} hints for stage {number}. The last one again:")
    heading = f"Hint {which} of {total} for stage {number} ({hint.level}):"
    text = textwrap.fill(f"{heading} {hint.text}", max(shutil.get_terminal_size((100, 24)).columns - 1, 40))
    lines.append(ui.paint(heading, "bold") + text[len(heading):])  # painted after wrapping: codes have no width
    if not new:
        lines.append(f'Still stuck? The part "The task" of {shown(exercise.chapter)} states the contract, and '
                     f"`python3 judge/judge.py test {exercise.id} -v` shows every message.")
    elif which == total:
        lines.append(ui.paint(f"That was the last hint for stage {number}.", "dim"))
    return "\n".join(lines)
