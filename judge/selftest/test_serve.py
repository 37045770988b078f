"""`serve`: the engine's JSON is checked against the protocol, the summary and the --compare table
say what it measured, the timeline is a well-formed SVG with every series, the learner's headers
are used only where they pass, and every failure (a compile error, a crash, a hang, output that
cannot be read, tokens that differ from the plain engine's) is a message and an exit status,
never a traceback. The engine is played by fixtures/fake_serve.py, which speaks its protocol."""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from lab import cli, ui
from lab.core import build
from lab.learner import serve
from lab.learner import serve_verdict as verdict
from lab.model import catalog as cat
from lab.model import schema, words
from lab.model.errors import UsageError
from lab.model.progress import Progress, digest
from lab.model.results import Diagnostic

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAKE = FIXTURES / "fake_serve.py"
RESULT = json.loads((FIXTURES / "serve_result.json").read_text(encoding="utf-8"))
SVG = "{http://www.w3.org/2000/svg}"


def result(**changes) -> dict:
    data = copy.deepcopy(RESULT)
    data.update(changes)
    return data


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class ParseTest(unittest.TestCase):
    def test_the_fixture_is_what_the_schema_describes(self):
        from lab.model.schema import errors
        described = json.loads(serve.SCHEMA.read_text(encoding="utf-8"))
        self.assertEqual(errors(RESULT, described), [])
        self.assertEqual(sorted(described["required"]), sorted(serve.KEYS), "the schema and serve.KEYS disagree")
        for broken in (result(leak=3), result(tokens_digest="xyz"), result(manager="other"), result(extra=1)):
            self.assertNotEqual(errors(broken, described), [], broken)

    def test_the_fixture_is_read_whole(self):
        data = serve.parse(json.dumps(RESULT))
        self.assertTrue(data["matches_plain_engine"])
        self.assertEqual(len(data["timeline"]["batch"]), data["steps"])

    def test_a_plain_figure_may_be_null_and_a_match_may_be_unknown(self):
        data = serve.parse(json.dumps(result(plain_heap_allocations_per_step=None, matches_plain_engine=None)))
        self.assertIsNone(data["matches_plain_engine"])

    def test_what_breaks_the_protocol_is_named(self):
        broken_timeline = result()
        broken_timeline["timeline"]["batch"] = broken_timeline["timeline"]["batch"][:-1]
        missing = result()
        del missing["kv_utilization"], missing["copies"]
        cases = {
            "[1, 2]": "not one JSON object",
            json.dumps(missing): "lacks the keys kv_utilization, copies",
            json.dumps(result(tokens_per_second="fast")): "tokens_per_second is 'fast'",
            json.dumps(result(preemptions=True)): "preemptions is True",
            json.dumps(result(heap_allocations_per_step=None)): "heap_allocations_per_step is None",
            json.dumps(result(matches_plain_engine="yes")): "matches_plain_engine",
            json.dumps(result(model=[])): "model is not an object",
            json.dumps(result(timeline=[])): "timeline is not an object",
            json.dumps(result(timeline=dict(RESULT["timeline"], preempted=None))): "timeline.preempted",
            json.dumps(broken_timeline): "differ in length: running_blocks 48",
            json.dumps(result(memory=dict(RESULT["memory"], minor_faults_per_step=None))): "memory.minor_faults_per_step",
            json.dumps(result(memory=dict(RESULT["memory"], committed_after_sleep_bytes="none"))):
                "memory.committed_after_sleep_bytes is 'none'",
        }
        for text, said in cases.items():
            with self.subTest(said=said), self.assertRaises(ValueError) as caught:
                serve.parse(text)
            self.assertIn(said, str(caught.exception))
        with self.assertRaises(ValueError):
            serve.parse("{not json")


class SummaryTest(unittest.TestCase):
    def test_every_figure_is_printed_with_the_plain_engines(self):
        text = serve.summary(RESULT)
        for expected in ("The tiny trace, prefix manager: 64 KV blocks of 16 tokens, the tiny model", "48 steps",
                         "requests                  12", "tokens/s                  1,532.2",
                         "mean batch                5.4", "peak running              8", "preemptions               2",
                         "prefix hit rate           37.5 %", "KV utilization            91.2 %",
                         "copies                    3", "device mallocs            4",
                         "heap allocations/step     0.00", "  the engine's own        0.00",
                         "  the KV cache manager's  0.00", "  the plain engine's      212",
                         "tokens = plain engine's   yes", "TTFT, steps (med/p99)     4 / 9",
                         "TPOT, ms (med/p99)        5.4 / 7.5", "prefill / decode time     0.1 / 0.2 s",
                         "decode: GB/s (of peak)    15.0 GB/s (60%)", "decode: GFLOP/s (of peak) 45.0 GF/s (25%)"):
            self.assertIn(expected, text)

    def test_a_mismatch_and_unfinished_requests_show(self):
        text = serve.summary(result(matches_plain_engine=False, finished=10))
        self.assertIn("tokens = plain engine's   NO", text)
        self.assertIn("12 (10 finished)", text)


class CompareTest(unittest.TestCase):
    def results(self, reserve=1000.0, paged=1600.0, prefix=2000.0, utilization=0.95) -> dict:
        return {"reserve": result(manager="reserve", tokens_per_second=reserve, kv_utilization=0.41),
                "paged": result(manager="paged", tokens_per_second=paged, kv_utilization=utilization),
                "prefix": result(manager="prefix", tokens_per_second=prefix, heap_allocations_per_step=2.115)}

    def test_the_managers_stand_side_by_side_in_their_order(self):
        lines = serve.compare_table(self.results()).splitlines()
        header = next(line for line in lines if "reserve" in line and "prefix" in line)
        self.assertLess(header.index("reserve"), header.index("paged"))
        self.assertLess(header.index("paged"), header.index("prefix"))
        row = next(line for line in lines if line.strip().startswith("tokens/s"))
        self.assertEqual(row.split()[1:4], ["1,000.0", "1,600.0", "2,000.0"])
        self.assertIn("generated per second", row, "each figure says in a few words what it means")

    def test_the_ratios_are_measured_never_judged(self):
        measured = {what: (value, met) for what, value, _, met in serve.ratios(self.results())}
        self.assertAlmostEqual(measured["paged ÷ reserve, tokens/s"][0], 1.6)
        self.assertAlmostEqual(measured["prefix ÷ paged, tokens/s"][0], 1.25)
        self.assertIsNone(measured["paged ÷ reserve, tokens/s"][1], "tokens/s follow the machine: no ✗ for them")
        self.assertAlmostEqual(measured["prefix: heap allocations per step ÷ the plain engine's"][0], 0.01)
        slow = serve.compare_table(self.results(paged=900.0, prefix=800.0))
        self.assertIn("0.90×", slow)
        self.assertNotRegex(slow, rf"(?m)^\s*{ui.FAIL} ", "a slow ratio is a measurement, not a failure of the learner's code")
        text = serve.compare_table(self.results())
        self.assertIn("1.60×", text)
        self.assertIn("1.25×", text)
        self.assertNotIn("target", text)

    def test_a_missing_plain_figure_gives_no_ratio(self):
        results = self.results()
        results["paged"]["plain_heap_allocations_per_step"] = None
        measured = {what: value for what, value, _, _ in serve.ratios(results)}
        self.assertIsNone(measured["paged: heap allocations per step ÷ the plain engine's"])
        self.assertIn("—", serve.compare_table(results))


class TimelineTest(unittest.TestCase):
    def draw(self, data: dict) -> ET.Element:
        return ET.fromstring(serve.svg(data, "a <title> & more"))

    def series(self, root: ET.Element) -> dict[str, ET.Element]:
        return {e.get("data-series"): e for e in root.iter() if e.get("class") == "series"}

    def test_the_chinese_timeline_is_the_same_drawing_in_other_words(self):
        en, zh = ET.fromstring(serve.svg(RESULT, "t")), ET.fromstring(serve.svg(RESULT, "t", "zh"))
        shapes = lambda root: [e.get("d") or e.get("points") for e in root.iter() if e.get("class") == "series"]
        self.assertEqual(shapes(zh), shapes(en), "the series are drawn where the English draws them")
        text = " ".join(zh.itertext())
        for words in ("KV Cache（以块计）与 batch", "缓存分配器（激活值）", "运行中请求所用的 KV 块", "管理器："):
            self.assertIn(words, text)
        self.assertNotIn("requests", text, "an English phrase is left in the Chinese timeline")
        en_words, zh_words = serve.TIMELINE_WORDS["en"], serve.TIMELINE_WORDS["zh"]
        self.assertEqual(set(en_words), set(zh_words), "a word of the timeline lacks its translation")
        for key in ("legend", "facts"):
            self.assertEqual(len(en_words[key]), len(zh_words[key]), f"the {key} have as many phrases in both")

    def test_is_well_formed_on_a_white_background_with_every_series(self):
        root = self.draw(RESULT)
        self.assertEqual(root.tag, SVG + "svg")
        self.assertEqual(next(root.iter(SVG + "rect")).get("fill"), "#ffffff")
        self.assertEqual(set(self.series(root)), {"used by running requests", "cached, used by no request",
                                                  "free (idle in the pool)", "batch", "reserved",
                                                  "reserved bytes", "allocated bytes"})
        text = " ".join(root.itertext())
        for label in ("a <title> & more", "KV blocks", "requests in the step (batch)", "MiB", "engine step",
                      "a request preempted", "bytes allocated from it", "tokens equal to the plain engine's: yes"):
            self.assertIn(label, text)

    def test_the_stack_reaches_the_budget_and_every_preemption_is_marked(self):
        root = self.draw(RESULT)
        marks = [p for p in root.iter(SVG + "path") if "preempted" in "".join(p.itertext())]
        self.assertEqual(len(marks), sum(1 for n in RESULT["timeline"]["preempted"] if n))
        self.assertIn("64", [t.text for t in root.iter(SVG + "text")])   # the budget is the axis's top
        one_point = self.series(root)["batch"].get("points").split()
        self.assertEqual(len(one_point), 2 * RESULT["steps"])             # a level across each step

    def test_a_long_run_is_drawn_with_no_more_points_than_pixels(self):
        steps = 5000
        long = result(steps=steps, timeline={k: [i % 7 for i in range(steps)] for k in serve.TIMELINE})
        root = self.draw(long)
        batch = self.series(root)["batch"].get("points").split()
        self.assertLessEqual(len(batch), 2 * serve._PLOT)
        self.assertIn("each point the mean of about", " ".join(root.itertext()))

    def test_an_empty_timeline_still_draws(self):
        root = self.draw(result(steps=0, timeline={k: [] for k in serve.TIMELINE}))
        self.assertEqual(self.series(root), {})


class SweepWordsTest(unittest.TestCase):
    """The sweep's figure in Chinese is the same drawing as the English, in other words."""

    POINTS = [dict(manager=m, kv_blocks=b, tokens_per_second=100.0 * b / 99 + i, mean_batch=b / 20 + i,
                   trace="chat", model={"name": "default"}, block_tokens=16)
              for i, m in enumerate(serve.COMPARED) for b in (99, 198)]

    def test_the_chinese_sweep_draws_the_same_points_with_chinese_words(self):
        en, zh = (ET.fromstring(serve.sweep_svg(self.POINTS, lang=lang)) for lang in ("en", "zh"))
        circles = lambda root: [(c.get("cx"), c.get("cy")) for c in root.iter(SVG + "circle")]
        self.assertEqual(circles(zh), circles(en), "the points are drawn where the English draws them")
        text = " ".join(zh.itertext())
        for words in ("每秒 token 数随 KV 预算的变化", "每秒生成的 token 数", "KV 预算，单位为 16 个 token 的块",
                      f"chat trace，default 模型，共 {len(self.POINTS)} 次运行"):
            self.assertIn(words, text)
        self.assertEqual(set(serve.SWEEP_WORDS["en"]), set(serve.SWEEP_WORDS["zh"]), "a word lacks its translation")


class SourcesTest(unittest.TestCase):
    def setUp(self):
        self.catalog = cat.load()
        self.folder = tempfile.TemporaryDirectory()
        self.progress = Progress(Path(self.folder.name) / "progress.json")

    def tearDown(self):
        self.folder.cleanup()

    def test_only_a_header_that_passes_as_it_is_now_goes_in(self):
        first, second, third = self.catalog.exercises[:3]
        self.progress.record(first, True, None, file_hash=digest(first.exercise_file))
        self.progress.record(second, True, None, file_hash="another version")
        self.progress.record(third, False, 2, file_hash=digest(third.exercise_file))
        chosen = {s.exercise.id: s for s in serve.sources(self.catalog, self.progress, "yours")}
        self.assertTrue(chosen[first.id].yours)
        self.assertEqual(chosen[first.id].folder, first.exercise_file.parent)
        self.assertFalse(chosen[second.id].yours)
        self.assertIn(f"changed since it passed: `python3 judge/judge.py test {second.id}`", chosen[second.id].why)
        self.assertEqual(chosen[third.id].why, "not passed yet (stage 2)")
        self.assertEqual(chosen[third.id].folder, third.solution_file.parent)
        said = serve.describe(list(chosen.values()))
        self.assertIn(f"your headers: {first.id:02d} {first.header}", said)
        self.assertEqual(serve.whose(list(chosen.values()))[first.name], "yours")
        self.assertEqual(serve.whose(list(chosen.values()))[third.name], "reference")

    def test_every_exercise_gets_its_folder_named_so_that_no_tree_keeps_an_old_one(self):
        first = self.catalog.exercises[0]
        self.progress.record(first, True, None, file_hash=digest(first.exercise_file))
        for with_ in ("yours", "reference"):
            variables = serve.cache_variables(serve.sources(self.catalog, self.progress, with_), serve.tree(with_))
            self.assertEqual(set(variables), {f"ALLOCLAB_SERVE_{ex.id:02d}" for ex in self.catalog.exercises})
            self.assertTrue(all(Path(v).is_absolute() and Path(v).is_dir() for v in variables.values()))
            mine = variables[f"ALLOCLAB_SERVE_{first.id:02d}"]
            self.assertEqual(mine, str((first.exercise_file if with_ == "yours" else first.solution_file).parent))
        self.assertEqual(serve.describe(serve.sources(self.catalog, self.progress, "reference")),
                         "the reference for every exercise (--with reference)")


class CompileErrorTest(unittest.TestCase):
    def setUp(self):
        self.catalog = cat.load()
        self.first = self.catalog.exercises[0]
        self.chosen = [serve.Source(ex, ex is self.first) for ex in self.catalog.exercises]

    def failed(self, file: str) -> build.BuildResult:
        return build.BuildResult(False, 1.0, [
            Diagnostic(str(serve.ENGINE / "engine.hpp"), 3, 1, "warning", "unused"),
            Diagnostic(file, 12, 5, "error", "no member named 'reset'", ["   12 |   a.reset();", "      |     ^"])])

    def test_an_error_in_the_learners_header_names_it_as_test_does(self):
        message, yours = serve.compile_problem(self.failed(str(self.first.exercise_file)), self.chosen)
        self.assertTrue(yours)
        self.assertIn(f"Your {self.first.header} (exercise 01) does not compile in the engine", message)
        self.assertIn(f"exercises/{self.first.name}/{self.first.header}:12:5: error: no member named 'reset'", message)
        self.assertIn("a.reset();", message)
        self.assertIn("--with reference", message)
        self.assertNotIn("Traceback", message)

    def test_an_error_elsewhere_names_the_engine(self):
        message, yours = serve.compile_problem(self.failed(str(serve.ENGINE / "scheduler.hpp")), self.chosen)
        self.assertIn("The serving engine does not compile with your headers", message)
        self.assertIn("judge/engine/scheduler.hpp:12:5", message)
        reference = [serve.Source(ex, False) for ex in self.catalog.exercises]
        message, yours = serve.compile_problem(self.failed(str(serve.ENGINE / "scheduler.hpp")), reference)
        self.assertFalse(yours)
        self.assertNotIn("your headers", message)

    def test_a_failure_with_no_diagnostic_says_what_the_build_said(self):
        message, _ = serve.compile_problem(build.BuildResult(False, 1.0, [], "CMake could not configure"),
                                           self.chosen)
        self.assertEqual(message, "The serving engine could not be built: CMake could not configure")


class RunTest(unittest.TestCase):
    def run_fake(self, mode: str = "", timeout: float = 30, **kwargs) -> dict:
        with mock.patch.dict(os.environ, {"FAKE_SERVE": mode}):
            return serve.run(FAKE, "tiny", "paged", timeout, **kwargs)

    def test_a_run_reads_the_object_and_draws_its_progress(self):
        terminal = Terminal()
        bar = ui.ProgressLine("  paged", terminal)
        data = self.run_fake(bar=bar, kv_blocks=99)
        self.assertEqual((data["manager"], data["trace"], data["kv_blocks"]), ("paged", "tiny", 99))
        self.assertEqual(bar.last, (12, 12))
        drawn = terminal.getvalue()
        self.assertIn("[" + "#" * 24 + "] 12/12 requests finished", drawn)
        self.assertTrue(drawn.endswith("\r\033[K"))   # the bar is wiped before the summary

    def test_no_bar_is_drawn_where_no_terminal_is(self):
        pipe = io.StringIO()
        bar = ui.ProgressLine("  paged", pipe)
        self.run_fake(bar=bar)
        self.assertEqual(pipe.getvalue(), "")
        self.assertEqual(bar.last, (12, 12))

    def test_every_failure_is_a_message(self):
        cases = {
            "crash": ("crashed (SIGSEGV) serving the tiny trace with the paged manager", "engine.hpp:12"),
            "fail": ("stopped serving the tiny trace with the paged manager", "the KV budget holds no request"),
            "badarg": ("refused its arguments (--trace tiny --manager paged --model default --progress)",
                       "bad argument"),
            "badjson": ("output cannot be read", ""),
            "missingkey": ("timeline.batch is not a list of numbers", ""),
        }
        for mode, (said, stderr) in cases.items():
            with self.subTest(mode=mode), self.assertRaises(serve.ServeError) as caught:
                self.run_fake(mode)
            self.assertIn(said, str(caught.exception))
            self.assertIn(stderr, str(caught.exception))
            self.assertNotIn("progress 12 12", str(caught.exception))   # progress is no message

    def test_how_a_run_ended_is_a_state_not_words(self):
        for mode, ending in (("crash", serve.CRASHED), ("fail", serve.STOPPED), ("badarg", "")):
            with self.subTest(mode=mode), self.assertRaises(serve.ServeError) as caught:
                self.run_fake(mode)
            self.assertEqual(caught.exception.ending, ending)
        with self.assertRaises(serve.ServeError) as caught:
            self.run_fake("hang", timeout=1.5)
        self.assertEqual(caught.exception.ending, serve.TIMED_OUT)

    def test_a_leak_and_tokens_that_differ_are_failures_of_their_kind(self):
        self.assertEqual(serve.failures(self.run_fake()), {})
        self.assertEqual(list(serve.failures(self.run_fake("mismatch"))), [serve.TOKENS_DIFFER])
        leaked = serve.failures(self.run_fake("leak"))
        self.assertEqual(list(leaked), [serve.LEAK])
        self.assertIn("num_free_blocks() is 60 of 64", leaked[serve.LEAK])
        self.assertEqual(list(serve.failures(result(finished=10))), [serve.UNFINISHED])

    def test_a_crash_with_the_learners_headers_points_at_the_reference(self):
        with self.assertRaises(serve.ServeError) as caught:
            self.run_fake("crash", blame_learner=True)
        self.assertTrue(caught.exception.yours)
        self.assertIn("with your headers: `--with reference`", str(caught.exception))

    def test_a_hang_is_stopped(self):
        with self.assertRaises(serve.ServeError) as caught:
            self.run_fake("hang", timeout=1.5)
        self.assertIn("did not finish in 1.5 s serving the tiny trace", str(caught.exception))

    def test_a_missing_binary_is_a_message(self):
        with self.assertRaises(serve.ServeError) as caught:
            serve.run(FIXTURES / "no-such-binary", "tiny", "paged", 5)
        self.assertIn("cannot be started", str(caught.exception))


class CommandTest(unittest.TestCase):
    """The whole verb, with the fake in place of the built engine."""

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.out = Path(self.folder.name) / "out"
        self.log = Path(self.folder.name) / "argv.log"
        progress = Progress(Path(self.folder.name) / "progress.json")
        for patch in (mock.patch.object(serve, "build_engine", lambda *a, **k: FAKE),
                      mock.patch.object(serve, "require_sources", lambda: None),
                      mock.patch.object(serve, "Progress", lambda: progress),
                      mock.patch.object(build, "compilers_for", lambda choice: (choice,)),
                      mock.patch.dict(os.environ, {"FAKE_SERVE_LOG": str(self.log), "FAKE_SERVE": ""})):
            patch.start()
            self.addCleanup(patch.stop)

    def tearDown(self):
        self.folder.cleanup()

    def serve(self, *argv: str) -> tuple[bool, str, str]:
        args = cli._parser(["serve"]).parse_args(["serve", "--out", str(self.out), *argv])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            ok = serve.serve_command(args, cat.load())
        return ok, out.getvalue(), err.getvalue()

    def test_a_run_prints_its_summary_and_draws_its_timeline(self):
        ok, out, _ = self.serve("--trace", "tiny")
        self.assertTrue(ok)
        self.assertIn("the reference for", out)
        self.assertIn("tokens = plain engine's   yes", out)
        self.assertIn("timeline.svg", out)
        ET.parse(self.out / "timeline.svg")
        self.assertIn("服务时间线", " ".join(ET.parse(self.out / "zh" / "timeline.svg").getroot().itertext()),
                      "the timeline's Chinese twin is drawn beside it")
        self.assertIn("--trace tiny --manager prefix --model default --progress", self.log.read_text())

    def test_json_is_one_object_with_whose_headers(self):
        ok, out, err = self.serve("--json", "--manager", "reserve", "--with", "reference")
        self.assertTrue(ok)
        data = json.loads(out)
        self.assertEqual(data["manager"], "reserve")
        self.assertEqual(set(data["with"].values()), {"reference"})
        self.assertEqual(len(data["with"]), len(cat.load().exercises))
        self.assertIn("Building the serving engine", err)   # what it says goes to standard error

    def test_compare_serves_four_managers_on_one_budget(self):
        ok, out, _ = self.serve("--compare", "--json", "--repeat", "1")
        self.assertTrue(ok)
        data = json.loads(out)
        self.assertEqual([d["manager"] for d in data], ["reserve", "paged", "prefix", "virtual"])
        runs = self.log.read_text().splitlines()
        self.assertEqual(len(runs), 4)
        self.assertNotIn("--kv-blocks", runs[0])
        self.assertTrue(all(f"--kv-blocks {RESULT['kv_blocks']}" in r for r in runs[1:]))
        self.assertNotIn("--no-plain", runs[0])
        self.assertTrue(all("--no-plain" in r for r in runs[1:]), "the plain engine runs once, with the first run")
        self.assertEqual(sorted(p.name for p in self.out.iterdir()),
                         ["timeline-paged.svg", "timeline-prefix.svg", "timeline-reserve.svg", "timeline-virtual.svg",
                          "zh"])
        self.assertEqual(sorted(p.name for p in (self.out / "zh").iterdir()),
                         ["timeline-paged.svg", "timeline-prefix.svg", "timeline-reserve.svg", "timeline-virtual.svg"],
                         "each timeline has its Chinese twin")
        ok, out, _ = self.serve("--compare")
        self.assertIn("paged ÷ reserve, tokens/s", out)
        self.assertIn("virtual ÷ paged, tokens/s", out)

    def test_compare_json_keeps_what_it_judged_as_the_schema_describes(self):
        ok, out, _ = self.serve("--compare", "--json", "--with", "reference")
        self.assertTrue(ok)
        described = json.loads(serve.SCHEMA.read_text(encoding="utf-8"))
        data = {d["manager"]: d for d in json.loads(out)}
        for manager, d in data.items():
            self.assertEqual(schema.errors(d, described), [], manager)
        self.assertEqual({c["what"] for c in data["prefix"]["judged"]},
                         {"mean_batch", "kv_utilization", "preemptions", "prefix_hit_rate", "prefill_tokens"})
        self.assertTrue(all(c["met"] for c in data["paged"]["judged"] + data["prefix"]["judged"]))
        self.assertNotIn("judged", data["reserve"], "reserve is the kit's manager, not the learner's")
        self.assertEqual({(c["what"], c["against"]) for c in data["virtual"]["judged"]},
                         {("kv_utilization", "paged"), ("committed_after_sleep_bytes", "target")})
        self.assertTrue(all(c["met"] for c in data["virtual"]["judged"]))

    def test_compare_serves_the_managers_in_turn_three_times_and_shows_the_medians(self):
        ok, out, _ = self.serve("--compare", "--json")
        self.assertTrue(ok)
        managers = [line.split("--manager ")[1].split()[0] for line in self.log.read_text().splitlines()]
        self.assertEqual(managers, ["reserve", "paged", "prefix", "virtual"] * 3)
        data = json.loads(out)
        self.assertTrue(all(len(d["runs_tokens_per_second"]) == 3 for d in data))
        self.assertTrue(all(d["matches_plain_engine"] for d in data), "later runs are compared by digest")
        ok, out, _ = self.serve("--compare")
        self.assertIn("1.60× on the medians, 1.60–1.60 run by run; the runs do not overlap", out)
        self.assertIn("Load: a 1-minute load average of", out)
        self.assertTrue(all(d["load"]["cores"] >= 1 for d in data), "--json keeps the load beside the figures")

    def test_the_reference_managers_heap_count_stands_beside_the_managers_own(self):
        ok, out, _ = self.serve("--compare", "--json", "--repeat", "1", "--with", "reference")
        data = {d["manager"]: d for d in json.loads(out)}
        self.assertEqual(len(self.log.read_text().splitlines()), 4, "the reference's count needs no run of its own")
        for m in ("paged", "prefix"):
            self.assertEqual(data[m]["reference_manager_heap_per_step"], data[m]["heap_per_step"]["kv_cache_manager"])
        self.assertNotIn("reference_manager_heap_per_step", data["reserve"], "reserve is the kit's manager, not 07's")
        self.assertNotIn("reference_manager_heap_per_step", data["virtual"], "virtual is exercise 08's cache, not 07's")

    def test_a_learners_manager_is_served_once_more_with_the_reference_for_its_heap_count(self):
        header = FAKE   # it stands in for a learner's header: the build is the fake's
        targets = []

        def build_engine(*args, target=serve.TARGET, **kwargs):
            targets.append(target)
            return FAKE
        with mock.patch.object(serve, "build_engine", build_engine):
            ok, out, err = self.serve("--json", "--source", str(header))
        self.assertTrue(ok, err)
        self.assertEqual(targets, [serve.TARGET, serve.REFERENCE_MANAGER_TARGET])
        runs = self.log.read_text().splitlines()
        self.assertEqual(len(runs), 2)
        self.assertIn("--no-plain", runs[1])
        self.assertIn(f"--kv-blocks {RESULT['kv_blocks']}", runs[1], "the reference serves the same budget")
        self.assertEqual(json.loads(out)["reference_manager_heap_per_step"], RESULT["heap_per_step"]["kv_cache_manager"])
        self.assertIn("the reference manager makes", err)
        ok, out, _ = self.serve("--source", str(header))
        self.assertIn("    the reference's", out)

    def test_the_median_run_stands_for_its_manager_and_the_ratios_use_medians(self):
        runs = [result(tokens_per_second=v) for v in (900.0, 1500.0, 1000.0)]
        chosen = serve.median_run(runs)
        self.assertEqual(chosen["tokens_per_second"], 1000.0)
        self.assertEqual(chosen["runs_tokens_per_second"], [900.0, 1500.0, 1000.0])
        paged = serve.median_run([result(tokens_per_second=v) for v in (1800.0, 2400.0, 1500.0)])
        measured = dict((what, value) for what, value, *_ in serve.ratios({"reserve": chosen, "paged": paged}))
        self.assertAlmostEqual(measured["paged ÷ reserve, tokens/s"], 1.8)
        self.assertEqual(verdict.speed(paged, chosen).band, (1.5, 2.0))

    def test_a_run_wrong_in_any_repetition_fails(self):
        calls = []

        def run(*args, **kwargs):
            calls.append(args)
            return result(tokens_digest="f" * 16 if len(calls) == 6 else RESULT["tokens_digest"],
                          matches_plain_engine=True if len(calls) == 1 else None)
        with mock.patch.object(serve, "run", run):
            ok, out, _ = self.serve("--compare")
        self.assertFalse(ok)
        self.assertIn("paged: Some request's tokens differ", out)

    def test_sweep_serves_every_manager_at_every_budget_and_draws_it(self):
        ok, out, _ = self.serve("--sweep")
        self.assertTrue(ok, out)
        runs = self.log.read_text().splitlines()
        self.assertEqual(len(runs), len(serve.COMPARED) * len(serve.SWEEP_FACTORS))
        budgets = sorted({int(r.split("--kv-blocks ")[1].split()[0]) for r in runs if "--kv-blocks" in r})
        base = RESULT["kv_blocks"]
        self.assertEqual(budgets, sorted({round(base * f) for f in serve.SWEEP_FACTORS}))
        svg = ET.parse(self.out / "sweep.svg").getroot()
        self.assertIn("每秒生成的 token 数", " ".join(ET.parse(self.out / "zh" / "sweep.svg").getroot().itertext()),
                      "the sweep's Chinese twin is drawn beside it")
        series = {e.get("data-series") for e in svg.iter(f"{SVG}polyline")}
        self.assertEqual(series, set(serve.COMPARED))
        self.assertIn("KV blocks", out)
        with self.assertRaises(UsageError):
            self.serve("--sweep", "--compare")
        with self.assertRaises(UsageError):
            self.serve("--repeat", "0")

    def test_tokens_that_differ_fail_and_say_what_it_means(self):
        with mock.patch.dict(os.environ, {"FAKE_SERVE": "mismatch"}):
            ok, out, err = self.serve()
            self.assertFalse(ok)
            self.assertIn("read KV it did not write", out)
            ok, out, err = self.serve("--json")
        self.assertFalse(ok)
        self.assertFalse(json.loads(out)["matches_plain_engine"])   # the figures are still printed
        self.assertIn("read KV it did not write", err)

    def test_a_crash_fails_with_a_message(self):
        with mock.patch.dict(os.environ, {"FAKE_SERVE": "crash"}):
            ok, out, _ = self.serve()
        self.assertFalse(ok)
        self.assertIn("crashed (SIGSEGV)", out)

    def test_a_budget_not_kept_stops_the_comparison(self):
        with mock.patch.object(serve, "run", side_effect=[result(manager="reserve"),
                                                          result(manager="paged", kv_blocks=65)]):
            ok, out, _ = self.serve("--compare")
        self.assertFalse(ok)
        self.assertIn("asked for 64 KV blocks and used 65 with the paged manager", out)

    def test_a_timeline_that_cannot_be_written_is_a_message_before_anything_is_served(self):
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text("a file where the folder should be")
        with self.assertRaises(UsageError) as caught:
            self.serve()
        self.assertIn("cannot write there", str(caught.exception))
        self.assertFalse(self.log.exists(), "--out is checked before the engine runs")

    def test_blocks_held_at_the_end_fail_and_say_what_was_held(self):
        with mock.patch.dict(os.environ, {"FAKE_SERVE": "leak"}):
            ok, out, _ = self.serve()
        self.assertFalse(ok)
        self.assertIn("blocks held at the end    YES", out)
        self.assertIn("once every request was done, num_free_blocks() is 60 of 64", out)

    def test_source_serves_a_file_as_the_managers_header_in_a_tree_of_its_own(self):
        trees = []
        with mock.patch.object(serve, "build_engine", lambda catalog, name, chosen, *a, **k: trees.append(
                (name, chosen)) or FAKE):
            ok, out, _ = self.serve("--source", str(FAKE), "--model", "tiny")
        self.assertTrue(ok)
        name, chosen = trees[0]
        self.assertEqual([name for name, _ in trees], [serve.SOURCE_TREE] * 2, "the reference manager's engine too")
        given = [s for s in chosen if s.file is not None]
        self.assertEqual([(s.exercise.header, s.file) for s in given], [(serve.MANAGER_HEADER, FAKE)])
        self.assertIn(f"as 07's {serve.MANAGER_HEADER}", out)
        self.assertIn("--model tiny", self.log.read_text())
        with self.assertRaises(UsageError) as caught:
            self.serve("--source", str(FIXTURES / "no-such-header.hpp"))
        self.assertIn("no such file", str(caught.exception))

    def test_a_stand_in_header_includes_the_file_and_is_rewritten_only_when_it_changes(self):
        ex = next(e for e in cat.load().exercises if e.header == serve.MANAGER_HEADER)
        where = Path(self.folder.name) / "tree"
        folder = serve.stand_in(where, ex, FAKE)
        header = folder / serve.MANAGER_HEADER
        self.assertEqual(header.read_text(), f'#include "{FAKE.resolve()}"\n')
        stamp = header.stat().st_mtime_ns
        serve.stand_in(where, ex, FAKE)
        self.assertEqual(header.stat().st_mtime_ns, stamp, "an unchanged stand-in must not rebuild anything")

    def test_usage_errors(self):
        with self.assertRaises(UsageError) as caught:
            self.serve("--compare", "--manager", "paged")
        self.assertIn("leave out --manager", str(caught.exception))
        mock.patch.stopall()
        with mock.patch.object(serve, "SOURCE", serve.ENGINE / "no-such-file.cpp"), \
                self.assertRaises(UsageError) as caught:
            self.serve()
        self.assertIn("are not in this tree", str(caught.exception))

    def test_it_is_a_learners_command(self):
        command = next(c for c in cli.COMMANDS if c.name == "serve")
        self.assertFalse(command.maintainers_only)
        self.assertEqual(command.handler, "learner.serve:serve_command")


class CheckStepTest(unittest.TestCase):
    """`check`'s short serve run: skipped, with the reason, until the engine is in the tree."""

    def step(self, outcome=None, error: Exception | None = None, present: bool = True):
        def serve_once(*args):
            if error:
                raise error
            return outcome
        from lab.maintainer import check
        source = FAKE if present else serve.ENGINE / "no-such-file.cpp"
        with mock.patch.object(serve, "SOURCE", source), mock.patch.object(serve, "serve_once", serve_once), \
                mock.patch.object(check, "_serve_wide", lambda catalog: []):
            return check._serve(cat.load())

    def test_on_a_wide_budget_every_manager_keeps_max_seqs_and_allocates_nothing_of_its_own(self):
        from lab.maintainer import check
        runs = {"reserve": result(manager="reserve"), "paged": result(manager="paged", peak_running=70),
                "prefix": result(manager="prefix", heap_per_step={"engine": 2.0, "kv_cache_manager": 1.0,
                                                                  "allocators": 0.0}),
                "virtual": result(manager="virtual")}
        calls = []

        def run(binary, trace, manager, timeout, kv_blocks=None, **kwargs):
            calls.append((manager, kv_blocks, kwargs.get("plain", True)))
            return runs[manager]
        with mock.patch.object(serve, "build_engine", lambda *a, **k: FAKE), mock.patch.object(serve, "run", run):
            problems = check._serve_wide(cat.load())
        wide = round(RESULT["kv_blocks"] * serve.SWEEP_FACTORS[-1])
        self.assertEqual(calls, [("reserve", None, True)] + [(m, wide, False) for m in serve.COMPARED])
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("70 sequences ran at once, more than max_seqs 64", problems[0])
        self.assertIn("prefix on", problems[1])
        self.assertIn("the engine itself made 2.0 heap allocations", problems[1])

    def test_it_is_skipped_with_a_reason_without_the_engine(self):
        item = self.step(present=False)
        self.assertIsNone(item.ok)
        self.assertIn("judge/engine/no-such-file.cpp) are not in this tree yet", item.detail)

    def test_it_passes_only_when_every_token_matches(self):
        self.assertTrue(self.step(result()).ok)
        for wrong, said in ((result(matches_plain_engine=False), "read KV it did not write"),
                            (result(matches_plain_engine=None), "matches_plain_engine is null"),
                            (result(finished=3), "9 of 12 requests unfinished"),
                            (result(leak="block 3 still has 2 references"), "block 3 still has 2 references"),
                            (result(tokens_digest="12"), "tokens_digest"),
                            (result(heap_per_step={"engine": 0.5, "kv_cache_manager": 0, "allocators": 0}),
                             "the engine itself made 0.5 heap allocations")):
            item = self.step(wrong)
            self.assertFalse(item.ok)
            self.assertIn(said, item.detail)

    def test_a_failed_build_or_run_fails_with_its_message(self):
        item = self.step(error=serve.ServeError("The serving engine does not compile: x.hpp:1:1: error: boom"))
        self.assertFalse(item.ok)
        self.assertIn("error: boom", item.detail)
        self.assertFalse(self.step(error=UsageError("clang++ not found")).ok)


if __name__ == "__main__":
    unittest.main()


class VerdictTest(unittest.TestCase):
    """What `serve --compare` judges (what the manager decides, against the reference's figures)
    and what it only measures (tokens/s, with their spread, the load and the roofline)."""

    def reference(self, **changes) -> dict:
        return verdict.reference_figures(result(**changes))

    def test_a_manager_that_decides_as_the_reference_does_passes_every_check(self):
        for manager in ("paged", "prefix"):
            checks = verdict.manager_checks(manager, result(), self.reference())
            self.assertTrue(all(c.met for c in checks), checks)
            self.assertEqual("prefix_hit_rate" in [c.what for c in checks], manager == "prefix",
                             "the hit rate is judged only with prefix caching on")

    def test_a_manager_that_wastes_kv_fails_on_what_it_wastes(self):
        wasteful = result(mean_batch=3.1, kv_utilization=0.62, preemptions=9, prefix_hit_rate=0.2,
                          time_split=dict(RESULT["time_split"], prefill_tokens=400))
        failed = {c.what for c in verdict.manager_checks("prefix", wasteful, self.reference()) if not c.met}
        self.assertEqual(failed, {"mean_batch", "kv_utilization", "preemptions", "prefix_hit_rate", "prefill_tokens"})

    def test_the_margins_forgive_a_detail_and_no_more(self):
        reference = self.reference(mean_batch=10.0, kv_utilization=0.9, preemptions=20)
        near = result(mean_batch=9.8, kv_utilization=0.89, preemptions=23)
        self.assertTrue(all(c.met for c in verdict.manager_checks("paged", near, reference)))
        far = result(mean_batch=9.5, kv_utilization=0.87, preemptions=25)
        self.assertEqual({c.what for c in verdict.manager_checks("paged", far, reference) if not c.met},
                         {"mean_batch", "kv_utilization", "preemptions"})
        better = result(mean_batch=12.0, kv_utilization=0.99, preemptions=0)
        self.assertTrue(all(c.met for c in verdict.manager_checks("paged", better, reference)),
                        "doing better than the reference is never a ✗")

    def test_runs_that_overlap_are_too_noisy_to_judge(self):
        paged = result(runs_tokens_per_second=[900.0, 1300.0, 1000.0])
        reserve = result(runs_tokens_per_second=[800.0, 950.0, 700.0])
        s = verdict.speed(paged, reserve)
        self.assertAlmostEqual(s.ratio, 1000 / 800)
        self.assertTrue(s.noisy)
        self.assertEqual(s.band, (900 / 800, 1000 / 700), "each pair of runs was served side by side")
        self.assertIn("too noisy to judge", verdict.speed_line("paged ÷ reserve, tokens/s", s))
        apart = verdict.speed(result(runs_tokens_per_second=[1500.0, 1600.0, 1550.0]), reserve)
        self.assertFalse(apart.noisy)
        self.assertIn("the runs do not overlap", verdict.speed_line("paged ÷ reserve, tokens/s", apart))
        alone = verdict.speed(result(tokens_per_second=1500.0), result(tokens_per_second=1000.0))
        self.assertIsNone(alone.noisy, "one run each has no spread to judge by")
        self.assertIn("--repeat", verdict.speed_line("paged ÷ reserve, tokens/s", alone))

    def test_the_roofline_expects_what_a_larger_batch_buys_on_this_machine(self):
        roof = dict(RESULT["roofline"], peak_bytes_per_second=30e9, peak_flops_per_second=180e9)

        def run(rows: float) -> dict:   # every step reads 90 MB of weights; 2 FLOPs a weight a row
            return result(roofline=dict(roof, rows_per_decode_step=rows, bytes_per_decode_step=90e6,
                                        flops_per_decode_step=2 * 22.5e6 * rows))
        self.assertAlmostEqual(verdict.turning_batch(run(3), verdict.peaks([run(3)])), 12.0)
        slowed = result(roofline=dict(run(6)["roofline"], peak_bytes_per_second=10e9))
        self.assertAlmostEqual(verdict.speed(slowed, run(3)).expected, 2.0,
                               "a ceiling measured under load gives way to the best one measured")
        # Both bound by memory: the step costs the same, so the ratio is the batches' ratio.
        self.assertAlmostEqual(verdict.speed(run(6), run(3)).expected, 2.0)
        # Past the turn the step grows with the batch: twelve rows buy four times three, 24 no more.
        self.assertAlmostEqual(verdict.speed(run(24), run(3)).expected, 4.0)
        self.assertIsNone(verdict.speed(result(roofline=None), run(3)).expected)

    def test_the_load_is_busy_when_other_work_wants_the_cores(self):
        self.assertFalse(verdict.Load(0.3, 1.2, 2).busy, "the engine itself keeps one core busy")
        self.assertTrue(verdict.Load(1.0, 4.0, 2).busy)
        self.assertIn("Other programs shared the cores", verdict.load_line(verdict.Load(5.0, 6.0, 2)))

    def test_a_failed_check_says_what_it_costs_and_fails_the_comparison(self):
        results = {"paged": result(manager="paged", mean_batch=2.0, reference_manager=self.reference())}
        self.assertFalse(serve.judge_managers(results))
        lines = "\n".join(serve.compare_verdict(results))
        self.assertIn(f"{ui.FAIL} paged mean batch: 2.00 (reference 5.40): a smaller batch", lines)
        self.assertTrue(serve.judge_managers({"paged": result(manager="paged", reference_manager=self.reference())}))

    def virtual(self, **memory) -> dict:
        return result(manager="virtual", memory={**RESULT["memory"], "committed_after_sleep_bytes": 0, **memory})

    def test_the_virtual_manager_is_judged_against_paged_on_its_budget_and_by_its_sleep(self):
        paged = result(manager="paged", kv_utilization=0.96)
        checks = verdict.virtual_checks(dict(self.virtual(), kv_utilization=0.9599), paged)
        self.assertTrue(all(c.met for c in checks), "a detail below paged's utilization is within the margin")
        self.assertEqual([(c.what, c.against) for c in checks],
                         [("kv_utilization", "paged"), ("committed_after_sleep_bytes", "target")])
        wasteful = dict(self.virtual(committed_after_sleep_bytes=32768), kv_utilization=0.72)
        results = {"paged": paged, "virtual": wasteful}
        self.assertFalse(serve.judge_managers(results))
        lines = "\n".join(serve.compare_verdict(results))
        self.assertIn(f"{ui.FAIL} virtual KV utilization: 72.0 % (paged 96.0 %)", lines)
        self.assertIn(f"{ui.FAIL} virtual bytes committed after sleep: 32.0 KiB (target 0 B): sleep left memory", lines)
        alone = verdict.virtual_checks(self.virtual(committed_after_sleep_bytes=None), None)
        self.assertEqual([(c.what, c.met) for c in alone], [("committed_after_sleep_bytes", False)],
                         "a run that never slept has not given its memory back")

    def test_the_virtual_managers_run_tells_of_exercise_08_not_07(self):
        text = " ".join(serve.summary(self.virtual(map_calls_per_step=1.92, unmap_calls_per_step=1.93)).split())
        self.assertIn("08 virtual memory: 1.92 granules mapped and 1.93 unmapped a step", text)
        self.assertIn("0 B after sleep", text)
        self.assertNotIn("07 KV cache manager", text, "exercise 08's cache served, not exercise 07's manager")
        self.assertNotIn("03 block pool", text)
        self.assertIn("map / unmap calls/step", text)
        self.assertNotIn("08 virtual memory", serve.summary(RESULT), "only the virtual manager maps")

    def test_a_learners_allocators_lead_the_summary_then_the_verdict(self):
        text = " ".join(serve.summary(RESULT, ["01", "02"]).split())
        mine = text.index("What your allocators did in this run:")
        self.assertLess(mine, text.index("The verdict:"))
        self.assertLess(text.index("The verdict:"), text.index("Everything the run measured:"))
        self.assertIn("01 arena: handed out 8 arrays a step (384 in all) for the step's metadata and was reset 48 times",
                      text)
        self.assertIn("02 pool: created 16 sequence objects", text)
        self.assertNotIn("03 block pool", text, "only the learner's own allocators lead")
        self.assertIn("07 KV cache manager", serve.summary(RESULT), "with the references, every allocator is told")
        self.assertNotIn("07 KV cache manager", serve.summary(result(manager="reserve")),
                         "reserve is the kit's manager, not exercise 07's")

    def test_the_new_words_speak_chinese(self):
        words.choose("zh")
        self.addCleanup(words.choose, None)
        text = serve.summary(RESULT, ["01"])
        self.assertIn("你的分配器在这次运行中做了什么", text)
        self.assertIn("01 arena：每步分出 8 个数组", text)
        self.assertIn("噪声太大", verdict.speed_line("paged ÷ reserve", verdict.speed(
            result(runs_tokens_per_second=[1.0, 3.0]), result(runs_tokens_per_second=[2.0, 4.0]))))
        for key, english in verdict.WORDS["en"].items():
            self.assertIn(key, verdict.WORDS["zh"], f"{key} has no Chinese")
        self.assertTrue(all(len(pair) == 2 and pair[1] for pair in verdict.MEANINGS.values()))
