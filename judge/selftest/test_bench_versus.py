"""`bench` compares your allocator with the reference: the rows that run your code (the
exercise's bench_subject) carry yours ÷ reference, and one more than 1.5× slower is flagged with
what usually causes it; the other rows run none of your code and carry no such ratio, but a line
that says which allocator is compared with which."""
import contextlib
import io
import unittest

from lab.learner import bench
from lab.model import words
from lab.model.catalog import ROOT


def row(ns):
    return {"ns": ns, "counters": {}}


class YoursOverReference(unittest.TestCase):
    def table(self, mine, ref, subject="pool"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            slow = bench._print_workload("retain_release", mine, ref, subject)
        return out.getvalue(), slow

    def test_only_the_rows_that_run_your_code_have_the_ratio(self):
        text, slow = self.table({"pool": row(20.0), "malloc": row(40.0)}, {"pool": row(10.0), "malloc": row(40.0)})
        self.assertIn("yours ÷ reference", text)
        lines = text.splitlines()
        [pool] = [line for line in lines if line.startswith("  pool")]
        [malloc] = [line for line in lines if line.startswith("  malloc")]
        self.assertIn("2.00 ⚠ slower", pool)
        self.assertIn("40.0 ns", malloc)
        self.assertTrue(malloc.rstrip().endswith("both builds: runs none of your code"),
                        f"malloc runs none of your code: {malloc!r}")
        self.assertEqual(slow, ["retain_release/pool"])

    def test_a_row_that_runs_none_of_your_code_is_one_figure_of_both_builds_runs(self):
        mine = {"pool": row(10.0), "malloc": {"ns": 3.0, "runs": [2.0, 3.0, 4.0], "spread": 0.3, "counters": {}}}
        ref = {"pool": row(10.0), "malloc": {"ns": 300.0, "runs": [300.0, 310.0], "spread": 0.02, "counters": {}}}
        text, _ = self.table(mine, ref)
        [malloc] = [line for line in text.splitlines() if line.startswith("  malloc")]
        self.assertEqual(malloc.count(" ns"), 1, f"one figure, not one per build: {malloc!r}")
        self.assertIn("4.0 ns", malloc)  # the median of the five runs, 2, 3, 4, 300 and 310
        self.assertIn("pool 2.5× slower than malloc with your header; 2.5× slower with the reference", text)
        self.assertIsNone(bench.pooled(None, None))
        self.assertEqual(bench.pooled({"ns": None, "counters": {}, "error": "x"}, row(5.0))["ns"], 5.0)

    def test_the_comparison_with_another_allocator_says_which_is_faster(self):
        """`210.0× faster` alone, on the device's row, read as the device being faster."""
        text, _ = self.table({"caching": row(1.0), "device": row(210.0)}, {"caching": row(2.0), "device": row(210.0)},
                             "caching")
        self.assertIn("    caching 210.0× faster than device with your header; 105.0× faster with the reference",
                      text)
        text, _ = self.table({"pool": row(30.0), "malloc": row(10.0)}, {})
        self.assertIn("pool 3.0× slower than malloc with your header", text)

    def test_each_figure_carries_its_spread(self):
        mine = {"pool": {"ns": 20.0, "runs": [19.0, 20.0, 23.0], "spread": 0.1, "counters": {}}}
        text, _ = self.table(mine, {"pool": row(20.0)})
        [pool] = [line for line in text.splitlines() if line.startswith("  pool")]
        self.assertIn("20.0 ns ±10%", pool)
        self.assertIn("1.00", pool)

    def test_within_the_margin_is_not_flagged(self):
        text, slow = self.table({"pool": row(14.0)}, {"pool": row(10.0)})
        self.assertIn("1.40", text)
        self.assertNotIn("⚠", text)
        self.assertEqual(slow, [])

    def test_a_missing_or_failed_row_has_no_ratio(self):
        self.assertIsNone(bench.yours_over_reference(None, row(1.0)))
        self.assertIsNone(bench.yours_over_reference({"ns": None, "counters": {}}, row(1.0)))
        text, slow = self.table({"pool": {"ns": None, "counters": {}, "error": "boom"}}, {"pool": row(10.0)})
        self.assertEqual(slow, [])
        self.assertIn("—", text)

    def test_the_advice_names_the_usual_causes(self):
        for cause in ("cold", "lock", "atomic", "lookup"):
            self.assertIn(cause, words.WORDS["slow_causes"][0])

    def test_a_count_is_shown_where_it_tells_rows_apart(self):
        """08 reports faults beside times: on first_touch they differ (1, 16, 512 a granule) and each
        row shows its own, a released granule's negative bytes included; on map every row takes 0,
        which describes the workload, not an allocator, and is left out."""
        def counted(ns, **counters):
            return {"ns": ns, "counters": counters}
        touch = {"vm_4KiB": counted(200.0, faults=1.0, committed_KiB=-4.0),
                 "vm_2MiB": counted(9e4, faults=512.0, committed_KiB=-2048.0),
                 "block_pool": counted(1.0, faults=0.0, committed_KiB=0.0)}
        text, _ = self.table(touch, touch, "vm")
        self.assertRegex(text, r"faults +512 +512")
        self.assertIn("-2,048", text)
        mapped = {"vm_4KiB": counted(140.0, faults=0.0), "block_pool": counted(1.0, faults=0.0)}
        text, _ = self.table(mapped, mapped, "vm")
        self.assertNotIn("faults", text)

    def test_the_advice_of_exercise_08_names_counters_its_benchmarks_report(self):
        """The advice sends a learner to a counter of the table: it must be one the benchmarks print."""
        source = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "judge" / "bench" / "08-virtual-memory").glob("*.cpp"))
        for lang in (0, 1):
            advice = words.WORDS["slow_causes_8"][lang]
            for counter in ("committed_KiB", "hot_path_maps"):
                self.assertIn(f"`{counter}`", advice)
                self.assertIn(f'counters["{counter}"]', source)


if __name__ == "__main__":
    unittest.main()
