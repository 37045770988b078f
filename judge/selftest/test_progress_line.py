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

    def test_chinese_is_cut_by_the_columns_it_takes(self):
        """A Chinese character takes two columns: a line cut by its length would wrap, and a
        wrapped line is never redrawn in place (watch's status line in Chinese)."""
        terminal = Terminal()
        with mock.patch.dict(os.environ, {"COLUMNS": "40"}), ui.ProgressLine("", terminal) as line:
            line.draw("监视 arena.hpp · 停在阶段 1/5 · h 提示 · l 列表 · r 运行 · q 退出")
        drawn = terminal.getvalue().split("\r\033[K")[1]
        self.assertLessEqual(ui.columns(drawn), 39)
        self.assertGreaterEqual(ui.columns(drawn), 37)
        self.assertTrue(drawn.endswith("…"))

    def test_elsewhere_only_the_plain_lines_are_written(self):
        pipe, log = io.StringIO(), io.StringIO()
        with ui.ProgressLine("grading", pipe, log=log) as line:
            line.show(0, 2)
            line.show(1, 2, "  alice", plain="alice · 01-arena: 10/10")
        self.assertEqual(pipe.getvalue(), "")
        self.assertEqual(log.getvalue(), "alice · 01-arena: 10/10\n")


class CheckProgressTest(unittest.TestCase):
    def test_check_shows_the_jobs_done_the_one_running_and_the_time(self):
        """`check` runs for half an hour and its first result comes after minutes: its line says
        how far it is, which job runs, and for how long it has run; results print above it."""
        import contextlib
        from lab.maintainer import check
        terminal, out = Terminal(), io.StringIO()
        running = check._Running(3)
        running.line = ui.ProgressLine("check", terminal)
        with mock.patch.dict(os.environ, {"COLUMNS": "200"}), contextlib.redirect_stdout(out), running:
            with running.job("01-arena: reference clang"):
                self.assertIn("check [", terminal.getvalue())
                self.assertIn("0/3  0m 0", terminal.getvalue())
                self.assertIn("s  01-arena: reference clang", terminal.getvalue())
            running.print("✓ the reference passes")
            self.assertEqual(running.guarded("02: broken", lambda: 1 / 0)[0].ok, False, "a job's error is a result")
        drawn = terminal.getvalue().split("\r\033[K")
        self.assertTrue(any("1/3  0m 0" in d for d in drawn), drawn)
        self.assertIn("2/3", drawn[-2])
        self.assertEqual(drawn[-1], "", "the line is wiped at the end")
        self.assertEqual(out.getvalue(), "✓ the reference passes\n")


if __name__ == "__main__":
    unittest.main()
