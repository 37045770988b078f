"""Known mistakes: every hunk of a diff marks the line that is wrong, and the shipped diffs do."""
import unittest
from pathlib import Path

from lab.model import catalog as cat
from lab.maintainer import mistakes as mis

_MARKED = """Mistake: x
Caught by: S.T

--- a
+++ b
@@ -2,3 +2,3 @@
 b
-c
+C  // MISTAKE: upper case
 d
"""


class MarkedHunksTest(unittest.TestCase):
    def test_a_hunk_that_marks_its_line_passes(self):
        self.assertEqual(mis.unmarked_hunks(_MARKED), [])

    def test_a_hunk_without_a_marked_line_is_named_by_its_line(self):
        diff = _MARKED + "@@ -9,3 +9,3 @@\n h\n-i\n+I\n j\n"
        self.assertEqual(mis.unmarked_hunks(diff), [9])

    def test_a_deletion_must_leave_a_marked_line(self):
        diff = "--- a\n+++ b\n@@ -4,3 +4,2 @@\n d\n-e\n f\n"
        self.assertEqual(mis.unmarked_hunks(diff), [4])

    def test_a_marker_on_a_removed_or_context_line_does_not_count(self):
        diff = "--- a\n+++ b\n@@ -4,3 +4,3 @@\n d  // MISTAKE\n-e  // MISTAKE\n+E\n f\n"
        self.assertEqual(mis.unmarked_hunks(diff), [4])

    def test_the_file_header_lines_are_not_a_hunk(self):
        self.assertEqual(mis.unmarked_hunks("Mistake: x\n--- a\n+++ b  // MISTAKE\n"), [])

    def test_every_shipped_mistake_marks_every_hunk(self):
        for ex in cat.load().exercises:
            for mistake in mis.mistakes(ex):
                with self.subTest(mistake=mistake.path.name):
                    self.assertEqual(mis.unmarked_hunks(mistake.path.read_text(encoding="utf-8")), [])


class ModelLineTest(unittest.TestCase):
    """A mistake names the model stage's test among those that catch it, or says why the model
    cannot catch it, or neither (the model could, but its generator does not find it yet): the
    files are the table."""

    def _problems(self, caught_by: str, beyond: str = "") -> list[str]:
        found = [mis.Mistake(Path("m.diff"), "x", tuple(t.strip() for t in caught_by.split(",")), beyond)]
        return mis.model_problems("ArenaModel", found)

    def test_a_mistake_the_model_catches_names_its_test(self):
        self.assertEqual(self._problems("ArenaBasics.T, ArenaModel.EveryCallAgreesWithTheModel"),
                         [])

    def test_a_mistake_beyond_the_model_says_why(self):
        self.assertEqual(self._problems("ArenaBasics.T", "a race"), [])

    def test_a_mistake_that_does_neither_is_counted_as_a_gap_of_the_generator(self):
        self.assertEqual(self._problems("ArenaBasics.T"), [])
        self.assertIn("it could, but does not yet", mis.model_table([]).splitlines()[0])

    def test_a_mistake_that_does_both_is_named(self):
        problems = self._problems("ArenaModel.E", "a race")
        self.assertEqual(len(problems), 1)
        self.assertIn("says it is beyond the model", problems[0])

    def test_no_shipped_mistake_both_names_the_model_and_says_it_is_beyond_it(self):
        for ex in cat.load().exercises:
            with self.subTest(exercise=ex.name):
                self.assertEqual(mis.model_problems(ex.stages[-1].suite, mis.mistakes(ex)), [])


if __name__ == "__main__":
    unittest.main()
