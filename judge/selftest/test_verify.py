"""Reading what a test program said: its JSON report, and its console output when it died."""
import unittest

from lab.core import gtest_report
from lab.model import results

STDOUT_BEFORE_A_CRASH = """[==========] Running 3 tests from 1 test suite.
[ RUN      ] S.First
[       OK ] S.First (0 ms)
[ RUN      ] S.Second
judge/tests/x.cpp:12: Failure
Expected equality of these values:
  a
[  FAILED  ] S.Second (0 ms)
[ RUN      ] S.Third
"""


def report(*tests, canary_failures=()):
    def entry(name, failures=(), result="COMPLETED", stamp="2026-12-02T10:00:00.000"):
        return {"name": name, "status": "RUN", "result": result, "timestamp": stamp, "time": "0.002s",
                "failures": [{"failure": f, "type": ""} for f in failures]}
    return {"testsuites": [
        {"name": "S", "testsuite": [entry(*t) if isinstance(t, tuple) else entry(t) for t in tests]},
        {"name": gtest_report.CANARY, "testsuite": [entry("AssertionsStillFail", canary_failures)]}]}


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.stage = results.StageResult(1, "S", "s", "goal")
        self.outcomes = {}

    def test_failures_and_passes_are_recorded_with_messages(self):
        gtest_report.record_report(report("A", ("B", ["x.cpp:3\nExpected equality"])), ["S.A", "S.B"], self.outcomes, self.stage)
        self.assertEqual(self.outcomes["S.A"].status, "passed")
        self.assertEqual(self.outcomes["S.B"].status, "failed")
        self.assertIn("Expected equality", self.outcomes["S.B"].messages[0])
        self.assertEqual(self.stage.problems, [])

    def test_a_test_missing_from_the_report_is_not_recorded(self):
        gtest_report.record_report(report("A"), ["S.A", "S.Hidden"], self.outcomes, self.stage)
        self.assertNotIn("S.Hidden", self.outcomes)

    def test_a_skipped_test_does_not_pass(self):
        gtest_report.record_report(report(("A", [], "SKIPPED")), ["S.A"], self.outcomes, self.stage)
        self.assertEqual(self.outcomes["S.A"].status, "skipped")
        self.assertFalse(self.outcomes["S.A"].ok)

    def test_a_test_that_never_started_does_not_pass(self):
        for epoch in ("1970-01-01T00:00:00.000", "1969-12-31T19:00:00.000"):
            outcomes = {}
            gtest_report.record_report(report(("A", [], "COMPLETED", epoch)), ["S.A"], outcomes, self.stage)
            self.assertNotIn("S.A", outcomes, epoch)

    def test_a_canary_that_fails_means_tampering(self):
        gtest_report.record_report(report("A", canary_failures=["EXPECT_EQ did not fail"]), ["S.A"], self.outcomes, self.stage)
        self.assertIn("changed the framework's macros", self.stage.problems[0])


class ConsoleTest(unittest.TestCase):
    def test_the_test_running_at_a_crash_is_found(self):
        self.assertEqual(gtest_report.running_test(STDOUT_BEFORE_A_CRASH), "S.Third")
        self.assertIsNone(gtest_report.running_test("[ RUN      ] S.A\n[       OK ] S.A (0 ms)\n"))

    def test_results_printed_before_a_crash_are_kept(self):
        outcomes = {}
        gtest_report.record_finished(STDOUT_BEFORE_A_CRASH, outcomes, ["S.First", "S.Second", "S.Third"])
        self.assertEqual(outcomes["S.First"].status, "passed")
        self.assertEqual(outcomes["S.Second"].status, "failed")
        self.assertIn("Expected equality", outcomes["S.Second"].messages[0])
        self.assertNotIn("S.Third", outcomes)


class VerdictTest(unittest.TestCase):
    def test_first_failing_stage_over_every_configuration(self):
        def stage(n, status):
            return results.StageResult(n, "S", "s", "g", status)
        build = results.BuildSummary(True, 1.0)
        v = results.Verdict("01-x", "X", "exercises", "f", False, [
            results.ConfigResult("clang", "asan", build, [stage(1, "passed"), stage(2, "passed")]),
            results.ConfigResult("clang", "tsan", build, [stage(2, "failed")])])
        self.assertEqual(v.first_failing_stage(), 2)
        self.assertEqual(v.to_json()["verdict"], "failed")


if __name__ == "__main__":
    unittest.main()
