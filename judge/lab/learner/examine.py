"""`examine`: the learner's own tests of an exercise's contract (`exercises/NN-S/my_tests.cpp`),
judged against the correct implementations (valid: every test passes on each) and the known
mistakes (thorough: how many the valid tests reject, by part of the contract, never which).
The judging is core/examining.py's; this file says what it found, and keeps the score in the
learner's progress for `list` and `watch`."""
from __future__ import annotations

import json
from pathlib import Path

from ..core import build, examining
from ..model.catalog import Catalog, Exercise, shown, translated
from ..model.errors import UsageError
from ..model.progress import Progress, digest
from ..model.words import language, say, then
from .. import ui


def my_tests_file(exercise: Exercise) -> Path:
    return exercise.exercise_file.parent / examining.MY_TESTS


def examine_command(args, catalog: Catalog) -> bool:
    exercise = translated(catalog.resolve(args.exercise))
    build.compilers_for(examining.COMPILER)
    mine = my_tests_file(exercise)
    source = Path(args.source).expanduser().resolve() if args.source else mine
    if not source.is_file():
        raise UsageError(say("no_source", file=args.source) if args.source else
                         say("no_my_tests", file=shown(mine), id=exercise.id, header=exercise.header))
    if not args.json:
        print(ui.paint(say("examining", file=shown(source), id=exercise.id), "dim"), flush=True)
    progress = Progress()
    verdict, hint = examined(catalog, exercise, source, progress)
    progress.save()
    print(json.dumps(verdict.as_json(), indent=2) if args.json else render(verdict, hint))
    return verdict.valid


def examined(catalog: Catalog, exercise: Exercise, source: Path,
             progress: Progress) -> tuple[examining.TestsVerdict, str]:
    """The verdict on a test file and, for the learner's own with mistakes left, the next hint for
    writing tests; both recorded in `progress`, which the caller saves."""
    verdict = examining.examine(exercise, source, catalog.limits)
    hint = ""
    if source.resolve() == my_tests_file(exercise).resolve():
        progress.record_tests(exercise, verdict.valid, verdict.chaffs_caught, verdict.chaffs_total, digest(source))
        if not verdict.problem and verdict.chaffs_caught < verdict.chaffs_total and exercise.test_hints:
            hint = exercise.test_hints[progress.take_test_hint(exercise) - 1]
    return verdict, hint


def render(verdict: examining.TestsVerdict, hint: str = "") -> str:
    lines = []
    if verdict.problem:
        lines.append(f"{ui.mark(False)} " + say("tests_unjudged", file=shown(verdict.source)))
        lines.append(ui.indent(verdict.problem, "    ", max_lines=20, more=""))
        lines.append(say("tests_unjudged_why"))
        return "\n".join(lines)
    if verdict.valid:
        lines.append(f"{ui.mark(True)} " + say("tests_valid", tests=verdict.tests, s="" if verdict.tests == 1 else "s"))
    else:
        failing = sorted({i.test for i in verdict.invalid if i.test})
        lines.append(f"{ui.mark(False)} " + (say("tests_invalid_one") if len(failing) == 1 else
                                            say("tests_invalid", count=len(failing) or 1)))
        by_test: dict[str, list[examining.InvalidTest]] = {}
        for invalid in verdict.invalid:
            by_test.setdefault(invalid.test, []).append(invalid)
        for test, found in by_test.items():
            where = say("list_joiner").join(dict.fromkeys(
                say("implementation_in", implementation=say("the_reference") if i.wheat == "reference" else
                    say("a_wheat", name=i.wheat), sanitizer=i.sanitizer) for i in found))
            lines.append("  " + (say("test_fails_on", test=test, where=where) if test else
                                 say("file_fails_on", where=where)))
            chinese = language() == "zh"
            for differs in dict.fromkeys((i.differs_zh if chinese and i.differs_zh else i.differs)
                                         for i in found if i.differs):
                lines.append(ui.indent(say("wheat_differs", differs=differs), "      ", max_lines=4, more=""))
            lines.append(ui.indent("\n".join(found[0].messages), "      ", max_lines=8, more=""))
        lines.append(say("tests_invalid_why"))
    if verdict.parts:
        lines.append("")
        lines.append(say("tests_thorough", caught=verdict.chaffs_caught, total=verdict.chaffs_total))
        width = max(len(p.title) for p in verdict.parts)
        for part in verdict.parts:
            mark = ui.mark(part.caught == part.total)
            lines.append(f"  {mark} " + say("tests_part", stage=part.stage, title=part.title.ljust(width),
                                            caught=part.caught, total=part.total))
        if not verdict.valid:
            lines.append(say("tests_thorough_invalid"))
    if hint:
        lines.append("")
        lines.append(then(say("test_hint"), hint))
    lines.append(ui.paint(say("tests_took", seconds=verdict.seconds), "dim"))
    return "\n".join(lines)
