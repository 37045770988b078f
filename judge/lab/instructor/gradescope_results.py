"""Gradescope's results.json for a submission's grades: one test per stage, each with its part of
the judge's report in Markdown, and a summary above them; or, when the grader failed, 0 points
and why. judge/schemas/gradescope-results.schema.json describes it."""
from __future__ import annotations

from ..model.catalog import Exercise
from . import leaderboard, platforms
from .grading import ExerciseGrade, GradeStatus, StageGrade

OUTPUT_CHARS = 20_000            # the most of one report a test's output shows (head and tail)
NOT_YOUR_FAULT = platforms.not_your_fault("gradescope")


def results_json(exercises: list[Exercise], grades: list[ExerciseGrade], seconds: float,
                 board: list[leaderboard.Figure] | None = None, notes: list[str] | None = None) -> dict:
    """Gradescope's results.json for these grades (one per exercise, in the same order): a test
    per stage, the score their sum."""
    tests = [stage_test(ex, grade, stage) for ex, grade in zip(exercises, grades) for stage in grade.stages]
    tests += [tests_test(ex, grade) for ex, grade in zip(exercises, grades) if grade.tests]
    score = round(sum(t["score"] for t in tests), 4)
    max_score = round(sum(t["max_score"] for t in tests), 4)
    return {
        "score": score,
        "execution_time": max(0, round(seconds)),
        "output": summary(exercises, grades, score, max_score, board or [], notes or []),
        "output_format": "md",
        "test_output_format": "md",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "leaderboard": [figure.to_json() for figure in board or []],
        "extra_data": {"alloclab": [{"exercise": g.exercise, "status": g.status, "message": g.message,
                                     "score": g.score, "max_score": g.max_score, "digest": g.digest,
                                     "seconds": round(g.seconds, 1), "flags": list(g.flags)}
                                    for g in grades]},
    }


def stage_test(exercise: Exercise, grade: ExerciseGrade, stage: StageGrade) -> dict:
    number = exercise.id
    return {
        "name": f"{number:02d} · {grade.title} · stage {stage.number}: {stage.title}",
        "number": f"{number}.{stage.number}",
        "score": round(stage.earned, 4),
        "max_score": round(stage.points, 4),
        "status": "passed" if stage.passed else "failed",
        "output": stage_output(grade, stage),
        "output_format": "md",
        "visibility": "visible",
    }


TESTS_TAG = "your tests"   # the tag of the test that grades the learner's own tests, after the stages'


def tests_test(exercise: Exercise, grade: ExerciseGrade) -> dict:
    """The learner's own tests of the exercise, as one more test of Gradescope's."""
    tests = grade.tests
    return {
        "name": f"{exercise.id:02d} · {grade.title} · your tests ({tests.source or 'my_tests.cpp'})",
        "number": f"{exercise.id}.{len(grade.stages) + 1}",
        "tags": [TESTS_TAG],
        "score": round(tests.earned, 4),
        "max_score": round(tests.points, 4),
        "status": "passed" if tests.valid and tests.caught == tests.total else "failed",
        "output": f"{_md_text(tests.message)}\n\n{code_block(tests.report)}" if tests.report else _md_text(tests.message),
        "output_format": "md",
        "visibility": "visible",
    }


def stage_output(grade: ExerciseGrade, stage: StageGrade) -> str:
    """The stage's part of the judge's report, in Markdown: the verdict in a sentence, then the
    report of the stage (or the first compiler error) as the terminal shows it, in a code block."""
    if grade.status != GradeStatus.GRADED:
        return f"**Not graded:** {_md_text(grade.message)}"
    if grade.compile_error:
        return (f"**Your {grade.header} does not compile**, so no stage can pass. The first error:\n\n"
                f"{code_block(grade.compile_error)}")
    verdict = "passes" if stage.passed else "fails"
    return f"Stage {stage.number} ({_md_text(stage.title)}) {verdict}.\n\n{code_block(stage.report or grade.message)}"


def summary(exercises: list[Exercise], grades: list[ExerciseGrade], score: float, max_score: float,
            board: list[leaderboard.Figure], notes: list[str]) -> str:
    lines = [f"**{score:g} of {max_score:g} points.** Each exercise is judged as `python3 judge/judge.py test N` "
             "judges it on your machine; each stage below shows its part of the report.", ""]
    for ex, g in zip(exercises, grades):
        lines.append(f"- {ex.id:02d} {_md_cell(g.title)}: {g.score:g} of {g.max_score:g} points, "
                     f"{_md_cell(g.message)}")
    if board:
        lines += ["", "The leaderboard (your allocator's benchmark time ÷ the reference's, the median over the "
                  "exercise's single-threaded workloads; below 1 is faster; 3 short runs each on a shared machine, so differences of 10 % "
                  "or more can be noise):"]
        lines += [f"- {figure.label}: {round(figure.ratio, 3):.2f}" for figure in board]
    lines += ["", *(f"- {_md_text(n)}" for n in notes)] if notes else []
    return "\n".join(lines)


def failed(why: str, seconds: float) -> dict:
    """The results.json of a grader that could not grade: 0 points, and why."""
    return {
        "score": 0,
        "execution_time": max(0, round(seconds)),
        "output": f"**The grader failed:** {_md_text(why)}\n\n{NOT_YOUR_FAULT}",
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
        "leaderboard": [],
        "extra_data": {"alloclab": {"grader_failed": why}},
    }


def code_block(text: str) -> str:
    """`text` in a fenced code block whose fence no run of backticks inside it can close."""
    text = platforms.clipped(text.rstrip("\n"), OUTPUT_CHARS)
    run, fence = 0, 3
    for ch in text:
        run = run + 1 if ch == "`" else 0
        fence = max(fence, run + 1)
    return f"{'`' * fence}text\n{text}\n{'`' * fence}"


def _md_text(text: str) -> str:
    """Plain text set in Markdown: the characters that would format it escaped."""
    return "".join("\\" + ch if ch in "\\`*_[]<>#|" else ch for ch in text)


def _md_cell(text: str) -> str:
    return _md_text(" ".join(text.split()))


def plain(markdown: str) -> str:
    return markdown.split("\n", 1)[0].replace("**", "")
