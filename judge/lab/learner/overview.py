"""The learner's progress over the whole kit, as `list` prints it and `watch` shows it: each
exercise passed (✓), the stage reached, does not compile, one stage judged alone, or not
started; the hints taken, the quiz score and the score of the learner's own tests; an overall progress bar. And the next hint, for
the first stage that fails."""
from __future__ import annotations

import shutil
from dataclasses import dataclass

from ..model.progress import Progress, Standing
from .. import ui
from ..model.catalog import Catalog, Exercise, Hint, shown, translated, translated_catalog
from ..model.words import WORDS, listing, plural, say, then

def passed_count(catalog: Catalog, progress: Progress) -> int:
    return sum(progress.standing(ex)[0] == Standing.PASSED for ex in catalog.exercises)


def status_text(exercise: Exercise, progress: Progress, colour: bool = True) -> str:
    standing, stage = progress.standing(exercise)
    paint = ui.paint if colour else (lambda text, _: text)
    of = dict(stage=stage, count=len(exercise.stages))
    if standing == Standing.PASSED:
        return paint(say("passed", mark=ui.OK), "green")
    text = {
        Standing.FAILING: say("at_stage", mark=ui.FAIL, **of) if stage else say("failing", mark=ui.FAIL),
        Standing.NOT_COMPILING: say("compile_fails", mark=ui.FAIL),
        Standing.STAGE_PASSED: say("stage_alone_passes", **of),
        Standing.STAGE_FAILED: say("stage_alone_fails", mark=ui.FAIL, **of),
    }.get(standing, say("not_started"))
    if progress.entry(exercise).get("passed_once"):
        text += say("passed_once")
    return text if standing == Standing.NOT_STARTED else paint(text, "yellow")


def extras(exercise: Exercise, progress: Progress) -> str:
    """The hints taken and the quiz score, in a few words; empty when there is neither."""
    parts = []
    taken = progress.hints_taken(exercise)
    if taken:
        parts.append(say("hints_taken", taken=listing(say("hints_for_stage", count=n, stage=s)
                                                      for s, n in sorted(taken.items()))))
    score = progress.quiz_score(exercise)
    if score:
        parts.append(say("quiz_score", right=score[0], total=score[1]))
    tests = tests_score(exercise, progress)
    if tests:
        parts.append(tests)
    return " · ".join(parts)


def tests_score(exercise: Exercise, progress: Progress) -> str:
    """The last verdict of `examine` on the learner's own tests, in a few words; empty when none."""
    score = progress.tests_score(exercise)
    if score is None:
        return ""
    valid, caught, total = score
    return say("tests_score", caught=caught, total=total) if valid else say("tests_score_invalid")


def render(catalog: Catalog, progress: Progress) -> str:
    catalog = translated_catalog(catalog)
    lines = []
    width = max([44, *(ui.columns(ex.title) for ex in catalog.exercises)])
    for ex in catalog.exercises:
        difficulty = say(f"difficulty_{ex.difficulty}") if f"difficulty_{ex.difficulty}" in WORDS else ex.difficulty
        lines.append(f"{ex.id:02d}  {ui.pad(ex.title, width)} {ui.pad(difficulty, 7)} {status_text(ex, progress)}")
        # Wrapped here, between words (between characters in Chinese): the terminal would cut words.
        lines.append(ui.paint(_wrap(ex.summary, "    "), "dim"))
        more = extras(ex, progress)
        if more:
            lines.append(_wrap(more, "    "))
    lines.append("")
    lines.append(say("progress", bar=ui.bar(passed_count(catalog, progress), len(catalog.exercises))))
    return "\n".join(lines)


def summary(catalog: Catalog, progress: Progress) -> str:
    """One line: the bar, then every exercise's state in a word or two."""
    parts = []
    for ex in catalog.exercises:
        standing, stage = progress.standing(ex)
        word = {
            Standing.PASSED: ui.OK,
            Standing.FAILING: say("summary_stage", stage=stage, count=len(ex.stages)) if stage else ui.FAIL,
            Standing.NOT_COMPILING: say("summary_compile", mark=ui.FAIL),
            Standing.STAGE_PASSED: say("summary_alone", stage=stage, mark=ui.OK),
            Standing.STAGE_FAILED: say("summary_alone", stage=stage, mark=ui.FAIL),
        }.get(standing, "·")
        parts.append(f"{ex.id:02d} {word}")
    return f"{ui.bar(passed_count(catalog, progress), len(catalog.exercises), width=12)}  " + "  ".join(parts)


def _in_suite(test: str) -> str:
    """`Suite.Name`, `Prefix/Suite.Name/0` -> `Name`: a test as the catalog's hints name it."""
    return test.split(".", 1)[-1].split("/", 1)[0]


@dataclass(frozen=True)
class _Shown:
    """One hint as `hint` shows it: which of how many, of what, and whether it is new."""
    hint: Hint
    which: int
    total: int
    of: str
    new: bool
    last: str = ""      # said under the last hint of a list, the first time it is shown
    also: str = ""      # the other hints seen, said when the last one is shown again
    preface: str = ""   # said before it


def take_next_hint(exercise: Exercise, progress: Progress) -> str:
    """The next hint for the first failing test of the first stage that fails, by the last
    verdict in `progress`, as `hint` prints it and `watch` shows it for `h`: that test's own
    hints first, when the catalog gives it some, then the stage's. Counts it as taken in
    `progress`, which the caller saves. The caller makes sure that verdict describes the file as
    it is (`hint` judges it again when it does not)."""
    exercise = translated(exercise)
    standing, stage = progress.standing(exercise)
    if standing == Standing.PASSED:
        return (ui.paint(say("hint_passed", mark=ui.OK, id=exercise.id), "green") +
                say("hint_read_after", where=exercise.after_you_pass))
    if standing == Standing.NOT_COMPILING:
        return say("hint_not_compiling", mark=ui.FAIL, header=exercise.header, id=exercise.id)
    failing = standing == Standing.FAILING
    number = stage if failing and stage else 1
    current = exercise.stages[number - 1]
    recorded = progress.failing_test(exercise) if failing else None
    test = _in_suite(recorded) if recorded else ""
    named = f"{current.suite}.{test}"
    lead = say("lead_stage", number=number, title=current.title) + (say("lead_fails") if failing else "")
    lead += say("lead_test", test=named) if test else say("lead_end") if failing else say("lead_colon")
    shown_hint = _choose(exercise, progress, number, test)
    if shown_hint is None:
        return "\n".join([ui.paint(_wrap(lead), "dim"),
                          say("no_hints", number=number, title=current.title, chapter=shown(exercise.reader_chapter))])
    return _render(exercise, lead, shown_hint)


def _choose(exercise: Exercise, progress: Progress, number: int, test: str) -> _Shown | None:
    """The hint to show for stage `number` and its failing `test`, taken in `progress`."""
    current = exercise.stages[number - 1]
    own = current.hints_for(test) if test else ()
    named = f"{current.suite}.{test}"
    if own:
        which, new = progress.take_hint(exercise, number, test)
        if new:
            last = say("last_test_hint_then_stage" if current.stage_hints else "last_test_hint", test=named)
            return _Shown(own[which - 1], which, len(own), named, True, last)
    if not current.stage_hints:  # the test's hints all shown, or none at all
        return _Shown(own[-1], len(own), len(own), named, False) if own else None
    which, new = progress.take_hint(exercise, number)
    if own and not new:  # the test's and the stage's hints all shown: the test's last one again
        return _Shown(own[-1], len(own), len(own), named, False,
                      also=say("also_stage", count=len(current.stage_hints), number=number))
    preface = say("now_stage_hints", count=len(own), test=named) if own and new and which == 1 else ""
    return _Shown(current.stage_hints[which - 1], which, len(current.stage_hints), say("of_stage", number=number),
                  new, say("last_stage_hint", number=number), preface=preface)


def _wrap(text: str, indent: str = "") -> str:
    return ui.wrap(text, max(shutil.get_terminal_size((100, 24)).columns - 1, 40), indent, indent)


def _render(exercise: Exercise, lead: str, s: _Shown) -> str:
    """The hint under its heading ("Hint 2 of 3 for stage 4 (approach):"), wrapped to the terminal."""
    lines = [ui.paint(_wrap(lead), "dim")]
    if s.preface:
        lines.append(s.preface)
    if not s.new:
        lines.append(say("seen_all", total=s.total, of=s.of, also=s.also))
    heading = say("hint_heading", which=s.which, total=s.total, of=s.of, level=say(f"level_{s.hint.level}"))
    text = _wrap(then(heading, s.hint.text))
    lines.append(ui.paint(heading, "bold") + text[len(heading):])  # painted after wrapping: codes have no width
    if not s.new:
        lines.append(say("still_stuck", chapter=shown(exercise.reader_chapter), id=exercise.id))
    elif s.which == s.total and s.last:
        lines.append(ui.paint(s.last, "dim"))
    return "\n".join(lines)


def hints_seen(exercise: Exercise, progress: Progress) -> str:
    """Every hint `hint` has shown for the exercise, in the order it gave them, to read again
    (`hint N --all`); takes none."""
    exercise = translated(exercise)
    seen = progress.hints_seen(exercise)
    if not seen:
        return say("no_hints_seen", id=exercise.id)
    count = sum(n for _, _, n in seen)
    lines = [say("hints_seen", count=count, s=plural(count), id=exercise.id)]
    for number, test, count in seen:
        current = exercise.stages[number - 1]
        hints = current.hints_for(test) if test else current.stage_hints
        of = f"{current.suite}.{test}" if test else say("of_stage", number=number)
        for which, hint in enumerate(hints[:count], 1):
            heading = say("hint_heading", which=which, total=len(hints), of=of, level=say(f"level_{hint.level}"))
            lines.append("")
            text = _wrap(then(heading, hint.text))
            lines.append(ui.paint(heading, "bold") + text[len(heading):])
    return "\n".join(lines)
