"""A stage whose tests all fail the same way says so once, with a count, instead of once per
test; different messages and -v still show everything."""
import unittest

from lab.learner import report
from lab.model import results

T = results.TestOutcome


def stage(*tests):
    return results.StageResult(1, "S", "basics", "goal", "failed", list(tests))


def nullptr_failure(line):
    return [f"judge/tests/01-arena/stage1_basics.cpp:{line}: Failure\nallocate() returned nullptr for 8 bytes"]


class RepeatedMessages(unittest.TestCase):
    def test_the_same_message_is_shown_once_with_a_count(self):
        s = stage(*(T(f"S.T{i}", "failed", nullptr_failure(10 * i)) for i in range(1, 9)), T("S.Ok", "passed"))
        text = "\n".join(report.stage_lines(s, True, False))
        self.assertEqual(text.count("returned nullptr"), 1, text)
        self.assertIn("7 more tests failed with the same message (T2, T3, T4, …", text)
        self.assertIn("S.Ok", text)

    def test_different_messages_are_all_shown(self):
        s = stage(T("S.A", "failed", ["x.cpp:1: Failure\none property"]),
                  T("S.B", "failed", ["x.cpp:2: Failure\nanother property"]))
        text = "\n".join(report.stage_lines(s, True, False))
        self.assertIn("one property", text)
        self.assertIn("another property", text)
        self.assertNotIn("more test", text)

    def test_tests_that_did_not_run_are_counted(self):
        s = stage(T("S.Hung", "timeout", ["no result after 20 s"]), *(T(f"S.N{i}", "not run") for i in range(5)))
        lines = report.stage_lines(s, True, False)
        self.assertIn("4 more tests did not run (N1, N2, N3, …; -v lists them)", "\n".join(lines))
        self.assertLessEqual(len(lines), 6)

    def test_verbose_lists_every_test(self):
        s = stage(*(T(f"S.T{i}", "failed", nullptr_failure(i)) for i in range(4)))
        text = "\n".join(report.stage_lines(s, True, True))
        self.assertEqual(text.count("returned nullptr"), 4)


if __name__ == "__main__":
    unittest.main()
