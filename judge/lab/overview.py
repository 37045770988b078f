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


def _in_suite(test: str) -> str:
    """`Suite.Name`, `Prefix/Suite.Name/0` -> `Name`: a test as the catalog's hints name it."""
    return test.split(".", 1)[-1].split("/", 1)[0]


def next_hint(exercise: Exercise, path: Path = progress.STATE) -> str:
    """The next hint for the first failing test of the first stage that fails, by the last
    verdict in the progress file, as `hint` prints it and `watch` shows it for `h`: that test's
    own hints first, when the catalog gives it some, then the stage's. The caller makes sure
    that verdict describes the file as it is (`hint` judges it again when it does not)."""
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
    failing = progress.failing_test(exercise, path) if state == "failing" else None
    test = _in_suite(failing) if failing else ""
    named = f"{current.suite}.{test}"
    lead = (f"Stage {number} ({current.title}) is the first stage that fails" if state == "failing"
            else f"Stage {number} ({current.title})")
    lead += f"; its first failing test is {named}." if test else "." if state == "failing" else ":"
    lines = [ui.paint(textwrap.fill(lead, max(shutil.get_terminal_size((100, 24)).columns - 1, 40)), "dim")]
    own = current.hints_for(test) if test else ()
    if own:
        which, new = progress.take_test_hint(exercise, number, test, path)
        if new:
            hint, total, of = own[which - 1], len(own), named
            last = (f"That was the last hint for {named}; asked again, `hint` gives the hints for the whole stage."
                    if current.stage_hints else f"That was the last hint for {named}.")
            return _hint_text(lines, exercise, hint, which, total, of, new=True, last=last)
    if not current.stage_hints:
        if own:  # every hint of the test shown, and the stage has none of its own
            return _hint_text(lines, exercise, own[-1], len(own), len(own), named, new=False, last="")
        return "\n".join(lines[:1] + [f"Stage {number} ({current.title}) has no hints; "
                                       f"{shown(exercise.chapter)} explains it."])
    which, new = progress.take_hint(exercise, number, path)
    if own and new and which == 1:
        lines.append(f"You have seen all {len(own)} hints for {named}; now the hints for the whole stage.")
    if own and not new:  # the test's and the stage's hints all shown: the test's last one again
        return _hint_text(lines, exercise, own[-1], len(own), len(own), named, new=False, last="",
                          also=f" and all {len(current.stage_hints)} for stage {number}")
    return _hint_text(lines, exercise, current.stage_hints[which - 1], which, len(current.stage_hints),
                      f"stage {number}", new=new, last=f"That was the last hint for stage {number}.")


def _hint_text(lines: list[str], exercise: Exercise, hint, which: int, total: int, of: str, *, new: bool,
               last: str, also: str = "") -> str:
    """The hint under its heading ("Hint 2 of 3 for stage 4 (approach):"), wrapped to the terminal."""
    if not new:
        lines.append(f"You have seen all {total} hints for {of}{also}. The last one again:")
    heading = f"Hint {which} of {total} for {of} ({hint.level}):"
    text = textwrap.fill(f"{heading} {hint.text}", max(shutil.get_terminal_size((100, 24)).columns - 1, 40))
    lines.append(ui.paint(heading, "bold") + text[len(heading):])  # painted after wrapping: codes have no width
    if not new:
        lines.append(f'Still stuck? The part "The task" of {shown(exercise.chapter)} states the contract, and '
                     f"`python3 judge/judge.py test {exercise.id} -v` shows every message.")
    elif which == total and last:
        lines.append(ui.paint(last, "dim"))
    return "\n".join(lines)
