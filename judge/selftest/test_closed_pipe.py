"""A verdict is never lost: when the reader of standard output goes away (`judge.py test 1 |
head -1`), the judge says nothing more and still exits with the verdict's status."""
from __future__ import annotations

import subprocess
import sys
import unittest

from lab.model.catalog import ROOT

from .test_hostile import JUDGE, _which, cli_env

SPEAKS_THEN_FAILS = """
import sys
sys.path.insert(0, {lab!r})
from lab import pipe
pipe.tolerate_closed_stdout()
for i in range(100_000):
    print("line", i)
sys.exit(7)
"""


def first_line_then_close(argv: list[str]) -> tuple[str, int, str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
                            cwd=ROOT)
    line = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    return line, proc.wait(timeout=900), err


class ClosedPipe(unittest.TestCase):
    def test_the_status_survives_a_reader_that_leaves(self):
        line, code, err = first_line_then_close(
            [sys.executable, "-c", SPEAKS_THEN_FAILS.format(lab=str(ROOT / "judge"))])
        self.assertEqual(line, "line 0\n")
        self.assertEqual((code, err), (7, ""), "the program's own status, and no complaint about the pipe")

    def test_an_untouched_skeleton_exits_1_through_head(self):
        if not all(_which(t) for t in ("clang++", "cmake", "ninja")):
            self.skipTest("toolchain not installed")
        skeleton = ROOT / "exercises" / "01-arena" / "arena.hpp"
        line, code, err = first_line_then_close(
            [sys.executable, str(JUDGE), "test", "1", "--source", str(skeleton), "--stage", "1"])
        self.assertIn("Judging", line)
        self.assertNotIn("Traceback", err)
        self.assertEqual(code, 1, f"the untouched skeleton fails, and `| head -1` must not hide it:\n{err}")


if __name__ == "__main__":
    unittest.main()
