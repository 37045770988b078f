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

    def test_the_first_failing_test_in_full_and_every_other_in_a_line(self):
        """A learner reads the first failure whole; the others are a list of what is left, each
        with the sentence its test's author wrote (GoogleTest's own lines when there is none)."""
        first = ["x.cpp:1: Failure\nExpected equality of these values:\n  a.capacity()\n    Which is: 0\n"
                 "capacity() must return the size given to the constructor."]
        second = ["x.cpp:2: Failure\nExpected: (p) != (nullptr), actual: NULL vs (nullptr)\n"
                  "allocate(100) returned nullptr: it must return usable bytes."]
        third = ["x.cpp:3: Failure\nExpected equality of these values:\n  arena.used()\n    Which is: 0"]
        s = stage(T("S.Ok", "passed"), T("S.A", "failed", first), T("S.B", "failed", second),
                  T("S.C", "failed", third))
        lines = report.stage_lines(s, True, False)
        text = "\n".join(lines)
        self.assertIn("        Expected equality of these values:", text, "the first failing test is shown whole")
        self.assertIn("    ✗ S.B: allocate(100) returned nullptr: it must return usable bytes.", lines)
        self.assertIn("    ✗ S.C: Expected equality of these values: arena.used() Which is: 0", lines)
        self.assertNotIn("x.cpp:2", text, "the others' messages are one line each")
        self.assertIn("-v shows all their messages", lines[-1])
        verbose = "\n".join(report.stage_lines(s, True, True))
        self.assertIn("x.cpp:2", verbose, "-v keeps every message")
        self.assertIn("    ✗ S.B\n", verbose)
        graded = "\n".join(report.stage_lines(s, True, False, every_message=True))
        self.assertIn("allocate(100) returned nullptr", graded, "a grader's report, read without -v, keeps them all")
        self.assertNotIn("-v shows", graded)

    def test_verbose_lists_every_test(self):
        s = stage(*(T(f"S.T{i}", "failed", nullptr_failure(i)) for i in range(4)))
        text = "\n".join(report.stage_lines(s, True, True))
        self.assertEqual(text.count("returned nullptr"), 4)


if __name__ == "__main__":
    unittest.main()
