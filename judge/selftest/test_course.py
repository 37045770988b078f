"""The course around the exercises: the catalog's format version and graded hints, the chapters'
three parts, the quizzes, hints that follow the first failing stage, and verdicts and `list`
states that say exactly what was judged. Quick: no compiler runs here."""
from __future__ import annotations

import dataclasses
import io
import json
import tempfile
import unittest
from pathlib import Path

from lab.model import catalog as cat, progress
from lab.maintainer import course, lint
from lab.learner import overview, quiz, report
from lab.model.catalog import Catalog, CatalogError, Exercise, Hint, Limits, Stage
from lab.model.results import BuildSummary, ConfigResult, StageResult, TestOutcome, Verdict
from lab.model.progress import Progress

from .progress_files import saved, take_hint_at


FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE_QUIZ = FIXTURES / "sample.quiz.toml"
LEVELS = ("concept", "approach", "code")


def graded(stage: int) -> tuple[Hint, ...]:
    return tuple(Hint(level, f"{level} hint for stage {stage}") for level in LEVELS)


LIMITS = Limits(20, 65536, 4096, 300, 600)
EXERCISE = Exercise(1, "arena", "The arena", "", "easy", "arena.hpp", ("asan",),
                    tuple(Stage(n, f"Suite{n}", f"title {n}", f"goal {n}", ("asan",), graded(n)) for n in (1, 2, 3, 4)))


def verdict(results: dict[int, str], compiles: bool = True, implementation: str = "exercises") -> Verdict:
    """A verdict on the stages in `results` (number -> passed | failed), each with one test."""
    stages = [StageResult(n, f"Suite{n}", f"title {n}", f"goal {n}", status if compiles else "not built",
                          [TestOutcome(f"Suite{n}.T", status)] if compiles else [])
              for n, status in results.items()]
    config = ConfigResult("clang", "asan", BuildSummary(compiles, 1.0), stages)
    passed = compiles and all(s == "passed" for s in results.values())
    left_out = [s.number for s in EXERCISE.stages if s.number not in results]
    return Verdict("01-arena", "The arena", implementation, "exercises/01-arena/arena.hpp", passed, [config],
                   stages_not_judged=left_out)


class Temp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.state = self.dir / "progress.json"

    def tearDown(self):
        self.tmp.cleanup()


class CatalogFormat(Temp):
    def write_catalog(self, text: str) -> Path:
        path = self.dir / "catalog.toml"
        path.write_text(text + "\n" + self.LIMITS)
        return path

    # Every limit is written once, in the catalog: a catalog without them is malformed.
    LIMITS = ("[limits]\ntest_timeout_seconds = 20\noutput_bytes = 65536\nmemory_mb = 4096\n"
              "build_timeout_seconds = 300\nbench_timeout_seconds = 600\n")

    STAGE = ('[[exercise]]\nid = 1\nslug = "arena"\ntitle = "A"\nheader = "a.hpp"\n'
             '  [[exercise.stage]]\n  suite = "S"\n')

    def test_the_shipped_catalog_is_format_2(self):
        self.assertEqual(cat.load().format_version, 2)

    def test_a_catalog_without_a_version_is_refused(self):
        path = self.write_catalog(self.STAGE + '  hints = [{ level = "concept", text = "x" }]\n')
        with self.assertRaises(CatalogError) as ctx:
            cat.load(path)
        message = str(ctx.exception)
        self.assertIn("version 1", message)
        self.assertIn("format_version = 2", message, "it says which version this judge reads")
        self.assertIn("docs/authoring.md", message)

    def test_another_version_is_refused(self):
        with self.assertRaises(CatalogError) as ctx:
            cat.load(self.write_catalog("format_version = 3\n" + self.STAGE))
        self.assertIn("format_version = 3", str(ctx.exception))

    def test_exercise_level_hints_are_refused(self):
        text = "format_version = 2\n" + self.STAGE.replace('header = "a.hpp"\n', 'header = "a.hpp"\nhints = ["old"]\n')
        with self.assertRaises(CatalogError) as ctx:
            cat.load(self.write_catalog(text))
        self.assertIn("exercise arena gives hints of its own; hints belong to its stages", str(ctx.exception))

    def test_stage_hints_are_read_in_order(self):
        text = "format_version = 2\n" + self.STAGE + (
            '  hints = [\n    { level = "concept", text = " idea " },\n    { level = "approach", text = "shape" },\n'
            '    { level = "code", text = "`code`" },\n  ]\n')
        [exercise] = cat.load(self.write_catalog(text)).exercises
        self.assertEqual(exercise.stages[0].hints, (Hint("concept", "idea"), Hint("approach", "shape"),
                                                   Hint("code", "`code`")))
        self.assertEqual(exercise.quiz_file, cat.ROOT / "chapters" / "01-arena.quiz.toml")

    def test_a_hint_may_name_the_tests_it_is_for(self):
        text = "format_version = 2\n" + self.STAGE + (
            '  hints = [\n    { level = "concept", text = "idea" },\n'
            '    { level = "concept", text = "for two", tests = ["A", "B"] },\n  ]\n')
        [exercise] = cat.load(self.write_catalog(text)).exercises
        stage = exercise.stages[0]
        self.assertEqual(stage.hints[1], Hint("concept", "for two", ("A", "B")))
        self.assertEqual(stage.stage_hints, (Hint("concept", "idea"),))
        self.assertEqual(stage.hints_for("B"), (Hint("concept", "for two", ("A", "B")),))
        self.assertEqual(stage.hinted_tests, ("A", "B"))

    def test_a_hint_that_is_not_a_level_and_text_is_malformed(self):
        for hint in ('"a plain string"', '{ level = "trick", text = "x" }', '{ level = "code" }',
                     '{ level = "code", text = "x", tests = [] }', '{ level = "code", text = "x", tests = "A" }',
                     '{ level = "code", text = "x", test = ["A"] }'):
            with self.subTest(hint=hint), self.assertRaises(CatalogError):
                cat.load(self.write_catalog("format_version = 2\n" + self.STAGE + f"  hints = [{hint}]\n"))


class HintRules(unittest.TestCase):
    def problems(self, *hints: tuple[str, str]) -> str:
        return "\n".join(lint.hint_problems(tuple(Hint(level, text) for level, text in hints)))

    def test_three_graded_hints_pass(self):
        self.assertEqual(self.problems(("concept", "Which idea applies?"), ("approach", "Keep `used_`."),
                                       ("code", "`used_ += n;`"), ("code", "more")), "")

    def test_too_few_hints(self):
        self.assertIn("2 hint(s); every stage needs at least 3", self.problems(("concept", "a"), ("code", "b")))

    def test_a_missing_level(self):
        self.assertIn("no approach hint", self.problems(("concept", "a"), ("code", "b"), ("code", "c")))

    def test_levels_out_of_order(self):
        self.assertIn("they must go concept, then approach, then code",
                      self.problems(("concept", "a"), ("code", "b"), ("approach", "c")))

    def test_a_concept_hint_with_code(self):
        for text in ("Think of `used_`.", "Does p->next survive?", "Call allocate() twice.", "Is n == 0 fine?"):
            with self.subTest(text=text):
                self.assertIn("hint 1 is a concept hint but contains code",
                              self.problems(("concept", text), ("approach", "b"), ("code", "c")))
        for prose in ("Is it O(1) both ways?", "Which rule of C++ lets the bytes hold an object?"):
            self.assertEqual(self.problems(("concept", prose), ("approach", "b"), ("code", "c")), "",
                             "prose with parentheses or C++ is not code")

    def test_every_shipped_concept_hint_is_free_of_code(self):
        for exercise in cat.load().exercises:
            for stage in exercise.stages:
                self.assertEqual(lint.hint_problems(stage.stage_hints), [], f"{exercise.name} stage {stage.number}")
                for test in stage.hinted_tests:
                    self.assertEqual(lint.hint_problems(stage.hints_for(test), "test"), [],
                                     f"{exercise.name} stage {stage.number}, {test}")


CHAPTER = """# Chapter 1 — The arena {#ch01}

Intro.

## The lesson {#ch01-lesson}

| idea | why |
|---|---|
| bump | fast |

```markdown
## After you pass
| mistake | caught by |
```

## The task {#ch01-task}

### The stages

## After you pass {#ch01-after}

> **Stop here until `python3 judge/judge.py test 1` passes every stage.**

### The mistakes the tests catch

| mistake | caught by | why |
|---|---|---|
| aligns-the-offset | ArenaAlignment.X | ... |
"""


class ChapterShape(unittest.TestCase):
    def problems(self, text: str, mistakes=("aligns-the-offset",)) -> list[str]:
        return course.chapter_problems(text, list(mistakes), "ch.md")

    def test_the_three_parts_in_order_pass(self):
        self.assertEqual(self.problems(CHAPTER), [], "headings and tables inside code blocks do not count")

    def test_a_missing_part(self):
        text = CHAPTER.replace("## The task {#ch01-task}", "## The work")
        self.assertEqual(self.problems(text), ['ch.md: no "## The task" heading (every chapter has the parts '
                                               '"The lesson", "The task", "After you pass", in this order)'])

    def test_parts_out_of_order(self):
        lesson = "## The lesson {#ch01-lesson}"
        task = "## The task {#ch01-task}"
        text = CHAPTER.replace(lesson, "@@").replace(task, lesson).replace("@@", task)
        [problem] = self.problems(text)
        self.assertIn('come in the order "The task", "The lesson", "After you pass"', problem)

    def test_a_mistake_table_before_after_you_pass(self):
        text = CHAPTER.replace("### The stages", "| Pitfall | Caught by |\n|---|---|\n| x | y |")
        [problem] = self.problems(text)
        self.assertIn("a table of mistakes comes before", problem)
        self.assertTrue(problem.startswith("ch.md:18:"), "it names the line")

    def test_a_known_mistake_named_before_after_you_pass(self):
        text = CHAPTER.replace("Intro.", "Intro: see aligns-the-offset.diff.")
        [problem] = self.problems(text)
        self.assertIn('names the known mistake "aligns-the-offset"', problem)
        self.assertEqual(self.problems(text, ("offset",)), [], "a name matches whole, not inside another")

    def test_after_you_pass_opens_with_the_stop_sign(self):
        text = CHAPTER.replace("> **Stop here", "**Stop here")
        [problem] = self.problems(text)
        self.assertIn("must open with a quote block", problem)

    def test_the_pointer_names_file_and_heading(self):
        arena = cat.load().resolve("1")
        self.assertEqual(arena.after_you_pass, 'chapters/01-arena.md, part "## After you pass"')

    def test_shipped_chapters_follow_the_format(self):
        for exercise in cat.load().exercises:
            if not exercise.quiz_file.is_file():
                self.skipTest(f"{exercise.name} is not yet in the course format")
            with self.subTest(exercise=exercise.name):
                self.assertEqual(course.problems(exercise), [])


class QuizFile(Temp):
    def write(self, text: str) -> Path:
        path = self.dir / "x.quiz.toml"
        path.write_text(text)
        return path

    def test_the_sample_loads(self):
        questions = quiz.load(EXERCISE, SAMPLE_QUIZ)
        self.assertEqual(len(questions), 4)
        self.assertEqual(questions[1].choices, ("a", "b", "a new chunk's first block"))
        self.assertEqual((questions[1].answer, questions[3].tolerance), (2, 16.0))
        self.assertEqual(quiz.problems(EXERCISE, SAMPLE_QUIZ), [])

    def test_answers_are_judged(self):
        number, choice, _, rough = quiz.load(EXERCISE, SAMPLE_QUIZ)
        self.assertTrue(number.is_right(2) and not number.is_right(3))
        self.assertTrue(choice.is_right(2) and not choice.is_right(1))
        self.assertTrue(rough.is_right(500) and rough.is_right(528) and not rough.is_right(529))
        self.assertEqual(choice.right_answer(), "2 (b)")
        self.assertEqual(rough.right_answer(), "512 (± 16)")

    def question(self, body: str, count: int = 4) -> str:
        good = '[[question]]\nask = "Q{n}?"\nanswer = 1\nexplain = "Because."\n'
        return "".join(good.replace("{n}", str(n)) for n in range(count - 1)) + "[[question]]\n" + body

    def test_problems_are_named(self):
        cases = {
            'ask = "Which?"\nchoices = ["a", "b"]\nanswer = 3\nexplain = "x"\n': "none is right",
            'ask = "Which?"\nchoices = ["a", "a"]\nanswer = 1\nexplain = "x"\n': "more than one right answer",
            'ask = "Which?"\nchoices = ["a"]\nanswer = 1\nexplain = "x"\n': "at least two",
            'ask = "How many?"\nanswer = 1\n': "no explanation",
            'ask = "How many?"\nanswer = 1\nexplain = "  "\n': "no explanation",
            'ask = "Q0?"\nanswer = 1\nexplain = "x"\n': "asks the same as an earlier question",
            'ask = "How many?"\nanswer = 1\ntolerance = -1\nexplain = "x"\n': "negative",
        }
        for body, expected in cases.items():
            with self.subTest(body=body):
                [problem] = quiz.problems(EXERCISE, self.write(self.question(body)))
                self.assertIn("question 4", problem)
                self.assertIn(expected, problem)

    def test_malformed_questions_are_catalog_errors(self):
        cases = {
            'ask = "Which?"\nchoices = ["a", "b"]\nanswer = 1.5\nexplain = "x"\n': "number (1, 2, ...) of the one",
            'ask = "Which?"\nchoices = ["a", "b"]\nanswer = [1, 2]\nexplain = "x"\n': "`answer` is a number",
            'ask = "Which?"\nanswer = true\nexplain = "x"\n': "`answer` is a number",
            'ask = "Which?"\nexplain = "x"\n': "no `answer`",
            'ask = "Which?"\nanswer = 1\nexplanation = "x"\n': "unknown key(s) explanation",
        }
        for body, expected in cases.items():
            with self.subTest(body=body):
                with self.assertRaises(CatalogError) as ctx:
                    quiz.load(EXERCISE, self.write(self.question(body)))
                self.assertIn(expected, str(ctx.exception))
                self.assertEqual(len(quiz.problems(EXERCISE, self.write(self.question(body)))), 1)

    def test_four_to_six_questions(self):
        body = 'ask = "Last?"\nanswer = 1\nexplain = "x"\n'
        self.assertIn("has 3 questions", quiz.problems(EXERCISE, self.write(self.question(body, 3)))[0])
        self.assertEqual(quiz.problems(EXERCISE, self.write(self.question(body, 6))), [])
        self.assertIn("has 7 questions", quiz.problems(EXERCISE, self.write(self.question(body, 7)))[0])

    def test_a_missing_quiz_is_one_problem(self):
        [problem] = quiz.problems(EXERCISE, self.dir / "none.quiz.toml")
        self.assertIn("no quiz", problem)
        self.assertIn("is missing", problem)


class QuizAsking(unittest.TestCase):
    def ask(self, answers: str) -> tuple[int | None, str, quiz.Asker]:
        out = io.StringIO()
        asker = quiz.Asker(io.StringIO(answers), out)
        right = asker.ask_all(EXERCISE, quiz.load(EXERCISE, SAMPLE_QUIZ))
        return right, out.getvalue(), asker

    def test_each_answer_is_explained_and_the_score_given(self):
        right, text, _ = self.ask("2\nb\n7\n2\n3,000\n500\n")
        self.assertEqual(right, 3)
        self.assertIn("Question 1 of 4", text)
        self.assertIn("  2. b", text, "choices are numbered")
        self.assertIn("Your answer (1-3): b\nType the number of a choice, from 1 to 3.", text,
                      "without a terminal the answer is echoed, and a bad one is asked again")
        self.assertIn("✓ Right. One shadow byte describes 8 bytes", text)
        self.assertIn("✗ Not quite: the answer is 3096. Capacity minus the cursor", text)
        self.assertIn("Score: 3 of 4 right.", text)

    def test_the_end_of_the_input_stops_without_a_score(self):
        right, text, asker = self.ask("2\n")
        self.assertIsNone(right)
        self.assertFalse(asker.interrupted)
        self.assertIn("Stopped at question 2 of 4; nothing is recorded.", text)
        self.assertNotIn("Score", text)

    def test_ctrl_c_stops_without_a_score(self):
        class Interrupting(io.StringIO):
            def readline(self, *args):
                raise KeyboardInterrupt
        asker = quiz.Asker(Interrupting(), io.StringIO())
        self.assertIsNone(asker.ask_all(EXERCISE, quiz.load(EXERCISE, SAMPLE_QUIZ)))
        self.assertTrue(asker.interrupted)


class ProgressAndList(Temp):
    def current(self) -> tuple[str, int | None]:
        return Progress(self.state).standing(EXERCISE)

    def text(self) -> str:
        return overview.status_text(EXERCISE, Progress(self.state), colour=False)

    def test_a_full_verdict_is_recorded_with_the_file_hash(self):
        file = self.dir / "arena.hpp"
        file.write_text("v1")
        saved(self.state, "record_verdict", EXERCISE, verdict({1: "passed", 2: "failed", 3: "failed", 4: "failed"}),
                                progress.digest(file))
        self.assertEqual(self.current(), ("failing", 2))
        self.assertEqual(self.text(), "✗ at stage 2 of 4")
        self.assertTrue(Progress(self.state).is_fresh(EXERCISE, file))
        file.write_text("v2")
        self.assertFalse(Progress(self.state).is_fresh(EXERCISE, file), "an edit makes the verdict stale")

    def test_a_stage_run_is_recorded_as_that_stage_and_never_as_a_pass(self):
        saved(self.state, "record_verdict", EXERCISE, verdict({1: "passed", 2: "passed", 3: "passed", 4: "passed"}), "h")
        self.assertEqual(self.text(), "✓ passed")
        saved(self.state, "record_verdict", EXERCISE, verdict({1: "passed"}), "h2")
        self.assertEqual(self.current(), ("stage passed", 1), "the stale pass is gone")
        self.assertEqual(self.text(), "stage 1 of 4 passes (judged alone) · passed once")
        self.assertFalse(Progress(self.state).is_fresh(EXERCISE), "a stage run is no verdict on the exercise")
        saved(self.state, "record_verdict", EXERCISE, verdict({3: "failed"}), "h3")
        self.assertEqual(self.text(), "✗ stage 3 of 4 fails (judged alone) · passed once")
        self.assertEqual(overview.passed_count(Catalog((EXERCISE,), LIMITS), Progress(self.state)), 0)

    def test_a_compile_error_is_does_not_compile(self):
        saved(self.state, "record_verdict", EXERCISE, verdict({1: "failed", 2: "failed", 3: "failed", 4: "failed"},
                                                  compiles=False), "h")
        self.assertEqual(self.text(), "✗ does not compile")
        self.assertIn("01 ✗ compile", overview.summary(Catalog((EXERCISE,), LIMITS), Progress(self.state)))

    def test_passed_once_stays_visible_after_a_later_edit_breaks_it(self):
        saved(self.state, "record", EXERCISE, True, None)
        saved(self.state, "record", EXERCISE, False, 3)
        self.assertEqual(self.text(), "✗ at stage 3 of 4 · passed once")
        self.assertTrue(Progress(self.state).has_passed(EXERCISE))

    def test_list_shows_hints_taken_and_the_quiz(self):
        saved(self.state, "record", EXERCISE, False, 1)
        take_hint_at(self.state, EXERCISE)
        take_hint_at(self.state, EXERCISE)
        saved(self.state, "record", EXERCISE, False, 4)
        take_hint_at(self.state, EXERCISE)
        saved(self.state, "record_quiz", EXERCISE, 4, 5)
        lines = overview.render(Catalog((EXERCISE,), LIMITS), Progress(self.state)).splitlines()
        self.assertEqual(lines[2], "    hints taken: 2 for stage 1, 1 for stage 4 · quiz: 4 of 5 right")
        entry = json.loads(self.state.read_text())["exercises"]["01-arena"]
        self.assertEqual(entry["hints"], {"1": 2, "4": 1})
        self.assertEqual((entry["quiz"]["right"], entry["quiz"]["of"]), (4, 5))

    def test_a_reset_keeps_what_was_earned(self):
        saved(self.state, "record", EXERCISE, True, None)
        saved(self.state, "record_quiz", EXERCISE, 3, 4)
        take_hint_at(self.state, EXERCISE)
        saved(self.state, "restart", EXERCISE)
        self.assertEqual(self.current(), ("not started", None))
        entry = Progress(self.state).entry(EXERCISE)
        self.assertTrue(entry["passed_once"])
        self.assertEqual(entry["quiz"]["right"], 3)

    def test_a_damaged_progress_file_is_read_as_empty(self):
        self.state.write_text('{"exercises": {"01-arena": [1, 2]}}')
        self.assertEqual(self.current(), ("not started", None))
        saved(self.state, "record", EXERCISE, False, 2)
        self.assertEqual(self.current(), ("failing", 2))


class HintsFollowTheLearner(Temp):
    def hint(self) -> str:
        return take_hint_at(self.state, EXERCISE)

    def test_hints_of_the_first_failing_stage_in_order_then_the_last_again(self):
        saved(self.state, "record", EXERCISE, False, 4)
        first = self.hint()
        self.assertIn("Stage 4 (title 4) is the first stage that fails.", first)
        self.assertIn("Hint 1 of 3 for stage 4 (concept): concept hint for stage 4", first)
        self.assertIn("Hint 2 of 3 for stage 4 (approach): approach hint for stage 4", self.hint())
        last = self.hint()
        self.assertIn("Hint 3 of 3 for stage 4 (code): code hint for stage 4", last)
        self.assertIn("That was the last hint for stage 4", last)
        again = self.hint()
        self.assertIn("You have seen all 3 hints for stage 4. The last one again:", again)
        self.assertIn("Hint 3 of 3 for stage 4 (code)", again)
        self.assertIn("chapters/01-arena.md", again, "and it points to the chapter")
        self.assertEqual(Progress(self.state).hints_taken(EXERCISE), {4: 3})

    def test_each_stage_counts_its_own_hints(self):
        saved(self.state, "record", EXERCISE, False, 1)
        self.hint()
        saved(self.state, "record", EXERCISE, False, 2)
        self.assertIn("Hint 1 of 3 for stage 2 (concept)", self.hint())
        saved(self.state, "record", EXERCISE, False, 1)
        self.assertIn("Hint 2 of 3 for stage 1 (approach)", self.hint(), "back at stage 1, where it left off")

    def test_a_passed_exercise_points_to_after_you_pass(self):
        saved(self.state, "record", EXERCISE, True, None)
        text = self.hint()
        self.assertIn("passes every stage: no hint needed", text)
        self.assertIn('part "## After you pass"', text)
        self.assertEqual(Progress(self.state).hints_taken(EXERCISE), {})

    def test_a_file_that_does_not_compile_gets_no_hint(self):
        saved(self.state, "record", EXERCISE, False, None, compiles=False)
        self.assertIn("does not compile", self.hint())
        self.assertEqual(Progress(self.state).hints_taken(EXERCISE), {})


# Stage 2 of this exercise has hints of its own for its test Suite2.T and for nothing else.
TESTED = dataclasses.replace(EXERCISE, stages=tuple(
    dataclasses.replace(st, hints=st.hints + tuple(Hint(level, f"{level} hint for T", ("T",)) for level in LEVELS))
    if st.number == 2 else st for st in EXERCISE.stages))


class HintsFollowTheFailingTest(Temp):
    def hint(self) -> str:
        return take_hint_at(self.state, TESTED)

    def test_the_first_failing_tests_hints_come_first_then_the_stages(self):
        saved(self.state, "record_verdict", TESTED, verdict({1: "passed", 2: "failed", 3: "failed", 4: "failed"}), "h")
        first = self.hint()
        self.assertIn("Stage 2 (title 2) is the first stage that fails; its first failing test is Suite2.T.", first)
        self.assertIn("Hint 1 of 3 for Suite2.T (concept): concept hint for T", first)
        self.assertIn("Hint 2 of 3 for Suite2.T (approach): approach hint for T", self.hint())
        last = self.hint()
        self.assertIn("Hint 3 of 3 for Suite2.T (code): code hint for T", last)
        self.assertIn("That was the last hint for Suite2.T; asked again, `hint` gives the hints for the whole stage.",
                      last)
        stage = self.hint()
        self.assertIn("You have seen all 3 hints for Suite2.T; now the hints for the whole stage.", stage)
        self.assertIn("Hint 1 of 3 for stage 2 (concept): concept hint for stage 2", stage)
        self.hint()
        self.assertIn("That was the last hint for stage 2.", self.hint())
        again = self.hint()
        self.assertIn("You have seen all 3 hints for Suite2.T and all 3 for stage 2. The last one again:", again)
        self.assertIn("Hint 3 of 3 for Suite2.T (code): code hint for T", again)
        self.assertEqual(Progress(self.state).hints_taken(TESTED), {2: 6}, "list counts both")
        entry = json.loads(self.state.read_text())["exercises"]["01-arena"]
        self.assertEqual((entry["hints"], entry["test_hints"]), ({"2": 3}, {"2": {"T": 3}}))

    def test_a_test_without_hints_of_its_own_gets_the_stages(self):
        saved(self.state, "record_verdict", TESTED, verdict({1: "failed", 2: "failed", 3: "failed", 4: "failed"}), "h")
        text = self.hint()
        self.assertIn("its first failing test is Suite1.T.", text)
        self.assertIn("Hint 1 of 3 for stage 1 (concept): concept hint for stage 1", text)

    def test_the_first_failing_test_is_the_first_cross_of_the_report(self):
        v = verdict({1: "passed", 2: "failed", 3: "failed", 4: "failed"})
        v.configs[0].stages[1].tests[:] = [TestOutcome("Suite2.A", "passed"), TestOutcome("Suite2.T", "failed"),
                                          TestOutcome("Suite2.B", "failed")]
        self.assertEqual(v.first_failing_test(), "Suite2.T")
        saved(self.state, "record_verdict", TESTED, v, "h")
        self.assertEqual(Progress(self.state).failing_test(TESTED), "Suite2.T")
        saved(self.state, "record_verdict", TESTED, verdict({1: "passed", 2: "passed", 3: "passed", 4: "passed"}), "h2")
        self.assertIsNone(Progress(self.state).failing_test(TESTED), "a pass forgets the failing test")

    def test_a_progress_file_from_before_test_hints_still_loads(self):
        """Written by a judge that counted hints per stage only: no test, no test_hints."""
        self.state.write_text(json.dumps({"exercises": {"01-arena": {
            "status": "failing", "stage": 2, "when": "2026-01-01T00:00:00", "hints": {"2": 1}}}}))
        self.assertEqual(Progress(self.state).hints_taken(TESTED), {2: 1})
        self.assertIn("Hint 2 of 3 for stage 2 (approach)", self.hint(), "without a test, the stage's hints")
        self.assertIn("hints taken: 2 for stage 2", overview.extras(TESTED, Progress(self.state)))


class VerdictText(unittest.TestCase):
    def render(self, v: Verdict) -> str:
        return report.render(v, EXERCISE, command="python3 judge/judge.py test 1 --stage 1")

    def test_a_stage_run_names_what_ran(self):
        text = self.render(verdict({1: "passed"}))
        self.assertIn("✓ Stage 1 passes; stages 2-4 not judged (1 test, ", text)
        self.assertNotIn("passes every stage", text)

    def test_a_failing_stage_run_names_what_did_not_run(self):
        text = self.render(verdict({3: "failed"}))
        self.assertIn("Not passed yet: stage 3 (title 3): 1 of 1 tests fail; stages 1-2, 4 not judged.", text)

    def test_a_pass_counts_tests_and_points_to_after_you_pass(self):
        v = verdict({1: "passed", 2: "passed", 3: "passed", 4: "passed"})
        v.configs.append(dataclasses.replace(v.configs[0], sanitizer="tsan"))
        text = self.render(v)
        self.assertIn("✓ Exercise 01 passes every stage (4 tests in 2 builds, ", text,
                      "the same test in two builds is one test")
        self.assertIn('Now read chapters/01-arena.md, part "## After you pass"', text)
        self.assertNotIn("After you pass", self.render(verdict({n: "passed" for n in (1, 2, 3, 4)},
                                                               implementation="solutions")),
                         "the reference's pass is no learner's")


if __name__ == "__main__":
    unittest.main()
