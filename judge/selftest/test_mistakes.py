"""Known mistakes: every hunk of a diff marks the line that is wrong, and the shipped diffs do."""
import unittest

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


if __name__ == "__main__":
    unittest.main()
