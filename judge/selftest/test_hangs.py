"""A hang costs one time limit, not one per test: when every stage hangs on its first run (a
constructor that never returns), the exercise gets its verdict after a single limit; when one
test hangs, the others still get theirs.

The logic is tested on a stand-in for a GoogleTest binary (a few lines of Python that honour
--gtest_filter and --gtest_output), so it runs in seconds; the bound is then checked for real
on a header whose constructor loops forever, judged with the catalog's own limits."""
from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import textwrap
import time
import types
import unittest
from pathlib import Path

from lab.core import build, judging
from lab.model import catalog as cat, results
from lab.model.catalog import Stage

from .test_hostile import HOSTILE, SLOT, _which, exercise_for, wait_for_no_leftovers

FAKE_GTEST = textwrap.dedent("""\
    import json, os, sys, time
    plan = json.loads(os.environ["FAKE_PLAN"])          # {"Suite.Test": "pass" | "fail" | "hang"}
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
    positive, _, negative = args["gtest_filter"].partition("-")
    suites = [p[:-2] for p in positive.split(":") if p.endswith(".*")]
    named = {p for p in positive.split(":") if not p.endswith(".*")}
    skip = set(negative.split(":")) if negative else set()
    results = {}
    for name, what in plan.items():
        if (name.split(".")[0] not in suites and name not in named) or name in skip:
            continue
        print("[ RUN      ] " + name, flush=True)
        if what == "hang":
            while True:
                time.sleep(1)
        print(("[       OK ] " if what == "pass" else "[  FAILED  ] ") + name + " (0 ms)", flush=True)
        results[name] = what
    def entry(name, what):
        return {"name": name.split(".")[1], "status": "RUN", "result": "COMPLETED", "time": "0s",
                "timestamp": "2026-12-02T10:00:00.000",
                "failures": [{"failure": "x.cpp:1\\nfailed", "type": ""}] if what == "fail" else []}
    suites_out = {}
    for name, what in [*results.items(), ("AllocLabCanary.AssertionsStillFail", "pass")]:
        suites_out.setdefault(name.split(".")[0], []).append(entry(name, what))
    report = {"testsuites": [{"name": s, "testsuite": t} for s, t in suites_out.items()]}
    open(args["gtest_output"][5:], "w").write(json.dumps(report))
    sys.exit(1 if "fail" in results.values() else 0)
""")

LIMIT = 1.5
LIMITS = types.SimpleNamespace(test_timeout_seconds=LIMIT, output_bytes=65536, memory_mb=256)


class FakeBinaryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.binary = Path(self.tmp.name) / "fake_gtest"
        self.binary.write_text(f"#!{sys.executable}\n" + FAKE_GTEST)
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IXUSR)

    def tearDown(self):
        self.tmp.cleanup()

    def judge(self, plan: dict[str, str], named: tuple[str, ...] = ()) -> tuple[list[results.StageResult], float, bool]:
        suites = list(dict.fromkeys(name.split(".")[0] for name in plan))
        stages = [Stage(n, suite, suite.lower(), "", ("asan",)) for n, suite in enumerate(suites, 1)]
        expected = {suite: [name for name in plan if name.startswith(suite + ".") and (not named or name in named)]
                    for suite in suites}
        env = dict(os.environ, FAKE_PLAN=json.dumps(plan))
        start = time.monotonic()
        results, everywhere = judging.run_stages(self.binary, stages, expected, env, LIMITS,
                                                 Path("/nonexistent/focus.hpp"), named=bool(named))
        return results, time.monotonic() - start, everywhere

    def test_tests_run_by_name_run_alone(self):
        # `check` asks a known mistake only about the tests it names: the others are not run at all.
        plan = {"S1.A": "hang", "S1.B": "fail", "S1.C": "hang"}
        results, took, _ = self.judge(plan, named=("S1.B",))
        self.assertEqual([(t.name, t.status) for t in results[0].tests], [("S1.B", "failed")])
        self.assertLess(took, LIMIT, "the tests not named must not run (they would hang here)")

    def test_a_hang_in_every_stage_costs_one_limit(self):
        plan = {f"S{s}.T{t}": "hang" for s in range(1, 5) for t in range(1, 4)}
        results, took, everywhere = self.judge(plan)
        # One limit, not one per stage (4 × LIMIT) nor one per test (12 × LIMIT): the bound leaves room
        # for a loaded machine, where starting the fake binary twelve times takes seconds.
        self.assertLess(took, 3 * LIMIT, "a hang shared by every stage must cost one time limit, not one per test")
        for stage in results:
            self.assertEqual(stage.status, "failed")
            self.assertEqual([t.status for t in stage.tests], ["timeout", "not run", "not run"])
            self.assertIn("every stage hung", stage.problems[0])
        self.assertIn("constructor", results[0].problems[0])
        self.assertTrue(everywhere)

    def test_one_hanging_test_keeps_every_other_verdict(self):
        plan = {"S1.A": "pass", "S1.B": "hang", "S1.C": "fail", "S1.D": "pass", "S2.A": "pass", "S2.B": "fail"}
        results, _, everywhere = self.judge(plan)
        self.assertEqual([t.status for t in results[0].tests], ["passed", "timeout", "failed", "passed"],
                         "the tests after the one that hung must be run again and judged")
        self.assertEqual([t.status for t in results[1].tests], ["passed", "failed"])
        self.assertFalse(everywhere)

    def test_a_hang_in_some_stages_only_is_judged_test_by_test(self):
        plan = {"S1.A": "hang", "S1.B": "pass", "S2.A": "hang", "S2.B": "fail", "S3.A": "pass"}
        results, _, _ = self.judge(plan)
        self.assertEqual([t.status for t in results[0].tests], ["timeout", "passed"])
        self.assertEqual([t.status for t in results[1].tests], ["timeout", "failed"])
        self.assertEqual(results[2].status, "passed")

    def test_a_single_stage_is_never_taken_for_a_shared_hang(self):
        results, _, everywhere = self.judge({"S1.A": "hang", "S1.B": "pass"})
        self.assertEqual([t.status for t in results[0].tests], ["timeout", "passed"])
        self.assertFalse(everywhere)


class ConstructorNeverReturns(unittest.TestCase):
    """The bound, for real: every stage of exercise 01 with the catalog's own time limit."""

    BOUND = 25.0

    def test_the_whole_exercise_fails_within_the_bound(self):
        if not all(_which(t) for t in ("clang++", "cmake", "ninja")):
            self.skipTest("toolchain not installed")
        catalog = cat.load()
        exercise = exercise_for(catalog, 1)
        header = HOSTILE / "constructor-never-returns.hpp"
        start = time.monotonic()
        verdict = judging.judge(judging.Request(exercise, build.Impl("source", header), ("clang",), slot=SLOT),
                                catalog.limits)
        took = time.monotonic() - start - sum(c.build.seconds for c in verdict.configs)
        self.assertFalse(verdict.passed)
        self.assertEqual(len(verdict.configs[0].stages), len(exercise.stages))
        for stage in verdict.configs[0].stages:
            self.assertIn("timeout", {t.status for t in stage.tests}, f"stage {stage.number}")
        self.assertLessEqual(took, self.BOUND, f"a constructor that never returns took {took:.1f} s to judge, "
                             f"beyond the build; the bound is {self.BOUND:g} s for the whole exercise")
        self.assertEqual(wait_for_no_leftovers(), [])


if __name__ == "__main__":
    unittest.main()
