"""The catalog: names resolve, the shipped catalog is valid, and validation names each problem."""
import dataclasses
import tempfile
import unittest
from pathlib import Path

from lab.model import catalog as cat
from lab.maintainer import lint, mistakes as mis


LIMITS = cat.load().limits


class ResolveTest(unittest.TestCase):
    def setUp(self):
        self.catalog = cat.load()

    def test_every_spelling_names_exercise_one(self):
        for name in ("1", "01", "arena", "01-arena", " Arena "):
            self.assertEqual(self.catalog.resolve(name).id, 1, name)

    def test_unknown_name_lists_the_exercises(self):
        with self.assertRaises(cat.CatalogError) as ctx:
            self.catalog.resolve("heap")
        self.assertIn("1 (arena)", str(ctx.exception))

    def test_exercises_are_in_order(self):
        ids = [ex.id for ex in self.catalog.exercises]
        self.assertEqual(ids, sorted(ids))


class ValidateTest(unittest.TestCase):
    def test_shipped_catalog_is_valid(self):
        """The catalog itself; the chapters and quizzes it points to are test_course's."""
        self.assertEqual(lint.catalog_problems(cat.load()), [])

    def test_problems_are_named(self):
        catalog = cat.load()
        arena = catalog.exercises[0]
        broken = dataclasses.replace(arena, id=3, slug="Bad_Slug", difficulty="trivial", sanitizers=("msan",),
                                     stages=(cat.Stage(1, "NoSuchSuite", "x", "y", ("asan",)),))
        problems = "\n".join(lint.validate(cat.Catalog((broken,), catalog.limits)))
        for expected in ("ids must be 1, 2, 3", "slug 'Bad_Slug'", "difficulty", "stage 1: 0 hint(s)",
                         "sanitizers must be chosen", "NoSuchSuite"):
            self.assertIn(expected, problems)

    def test_an_exercise_whose_last_stage_is_not_a_model_stage_is_named(self):
        arena = cat.load().exercises[0]
        without_model = dataclasses.replace(arena, stages=arena.stages[:-1])
        problems = "\n".join(lint.catalog_problems(cat.Catalog((without_model,), LIMITS)))
        self.assertIn("the last stage must be the model stage", problems)
        self.assertNotIn("the last stage must be", "\n".join(lint.catalog_problems(cat.Catalog((arena,), LIMITS))))

    def test_model_tests_are_read_from_the_test_files(self):
        self.assertEqual(cat.tests_in_source(cat.load().exercises[0]).get("ArenaModel"),
                         ["EveryCallAgreesWithTheModel"])

    def test_hints_for_a_test_are_checked_against_the_suite_and_the_level_rules(self):
        arena = cat.load().exercises[0]
        first = arena.stages[0]
        [test, *_] = cat.tests_in_source(arena)[first.suite]
        own = (cat.Hint("concept", "Which idea?", (test,)), cat.Hint("approach", "Keep `used_`.", (test,)),
               cat.Hint("code", "`used_ += n;`", (test,)))
        good = dataclasses.replace(first, hints=first.hints + own)
        self.assertEqual(lint.catalog_problems(cat.Catalog((dataclasses.replace(arena, stages=(good, *arena.stages[1:])),), LIMITS)), [])
        bad = (cat.Hint("code", "`used_ += n;`", (test,)), cat.Hint("concept", "Is `used_` right?", (test,)),
               cat.Hint("approach", "x", ("NoSuchTest",)))
        broken = dataclasses.replace(first, hints=first.hints + bad)
        problems = "\n".join(lint.catalog_problems(cat.Catalog((dataclasses.replace(
            arena, stages=(broken, *arena.stages[1:])),), LIMITS)))
        for expected in (f"the hints for {first.suite}.{test}: the hints go code, concept; they must go concept",
                         f"the hints for {first.suite}.{test}: no approach hint",
                         f"the hints for {first.suite}.{test}: hint 2 is a concept hint but contains code",
                         f"a hint names test 'NoSuchTest', which suite {first.suite} does not define",
                         f"the hints for {first.suite}.NoSuchTest: 1 hint(s); a test with hints of its own needs"):
            self.assertIn(expected, problems)
        self.assertNotIn("stage 1: 3 hint", problems, "the stage's own hints are counted apart from the tests'")

    def test_malformed_toml_is_a_catalog_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "catalog.toml"
            path.write_text("[[exercise]]\nid = 1\n")  # no slug, title or header
            with self.assertRaises(cat.CatalogError):
                cat.load(path)
            path.write_text("this is = = not toml")
            with self.assertRaises(cat.CatalogError):
                cat.load(path)


class SourceTest(unittest.TestCase):
    def test_tests_are_read_from_the_test_files(self):
        suites = cat.tests_in_source(cat.load().resolve("arena"))
        self.assertIn("RejectsZeroCapacity", suites["ArenaBasics"])

    def test_every_mistake_names_its_test_and_applies_to_its_reference(self):
        for ex in cat.load().exercises:
            found = mis.mistakes(ex)
            self.assertGreaterEqual(len(found), 10, ex.name)
            for mistake in found:
                self.assertTrue(mistake.description, mistake.path)
                self.assertTrue(mistake.caught_by, mistake.path)
                wrong = mis.apply(ex.solution_file.read_text(), mistake.path.read_text())
                self.assertNotEqual(wrong, ex.solution_file.read_text(), mistake.path)


class ApplyTest(unittest.TestCase):
    ORIGINAL = "a\nb\nc\nd\ne\n"

    def test_a_hunk_replaces_lines_in_context(self):
        diff = "Mistake: x\n\n--- a\n+++ b\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"
        self.assertEqual(mis.apply(self.ORIGINAL, diff), "a\nb\nC\nd\ne\n")

    def test_insertions_at_the_start_and_deletions_at_the_end(self):
        diff = "@@ -0,0 +1 @@\n+z\n@@ -4,2 +5,1 @@\n d\n-e\n"
        self.assertEqual(mis.apply(self.ORIGINAL, diff), "z\na\nb\nc\nd\n")

    def test_a_diff_that_no_longer_matches_is_refused(self):
        with self.assertRaises(mis.PatchError):
            mis.apply(self.ORIGINAL, "@@ -2,2 +2,2 @@\n b\n-x\n+y\n")


if __name__ == "__main__":
    unittest.main()


class HintLayout(unittest.TestCase):
    """Hints are reviewed as text: multi-line strings wrapped at 100 columns."""

    def layout(self, text: str) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "catalog.toml"
            path.write_text(text)
            return lint.hint_layout_problems(path)

    def test_the_shipped_catalog_is_wrapped(self):
        self.assertEqual(lint.hint_layout_problems(), [])

    def test_a_hint_on_one_line_and_a_long_line_are_named(self):
        problems = self.layout('  { level = "code", text = "x" },\n'
                               '  { level = "code", text = """\\\n      ' + "word " * 30 + '""" },\n'
                               '  { level = "code", text = """\\\n      short""" },\n')
        self.assertEqual(len(problems), 2, problems)
        self.assertIn(":1: a hint on one line", problems[0])
        self.assertIn(":3: a hint's line is 162 columns long", problems[1])
