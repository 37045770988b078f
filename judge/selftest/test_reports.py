"""The judge's output formats and the small parsers behind them, on verdicts built by hand:
quick, and independent of any compiler."""
from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from lab.core import build, gtest_report, sanitizers
from lab.learner import junit, report
from lab.model.catalog import Exercise, Limits, Stage
from lab.model import results
from lab.model.results import BuildSummary, ConfigResult, StageResult, StageStatus, TestOutcome, Verdict

from . import formats

EXERCISE = Exercise(1, "arena", "The arena", "", "easy", "arena.hpp", ("asan",),
                    (Stage(1, "ArenaBasics", "basics", "goal one", ("asan",)),
                     Stage(2, "ArenaAlignment", "alignment", "goal two", ("asan",))))


def sample_verdict() -> Verdict:
    """Every kind of outcome at once: passed, failed, crashed with a finding, hung, skipped,
    not run; a stage problem, a note; a second configuration that did not build; tampering."""
    finding = results.Finding("AddressSanitizer", "heap-buffer-overflow", "READ of size 8", "arena.hpp:3",
                                 "alloclab::Arena::allocate", "==1==ERROR: AddressSanitizer: heap-buffer-overflow\x01")
    stage1 = StageResult(1, "ArenaBasics", "basics", "goal one", "failed", [
        TestOutcome("ArenaBasics.A", "passed", [], None, 0.01),
        TestOutcome("ArenaBasics.B", "failed", ["stage1.cpp:10: Failure\nExpected equality <&> \"quoted\""], None, 0.02),
        TestOutcome("ArenaBasics.C", "crashed", [finding.line()], finding, 0.5),
        TestOutcome("ArenaBasics.D", "timeout", ["no result after 5 s (limit: test_timeout_seconds)"], None, 5.0),
        TestOutcome("ArenaBasics.E", "skipped", ["the test skipped itself in this configuration"]),
        TestOutcome("ArenaBasics.F", "not run"),
    ], ["LeakSanitizer: memory leak"], [], 6.5, ["the tests printed 9,000,000 bytes to standard output"])
    stage2 = StageResult(2, "ArenaAlignment", "alignment", "goal two", "passed",
                         [TestOutcome("ArenaAlignment.G", "passed", [], None, 0.1)], seconds=0.1)
    clang = ConfigResult("clang", "asan", BuildSummary(True, 3.0), [stage1, stage2])
    error = results.Diagnostic("arena.hpp", 4, 2, "error", "expected ';'", ["int x", "     ^"])
    gcc = ConfigResult("gcc", "asan", BuildSummary(False, 1.0, error), [
        StageResult(1, "ArenaBasics", "basics", "goal one", "not built"),
        StageResult(2, "ArenaAlignment", "alignment", "goal two", "not built")])
    return Verdict("01-arena", "The arena", "source", "arena.hpp", False, [clang, gcc],
                   ["it redefines EXPECT_EQ, a macro of the test framework"], 9.9)


def passing_verdict() -> Verdict:
    stage = StageResult(1, "ArenaBasics", "basics", "goal", "passed", [TestOutcome("ArenaBasics.A", "passed")])
    return Verdict("01-arena", "The arena", "exercises", "exercises/01-arena/arena.hpp", True,
                   [ConfigResult("clang", "asan", BuildSummary(True, 1.0), [stage])])


def tampered_verdict() -> Verdict:
    """What the judge finds for a header that rewrites EXPECT_EQ: every test it ran passed."""
    stage = StageResult(1, "ArenaBasics", "basics", "goal one", StageStatus.TAMPERED,
                        [TestOutcome("ArenaBasics.A", "passed"), TestOutcome("ArenaBasics.B", "passed")])
    return Verdict("01-arena", "The arena", "source", "arena.hpp", False,
                   [ConfigResult("clang", "asan", BuildSummary(True, 1.0), [stage])],
                   ["it redefines EXPECT_EQ, a macro of the test framework"], 2.0, [2])


class TamperedVerdict(unittest.TestCase):
    """Stages whose tests ran through altered assertions read as such in every output, never as
    passed: a consumer that reads only the stages, or only the test cases, still sees a failure."""

    def test_json_stages_are_tampered_and_count_no_passed_test(self):
        data = json.loads(json.dumps(tampered_verdict().to_json()))
        self.assertEqual(formats.json_errors(data), [])
        self.assertEqual((data["verdict"], data["passed"]), ("failed", False))
        self.assertEqual([(s["status"], s["passed"], s["tests"]) for s in data["stages"]], [("tampered", 0, 2)])
        self.assertEqual([s["status"] for c in data["configs"] for s in c["stages"]], ["tampered"])

    def test_no_junit_test_case_passes(self):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(JunitOutput.write(self, tampered_verdict()))
        self.assertEqual(formats.junit_errors(ET.tostring(root, encoding="unicode")), [])
        cases = list(root.iter("testcase"))
        self.assertEqual([(c.get("name"), [o.get("type") for o in c]) for c in cases],
                         [("TestFrameworkUntouched", ["tampering"]), ("A", ["tampered"]), ("B", ["tampered"])])
        self.assertEqual(root[1].find("properties/property[@name='status']").get("value"), "tampered")

    def test_the_report_says_why_the_stage_does_not_count(self):
        text = report.render(tampered_verdict(), EXERCISE)
        self.assertIn("Stage 1 · basics  not counted", text)
        self.assertIn(report.TAMPERED, text)
        self.assertNotIn("ArenaBasics.A", text, "a test that proves nothing is not listed as passed")

    def test_the_schema_names_every_stage_status(self):
        schema = json.loads(formats.VERDICT_SCHEMA.read_text(encoding="utf-8"))
        for enum in (schema["properties"]["stages"]["items"]["properties"]["status"]["enum"],
                     schema["$defs"]["stage"]["properties"]["status"]["enum"]):
            self.assertEqual(enum, [s.value for s in StageStatus])


class JsonOutput(unittest.TestCase):
    def test_every_outcome_validates_against_the_schema(self):
        for verdict in (sample_verdict(), passing_verdict()):
            data = json.loads(json.dumps(verdict.to_json()))
            self.assertEqual(formats.json_errors(data), [])

    def test_summary_per_stage_and_configurations(self):
        data = sample_verdict().to_json()
        self.assertEqual(data["verdict"], "failed")
        self.assertEqual(data["configurations"], ["clang-asan", "gcc-asan"])
        self.assertEqual([(s["number"], s["status"]) for s in data["stages"]], [(1, "failed"), (2, "not built")])
        self.assertEqual(data["stages"][0]["passed"], 1)
        self.assertEqual(data["configs"][0]["stages"][0]["tests"][1]["messages"][0].splitlines()[0],
                         "stage1.cpp:10: Failure")

    def test_a_run_of_some_stages_never_says_the_exercise_passed(self):
        """`test N --stage K --json`: an autograder reading "verdict" must not take one stage
        for the exercise."""
        verdict = passing_verdict()
        verdict.stages_not_judged = [2, 3, 4]
        data = json.loads(json.dumps(verdict.to_json()))
        self.assertEqual((data["verdict"], data["passed"], data["stages_not_judged"]), ("stages passed", True, [2, 3, 4]))
        self.assertEqual(formats.json_errors(data), [])
        self.assertEqual(passing_verdict().to_json()["verdict"], "passed")

    def test_the_validator_rejects_what_the_schema_forbids(self):
        """A validator that accepts everything would prove nothing."""
        data = json.loads(json.dumps(passing_verdict().to_json()))
        broken = dict(data, verdict="maybe")
        self.assertTrue(formats.json_errors(broken))
        broken = dict(data)
        del broken["configs"]
        self.assertTrue(formats.json_errors(broken))
        broken = json.loads(json.dumps(data))
        broken["configs"][0]["stages"][0]["tests"][0]["status"] = "fine"
        self.assertTrue(formats.json_errors(broken))
        broken = json.loads(json.dumps(data))
        broken["configs"][0]["stages"][0]["seconds"] = True
        self.assertTrue(formats.json_errors(broken))


class JunitOutput(unittest.TestCase):
    def write(self, verdict: Verdict) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out" / "results.xml"
            junit.write(verdict, path)
            text = path.read_text(encoding="utf-8")
            lint = formats.xmllint_errors(path)
            if lint is not None:
                self.assertEqual(lint, [], "xmllint, against judge/schemas/junit.xsd")
            self.assertEqual([p.name for p in path.parent.iterdir()], ["results.xml"], "no temporary file left")
        return text

    def test_every_outcome_validates(self):
        for verdict in (sample_verdict(), passing_verdict()):
            self.assertEqual(formats.junit_errors(self.write(verdict)), [])

    def test_one_suite_per_stage_per_configuration_and_every_failure_counted(self):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(self.write(sample_verdict()))
        names = [s.get("name") for s in root]
        self.assertEqual(names, ["01-arena.integrity", "01-arena.stage1-basics[clang-asan]",
                                 "01-arena.stage2-alignment[clang-asan]", "01-arena.stage1-basics[gcc-asan]",
                                 "01-arena.stage2-alignment[gcc-asan]"])
        stage1 = root[1]
        outcomes = {c.get("name"): (c[0].tag, c[0].get("type")) if len(c) else None for c in stage1.iter("testcase")}
        self.assertEqual(outcomes, {"A": None, "B": ("failure", "failed"), "C": ("error", "crashed"),
                                    "D": ("error", "timeout"), "E": ("failure", "skipped"), "F": ("error", "not run"),
                                    junit.STAGE_CHECKS: ("failure", "stage")})
        self.assertIn("Expected equality", stage1.find("testcase[@name='B']/failure").text)
        self.assertEqual(stage1.find("system-out").text, "the tests printed 9,000,000 bytes to standard output")
        self.assertEqual(int(root.get("failures")) + int(root.get("errors")), 4 + 3 + 1 + 1)
        self.assertIn("expected ';'", root[3].find("testcase/error").text)

    def test_a_passing_verdict_has_no_failure(self):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(self.write(passing_verdict()))
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("errors")), ("1", "0", "0"))

    def test_characters_xml_cannot_carry_are_replaced(self):
        verdict = passing_verdict()
        stage = verdict.configs[0].stages[0]
        stage.tests[0] = TestOutcome("ArenaBasics.A", "failed", ["bell \x07 and nul \x00 and \ud800"])
        text = self.write(verdict)
        self.assertEqual(formats.junit_errors(text), [])

    def test_the_validator_rejects_wrong_counts_and_shapes(self):
        good = self.write(passing_verdict())
        self.assertTrue(formats.junit_errors(good.replace('tests="1"', 'tests="2"', 1)))
        self.assertTrue(formats.junit_errors(good.replace("<testsuites", "<results", 1).replace("</testsuites>", "</results>")))
        self.assertTrue(formats.junit_errors(good.replace('time="', 'time="-', 1)))


class ReportText(unittest.TestCase):
    def test_notes_show_without_failing_the_stage(self):
        verdict = passing_verdict()
        verdict.stages_not_judged = [2]  # EXERCISE has two stages; the verdict judged one
        verdict.configs[0].stages[0].notes.append("the tests printed 1 bytes (limit: output_bytes = 65536)")
        text = report.render(verdict, EXERCISE)
        self.assertIn("limit: output_bytes", text)
        self.assertIn("Stage 1 passes; stage 2 not judged", text)


    def test_under_watch_the_next_step_is_a_key_and_a_save(self):
        verdict = sample_verdict()
        verdict.tampering = []
        verdict.configs = verdict.configs[:1]
        watched = report.render(verdict, EXERCISE, watching=True)
        self.assertIn("Stuck? Press h for the next hint", watched)
        self.assertIn("and save: watch judges it again", watched)
        self.assertNotIn("hint 1`", watched)
        self.assertIn("`python3 judge/judge.py hint 1`", report.render(verdict, EXERCISE))


class ReplayCommand(unittest.TestCase):
    def test_the_model_stage_replays_on_the_file_judged(self):
        """The model stage prints `test N --seed S` to replay its sequences: a run on another file
        must name that file, or the command replays them on the learner's header."""
        from lab.core import judging
        said = "Seed 1: `python3 judge/judge.py test 1 --seed 1` runs the same sequences again."
        for impl, expected in ((build.Impl("source", Path("/tmp/my arena.hpp")), "test 1 --source '/tmp/my arena.hpp' --seed 1"),
                               (build.Impl("solutions"), "test 1 --solution --seed 1"),
                               (build.Impl("exercises"), "test 1 --seed 1")):
            verdict = passing_verdict()
            verdict.configs[0].stages[0].tests[0] = TestOutcome("ArenaModel.X", "failed", [said])
            judging._replayed_on(judging.Request(EXERCISE, impl, ("clang",)), verdict.configs)
            self.assertIn(f"`python3 judge/judge.py {expected}`", verdict.configs[0].stages[0].tests[0].messages[0])


class Diagnostics(unittest.TestCase):
    def test_clang_source_line_is_kept(self):
        """clang quotes the offending line with no margin; the report must still show it."""
        log = ("/x/arena.hpp:10:52: error: expected expression\n"
               "inline void f(int n) { return n +; }\n"
               "                                 ^\n"
               "1 error generated.\n")
        [d] = build.parse_diagnostics(log)
        self.assertEqual(d.context, ["inline void f(int n) { return n +; }", "                                 ^"])

    def test_clang_source_line_is_kept_above_a_ranged_caret(self):
        """clang underlines the expression before the caret (`~~~~ ^`): the line is still the
        source line, which the learner needs to see."""
        log = ("/k/judge/tests/01-arena/arena_under_test.cpp:49:74: fatal error: no member named 'capacity' in "
               "'alloclab::Arena'\n"
               "std::size_t Arena::capacity() const { return std::as_const(learners_->a).capacity(); }\n"
               "                                             ~~~~~~~~~~~~~~~~~~~~~~~~~~~ ^\n")
        [d] = build.parse_diagnostics(log)
        self.assertEqual(len(d.context), 2)
        self.assertTrue(d.context[0].startswith("std::size_t Arena::capacity()"))

    def test_a_missing_member_is_named_as_each_compiler_says_it(self):
        said = {
            "no member named 'capacity' in 'alloclab::Arena'": ("capacity", "alloclab::Arena"),
            "no type named 'Marker' in 'alloclab::Arena'": ("Marker", "alloclab::Arena"),
            "no type named 'FixedPool' in namespace 'alloclab'": ("FixedPool", "alloclab"),
            "\u2018std::add_const_t<alloclab::Arena>\u2019 {aka \u2018const class alloclab::Arena\u2019} has no "
            "member named \u2018capacity\u2019": ("capacity", "alloclab::Arena"),
            "'class alloclab::Arena' has no member named 'peak'": ("peak", "alloclab::Arena"),
            "'Marker' in 'class alloclab::Arena' does not name a type": ("Marker", "alloclab::Arena"),
            "'FixedPool' is not a member of 'alloclab'": ("FixedPool", "alloclab"),
            "expected ';' after expression": None,
        }
        for message, expected in said.items():
            self.assertEqual(build.missing_name(results.Diagnostic("f.cpp", 1, 1, "error", message)), expected,
                             message)

    def test_a_member_missing_from_the_header_is_said_so_by_name(self):
        from lab.model.catalog import ROOT
        error = results.Diagnostic(str(ROOT / "judge/tests/01-arena/arena_under_test.cpp"), 49, 74, "error",
                                   "no member named 'capacity' in 'alloclab::Arena'", ["source", "  ^"])
        verdict = Verdict("01-arena", "The arena", "exercises", "exercises/01-arena/arena.hpp", False,
                          [ConfigResult("clang", "asan", BuildSummary(False, 1.0, error),
                                        [StageResult(1, "ArenaBasics", "basics", "goal", "not built")])])
        text = report.render(verdict, EXERCISE)
        self.assertIn("Your header has no `capacity` in `alloclab::Arena`: the contract promises it", text)
        self.assertLess(text.index("Your header has no"), text.index("arena_under_test.cpp:49:74"))
        error.file = str(ROOT / "exercises/01-arena/arena.hpp")   # the learner's own code names it
        self.assertNotIn("Your header has no", report.render(verdict, EXERCISE))

    def test_gcc_margin_lines_are_kept(self):
        log = "/x/a.hpp:3:5: warning: unused variable 'x' [-Wunused-variable]\n    3 | int x;\n      |     ^\n"
        [d] = build.parse_diagnostics(log)
        self.assertEqual((d.severity, len(d.context)), ("warning", 2))


class SanitizerSummaries(unittest.TestCase):
    def test_hard_rss_limit_is_a_finding_that_names_the_limit(self):
        stderr = "==42==AddressSanitizer: hard rss limit exhausted (256Mb vs 270Mb)\n==42==Process memory map follows:\n"
        finding = sanitizers.summarize(stderr)
        self.assertIsNotNone(finding, "the RSS limit report has no ERROR line, yet it must be recognised")
        self.assertTrue(sanitizers.hit_memory_limit(finding))

    def test_out_of_memory_is_a_memory_limit_and_a_plain_overflow_is_not(self):
        oom = sanitizers.summarize("==1==ERROR: AddressSanitizer: requested allocation size 0x100000000000 exceeds "
                                   "maximum supported size of 0x10000000\n")
        self.assertTrue(oom and sanitizers.hit_memory_limit(oom))
        overflow = sanitizers.summarize("==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\n"
                                        "READ of size 8 at 0x1 thread T0\n")
        self.assertFalse(sanitizers.hit_memory_limit(overflow))

    def test_the_limit_appears_in_the_line(self):
        finding = results.Finding("AddressSanitizer", "out-of-memory", "", "", "", "", "limit: memory_mb = 256")
        self.assertIn("memory_mb = 256", finding.line())


class ReportFileChecks(unittest.TestCase):
    """_record_report: a test counts only if it started; the canary must have started too."""

    def report(self, timestamp: str) -> dict:
        def test(name):
            return {"name": name, "status": "RUN", "result": "COMPLETED", "timestamp": timestamp, "time": "0s"}
        return {"testsuites": [{"name": "ArenaBasics", "testsuite": [test("A")]},
                               {"name": gtest_report.CANARY, "testsuite": [test("AssertionsStillFail")]}]}

    def test_tests_that_never_started_do_not_pass(self):
        outcomes, result = {}, StageResult(1, "ArenaBasics", "basics", "")
        gtest_report.record_report(self.report("1970-01-01T00:00:00Z"), ["ArenaBasics.A"], outcomes, result)
        self.assertNotIn("ArenaBasics.A", outcomes)
        self.assertTrue(any("never started" in p for p in result.problems))

    def test_tests_that_ran_pass(self):
        outcomes, result = {}, StageResult(1, "ArenaBasics", "basics", "")
        gtest_report.record_report(self.report("2026-12-02T11:00:00.123"), ["ArenaBasics.A"], outcomes, result)
        self.assertEqual(outcomes["ArenaBasics.A"].status, "passed")
        self.assertEqual(result.problems, [])


class Limits_(unittest.TestCase):
    def test_limits_live_in_the_catalog(self):
        from lab.model import catalog
        text = catalog.CATALOG.read_text(encoding="utf-8")
        for name in (f.name for f in __import__("dataclasses").fields(Limits)):
            self.assertRegex(text, rf"(?m)^{name}\s*=", f"[limits] in judge/catalog.toml must set {name}")


if __name__ == "__main__":
    unittest.main()
