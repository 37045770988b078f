"""The terminal's one progress line (ui.ProgressLine), as serve, grade and watch draw it: redrawn
in place on a terminal, cut to its width and wiped at the end; plain lines where no terminal is."""
import io
import os
import unittest
from unittest import mock

from lab import ui


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class ProgressLineTest(unittest.TestCase):
    def test_on_a_terminal_the_line_is_redrawn_cut_to_its_width_and_wiped(self):
        terminal = Terminal()
        with mock.patch.dict(os.environ, {"COLUMNS": "40"}), ui.ProgressLine("grading", terminal) as line:
            line.show(1, 2, "  alice · 01-arena: 10/10", plain="not on a terminal")
            line.draw("x" * 100)
        drawn = terminal.getvalue().split("\r\033[K")
        self.assertTrue(drawn[1].startswith("grading [############------------] 1/2"))
        self.assertLessEqual(max(len(d) for d in drawn), 39)
        self.assertEqual(drawn[2], "x" * 38 + "…")
        self.assertEqual(drawn[-1], "", "the line is wiped at the end")
        self.assertEqual(line.last, (1, 2))

    def test_elsewhere_only_the_plain_lines_are_written(self):
        pipe, log = io.StringIO(), io.StringIO()
        with ui.ProgressLine("grading", pipe, log=log) as line:
            line.show(0, 2)
            line.show(1, 2, "  alice", plain="alice · 01-arena: 10/10")
        self.assertEqual(pipe.getvalue(), "")
        self.assertEqual(log.getvalue(), "alice · 01-arena: 10/10\n")


if __name__ == "__main__":
    unittest.main()
