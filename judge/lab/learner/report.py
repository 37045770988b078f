"""The report a learner reads: stage by stage, test by test, with what to do next."""
from __future__ import annotations

import re
import shutil

from .. import ui
from ..core import build
from ..model.catalog import ROOT, Exercise, shown, translated
from ..model.results import ConfigResult, StageResult, StageStatus, TestStatus, Verdict
from ..model.words import WORDS, listing, plural, say

_STATUS_WORD = {TestStatus.CRASHED: "crashed", TestStatus.TIMEOUT: "hung", TestStatus.NOT_RUN: "did_not_run",
                TestStatus.SKIPPED: "skipped"}
TAMPERED = WORDS["tampered"][0]   # as JUnit reports it, in English whatever the learner reads


def render(verdict: Verdict, exercise: Exercise, verbose: bool = False, command: str = "",
           watching: bool = False, every_message: bool = False) -> str:
    """The report; `watching`: under `watch`, where a save judges again and `h` gives a hint;
    `every_message`: every failing test's messages, for a reader who has no -v (a grader's report)."""
    exercise = translated(exercise)
    out = [ui.paint(say("exercise_heading", id=exercise.id, title=exercise.title), "bold") + f"  ({verdict.file})"]
    for problem in verdict.tampering:
        out.append(f"{ui.mark(False)} " + say("tampering", problem=problem))
    first_failing = verdict.first_failing_stage()
    for config in verdict.configs:
        out.append("")
        out.extend(config_lines(config, first_failing, verbose, exercise, every_message))
    out.append("")
    out.append(_next_step(verdict, exercise, command, watching))
    return "\n".join(out)


def config_lines(config: ConfigResult, first_failing: int | None, verbose: bool,
                 exercise: Exercise | None = None, every_message: bool = False) -> list[str]:
    b = config.build
    if not b.ok:
        lines = [ui.paint(say("does_not_compile", label=config.label), "red")]
        if b.error:
            missing = build.missing_name(b.error) if _in_the_tests(b.error.file) else None
            if missing:  # the tests name what the contract promises, so the learner's header lacks it
                lines.append("  " + say("missing_member", name=missing[0], owner=missing[1]))
            lines.append(f"  {b.error.file and b.error.where()}: {b.error.severity}: {b.error.message}")
            lines.extend("  " + c for c in b.error.context)
            lines.append("  " + say("fix_first"))
        else:
            lines.append(ui.indent(b.problem, "  "))
        return lines
    if b.problem:  # built, or not needed, yet not judged: the stages say why
        return [ui.paint(f"{config.label}", "cyan") + ui.paint(f"  {b.problem}", "dim")]
    lines = [ui.paint(f"{config.label}", "cyan") + ui.paint("  " + say("built_in", seconds=b.seconds), "dim")]
    if b.warnings:
        w = b.warnings[0]
        lines.append(ui.paint("  " + say("warnings", count=len(b.warnings), where=w.where(), message=w.message),
                              "yellow"))
    for stage in config.stages:
        detailed = verbose or first_failing is None or stage.number <= first_failing
        lines.extend(stage_lines(stage, detailed, verbose, exercise, every_message))
    return lines


def _in_the_tests(file: str) -> bool:
    return (ROOT / "judge" / "tests") in (ROOT / file).resolve().parents


def _words(stage: StageResult, exercise: Exercise | None) -> tuple[str, str]:
    """The stage's title and goal in the learner's language: the verdict keeps the English."""
    if exercise is not None and exercise.edition != "en" and 1 <= stage.number <= len(exercise.stages):
        ours = exercise.stages[stage.number - 1]
        if ours.suite == stage.suite:
            return ours.title, ours.goal
    return stage.title, stage.goal


def stage_lines(stage: StageResult, detailed: bool, verbose: bool, exercise: Exercise | None = None,
                every_message: bool = False) -> list[str]:
    ok = stage.status == StageStatus.PASSED
    tampered = stage.status == StageStatus.TAMPERED
    title, goal = _words(stage, exercise)
    count = say("not_counted") if tampered else f"{stage.passed_count}/{len(stage.tests)}"
    head = f"{ui.mark(ok)} " + say("stage_line", number=stage.number, title=title, count=count)
    lines = [ui.paint(head, "bold") if detailed and not ok else head, ui.paint(f"    {goal}", "dim")]
    if tampered:
        lines.append(ui.paint("    ! " + say("tampered"), "yellow"))
    for problem in stage.problems:
        lines.append(ui.paint("    ! " + problem, "yellow"))
    for note in stage.notes:
        lines.append(ui.paint("    " + say("note", note=note), "dim"))
    if tampered or (ok and not verbose):   # a tampered stage's tests prove nothing, so none is listed
        return lines
    if not detailed:  # a later stage: one thing at a time
        lines.append(ui.paint("    " + say("tests_later"), "dim"))
        return lines
    repeats = {} if verbose else _repeats(stage)
    # The first failing test in full, one line for each other: the first one to fix is the lesson,
    # and a screenful of the same assertion under other names would hide it. -v shows them all.
    first = None if verbose or every_message else next((t.name for t in stage.tests if not t.ok), None)
    for test in stage.tests:
        if test.name in repeats and not repeats[test.name]:
            continue  # said once, with a count, at the first test that said it
        word = _STATUS_WORD.get(test.status)
        name = test.name + (f" — {say(word)}" if word else "")
        if not test.ok and first is not None and test.name != first:
            lines.append(f"    {ui.mark(test.ok)} {ui.cut(name + _gist(test), _width() - 6)}")
        else:
            lines.append(f"    {ui.mark(test.ok)} {name}")
        if not test.ok and (first is None or test.name == first):
            for message in test.messages:
                lines.append(ui.indent(message, "        ", max_lines=200 if verbose or test.name == first else 24))
            if verbose and test.finding:
                lines.append(ui.indent(test.finding.raw, "        | ", max_lines=80))
        if others := repeats.get(test.name):
            shown_names = listing([t.split(".", 1)[-1] for t in others[:3]] + (["…"] if len(others) > 3 else []))
            lines.append(ui.paint("    " + say("repeats", mark=ui.FAIL, count=len(others), s=plural(len(others)),
                                              status=say(_STATUS_WORD.get(test.status, "failed")),
                                              same=say("same_message") if test.messages else "",
                                              names=shown_names), "dim"))
    if verbose:
        for finding in stage.findings:
            lines.append(ui.indent(finding.raw, "        | ", max_lines=80))
    elif first is not None and any(not t.ok and t.name != first and t.messages for t in stage.tests):
        lines.append(ui.paint("    " + say("others_in_one_line"), "dim"))
    return lines


# A line of GoogleTest's own (the assertion, its values), not one the test's author wrote.
_FRAMEWORK_LINE = ("Expected", "Actual:", "Value of:", "Which is:", "Failed", "Death test", "Unknown C++ exception")
_AT_LINE = re.compile(r"\S+:\d+(?::\d+)?(?:: Failure)?")


def _gist(test) -> str:
    """A failing test's message in a line: the sentence its author wrote, else the framework's."""
    lines = [line for message in test.messages[:1] for line in message.splitlines()
             if line.strip() and not _AT_LINE.fullmatch(line.strip())]
    said = next((line for line in lines if not line[0].isspace() and not line.startswith(_FRAMEWORK_LINE)),
                " ".join(line.strip() for line in lines))
    return f": {said}" if said else ""


def _width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


_LOCATION_RE = re.compile(r"(\S+\.\w+):\d+(?::\d+)?")


def _repeats(stage: StageResult) -> dict[str, list[str]]:
    """Tests of the stage that failed the same way (same status, same message up to its line
    numbers): the first one maps to the names of the others, each other one to []."""
    groups: dict[tuple, list[str]] = {}
    for test in stage.tests:
        if not test.ok:
            key = (test.status, tuple(_LOCATION_RE.sub(r"\1", m) for m in test.messages))
            groups.setdefault(key, []).append(test.name)
    repeats: dict[str, list[str]] = {}
    for first, *others in (names for names in groups.values() if len(names) > 1):
        repeats[first] = others
        repeats.update({name: [] for name in others})
    return repeats


def _next_step(verdict: Verdict, exercise: Exercise, command: str, watching: bool = False) -> str:
    again = say("again_command", command=command) if command else say("again_judge")
    judged = sorted({s.number for c in verdict.configs for s in c.stages})
    unjudged = verdict.stages_not_judged
    not_judged = say("not_judged", stages=_stages(unjudged)) if unjudged else ""
    if verdict.passed:
        tests = len({t.name for c in verdict.configs for s in c.stages for t in s.tests})
        builds = say("in_builds", count=len(verdict.configs)) if len(verdict.configs) > 1 else ""
        counted = say("counted", tests=tests, s=plural(tests), builds=builds, seconds=verdict.seconds)
        if unjudged:
            return (ui.paint(say("stages_pass", mark=ui.OK, stages=_stages(judged).capitalize(),
                                 verb="passes" if len(judged) == 1 else "pass"), "green") + not_judged + counted +
                    say("judge_every_stage", id=exercise.id))
        passed = ui.paint(say("passes_every_stage", mark=ui.OK, id=exercise.id), "green") + counted
        if verdict.implementation != "exercises":
            return passed
        return passed + say("read_after", where=exercise.after_you_pass, id=exercise.id)
    if verdict.tampering:
        return ui.paint(say("leave_macros", mark=ui.FAIL), "red")
    if any(not c.build.ok for c in verdict.configs):
        return ui.paint(say("not_compiling_yet", mark=ui.FAIL), "red") + \
            say("fix_error_watching" if watching else "fix_error", again=again)
    stage_no = verdict.first_failing_stage()
    stage = next(s for c in verdict.configs for s in c.stages if s.number == stage_no and s.status != StageStatus.PASSED)
    failing = len(stage.tests) - stage.passed_count
    what = say("tests_fail", failing=failing, total=len(stage.tests)) if failing else say("stage_has_problems")
    return (ui.paint(say("not_passed_yet", mark=ui.FAIL, number=stage.number, title=_words(stage, exercise)[0],
                         what=what), "red") +
            not_judged + say("fix_first_fail_watching" if watching else "fix_first_fail", mark=ui.FAIL, again=again) +
            say("stuck_watching" if watching else "stuck", id=exercise.id, chapter=shown(exercise.reader_chapter)))


def _stages(numbers: list[int]) -> str:
    """`stage 2`, `stages 2-4`, `stages 1, 3-4`: stage numbers as a reader counts them."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    spans = [f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs]
    return say("stage_one" if len(numbers) == 1 else "stage_many", spans=listing(spans))
