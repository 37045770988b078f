"""The report a learner reads: stage by stage, test by test, with what to do next."""
from __future__ import annotations

import re

from .. import ui
from ..model.catalog import Exercise
from ..model.results import ConfigResult, StageResult, StageStatus, TestStatus, Verdict

_STATUS_WORD = {TestStatus.CRASHED: "crashed", TestStatus.TIMEOUT: "hung", TestStatus.NOT_RUN: "did not run",
                TestStatus.SKIPPED: "skipped"}
TAMPERED = ("its tests ran with the test framework's macros changed by the header under test, so none of "
            "them counts: a test that passed may only have had its failure hidden")


def render(verdict: Verdict, exercise: Exercise, verbose: bool = False, command: str = "") -> str:
    out = [ui.paint(f"Exercise {exercise.id:02d} · {exercise.title}", "bold") + f"  ({verdict.file})"]
    for problem in verdict.tampering:
        out.append(f"{ui.mark(False)} The header under test changes the test framework: {problem}. "
                   "Tests judged through altered assertions prove nothing, so this cannot pass.")
    first_failing = verdict.first_failing_stage()
    for config in verdict.configs:
        out.append("")
        out.extend(config_lines(config, first_failing, verbose))
    out.append("")
    out.append(_next_step(verdict, exercise, command))
    return "\n".join(out)


def config_lines(config: ConfigResult, first_failing: int | None, verbose: bool) -> list[str]:
    b = config.build
    if not b.ok:
        lines = [ui.paint(f"{config.label}: does not compile", "red")]
        if b.error:
            lines.append(f"  {b.error.file and b.error.where()}: {b.error.severity}: {b.error.message}")
            lines.extend("  " + c for c in b.error.context)
            lines.append("  Fix this first: nothing can be tested until the file compiles.")
        else:
            lines.append(ui.indent(b.problem, "  "))
        return lines
    if b.problem:  # built, or not needed, yet not judged: the stages say why
        return [ui.paint(f"{config.label}", "cyan") + ui.paint(f"  {b.problem}", "dim")]
    lines = [ui.paint(f"{config.label}", "cyan") + ui.paint(f"  built in {b.seconds:.1f} s", "dim")]
    if b.warnings:
        w = b.warnings[0]
        lines.append(ui.paint(f"  ! {len(b.warnings)} warning(s) in your file, the first: {w.where()}: {w.message}",
                              "yellow"))
    for stage in config.stages:
        detailed = verbose or first_failing is None or stage.number <= first_failing
        lines.extend(stage_lines(stage, detailed, verbose))
    return lines


def stage_lines(stage: StageResult, detailed: bool, verbose: bool) -> list[str]:
    ok = stage.status == StageStatus.PASSED
    tampered = stage.status == StageStatus.TAMPERED
    count = "not counted" if tampered else f"{stage.passed_count}/{len(stage.tests)}"
    head = f"{ui.mark(ok)} Stage {stage.number} · {stage.title}  {count}"
    lines = [ui.paint(head, "bold") if detailed and not ok else head, ui.paint(f"    {stage.goal}", "dim")]
    if tampered:
        lines.append(ui.paint("    ! " + TAMPERED, "yellow"))
    for problem in stage.problems:
        lines.append(ui.paint("    ! " + problem, "yellow"))
    for note in stage.notes:
        lines.append(ui.paint("    note: " + note, "dim"))
    if tampered or (ok and not verbose):   # a tampered stage's tests prove nothing, so none is listed
        return lines
    if not detailed:  # a later stage: one thing at a time
        lines.append(ui.paint(f"    its tests are listed once the stages before it pass (-v lists them now)", "dim"))
        return lines
    repeats = {} if verbose else _repeats(stage)
    for test in stage.tests:
        if test.name in repeats and not repeats[test.name]:
            continue  # said once, with a count, at the first test that said it
        word = _STATUS_WORD.get(test.status)
        name = test.name + (f" — {word}" if word else "")
        lines.append(f"    {ui.mark(test.ok)} {name}")
        if not test.ok:
            for message in test.messages:
                lines.append(ui.indent(message, "        ", max_lines=200 if verbose else 24))
            if verbose and test.finding:
                lines.append(ui.indent(test.finding.raw, "        | ", max_lines=80))
        if others := repeats.get(test.name):
            shown_names = ", ".join(t.split(".", 1)[-1] for t in others[:3]) + (", …" if len(others) > 3 else "")
            lines.append(ui.paint(f"    {ui.FAIL} {len(others)} more test{'s' if len(others) > 1 else ''} "
                                  f"{_STATUS_WORD.get(test.status, 'failed')}"
                                  f"{' with the same message' if test.messages else ''} "
                                  f"({shown_names}; -v lists them)", "dim"))
    if verbose:
        for finding in stage.findings:
            lines.append(ui.indent(finding.raw, "        | ", max_lines=80))
    return lines


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


def _next_step(verdict: Verdict, exercise: Exercise, command: str) -> str:
    again = f"`{command}`" if command else "the judge"
    judged = sorted({s.number for c in verdict.configs for s in c.stages})
    unjudged = verdict.stages_not_judged
    not_judged = f"; {_stages(unjudged)} not judged" if unjudged else ""
    if verdict.passed:
        tests = len({t.name for c in verdict.configs for s in c.stages for t in s.tests})
        builds = f" in {len(verdict.configs)} builds" if len(verdict.configs) > 1 else ""
        counted = f" ({tests} test{'s' if tests != 1 else ''}{builds}, {verdict.seconds:.1f} s)."
        if unjudged:
            return (ui.paint(f"{ui.OK} {_stages(judged).capitalize()} {'passes' if len(judged) == 1 else 'pass'}",
                             "green") + not_judged + counted +
                    f"\n  `python3 judge/judge.py test {exercise.id}` judges every stage.")
        passed = ui.paint(f"{ui.OK} Exercise {exercise.id:02d} passes every stage", "green") + counted
        if verdict.implementation != "exercises":
            return passed
        return (passed + f"\n  Now read {exercise.after_you_pass}: the mistakes the tests catch and the "
                f"decisions the reference makes. Then `python3 judge/judge.py bench {exercise.id}` and "
                f"`python3 judge/judge.py quiz {exercise.id}`.")
    if verdict.tampering:
        return ui.paint(f"{ui.FAIL} Not passed: leave the test framework's macros alone.", "red")
    if any(not c.build.ok for c in verdict.configs):
        return ui.paint(f"{ui.FAIL} Not passed: the file does not compile yet.", "red") + f" Fix the error above, then run {again} again."
    stage_no = verdict.first_failing_stage()
    stage = next(s for c in verdict.configs for s in c.stages if s.number == stage_no and s.status != StageStatus.PASSED)
    failing = len(stage.tests) - stage.passed_count
    what = f"{failing} of {len(stage.tests)} tests fail" if failing else "the stage has problems listed above"
    return (ui.paint(f"{ui.FAIL} Not passed yet: stage {stage.number} ({stage.title}): {what}", "red") +
            not_judged + f". Fix the first {ui.FAIL} above and run {again} again.\n"
            f"  Stuck? `python3 judge/judge.py hint {exercise.id}` gives the next hint; "
            f"the chapter is chapters/{exercise.name}.md.")


def _stages(numbers: list[int]) -> str:
    """`stage 2`, `stages 2-4`, `stages 1, 3-4`: stage numbers as a reader counts them."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    spans = [f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs]
    return ("stage " if len(numbers) == 1 else "stages ") + ", ".join(spans)
