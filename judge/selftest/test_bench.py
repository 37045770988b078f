"""Benchmark output is grouped by workload and allocator."""
import json
import unittest

from lab.learner import bench


class BenchTest(unittest.TestCase):
    def test_names_split_into_workload_and_allocator(self):
        self.assertEqual(bench.split_name("decode_step/arena"), ("decode_step", "arena"))
        self.assertEqual(bench.split_name("shared/pool/threads:2"), ("shared", "pool"))
        self.assertEqual(bench.split_name("a/b/real_time/threads:2"), ("a", "b"))

    def test_times_are_in_nanoseconds_and_counters_kept(self):
        out = json.dumps({"benchmarks": [
            {"name": "w/arena", "run_type": "iteration", "real_time": 2.0, "cpu_time": 2.0, "time_unit": "us",
             "iterations": 10, "bytes_used": 4096.0},
            {"name": "w/malloc", "run_type": "iteration", "real_time": 50.0, "cpu_time": 50.0, "time_unit": "ns",
             "iterations": 10},
            {"name": "w/malloc_mean", "run_type": "aggregate", "real_time": 1.0, "time_unit": "ns"}]})
        parsed = bench.parse(out)
        self.assertEqual(parsed["w"]["arena"]["ns"], 2000.0)
        self.assertEqual(parsed["w"]["arena"]["counters"], {"bytes_used": 4096.0})
        self.assertEqual(set(parsed["w"]), {"arena", "malloc"})
        self.assertEqual(bench._ratio(10, 100), "10.0× faster")
        self.assertEqual(bench._ratio(None, 100), "")
        self.assertEqual(bench._ratio(100, 10), "10.0× slower")

    def test_repetitions_give_the_median_and_the_spread(self):
        runs = [25.9, 36.1, 27.0, 26.2, 26.5]
        out = json.dumps({"benchmarks": [
            *({"name": "pmr_vector/monotonic", "run_type": "iteration", "repetitions": 5, "repetition_index": i,
               "real_time": t, "cpu_time": t, "time_unit": "us", "iterations": 100} for i, t in enumerate(runs)),
            {"name": "pmr_vector/monotonic_median", "run_type": "aggregate", "aggregate_name": "median",
             "real_time": 1.0, "time_unit": "us"}]})
        row = bench.parse(out)["pmr_vector"]["monotonic"]
        self.assertEqual(row["ns"], 26500.0)
        self.assertEqual(len(row["runs"]), 5)
        # Distances from 26.5: 0.6, 9.6, 0.5, 0.3, 0; their median 0.5. The one slow repetition
        # (36.1) moves the median and this spread little, where a range would say ±19%.
        self.assertAlmostEqual(row["spread"], 0.5 / 26.5)
        self.assertEqual(bench._spread(row), "±2%")
        note = bench.footnote("alloclab_", [{"pmr_vector": {"monotonic": row}}], 5)
        self.assertIn("the median of 5 runs, every run a process of its own", note)
        self.assertIn("by up to ±2%", note)
        self.assertNotIn("a few percent", note)

    def test_rows_keep_the_order_of_the_file_when_repetitions_are_interleaved(self):
        out = json.dumps({"benchmarks": [
            {"name": f"w/{name}", "family_index": family, "per_family_instance_index": 0, "run_type": "iteration",
             "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ns", "iterations": 1}
            for name, family in (("monotonic", 1), ("arena", 0), ("monotonic", 1), ("arena", 0))]})
        self.assertEqual(list(bench.parse(out)["w"]), ["arena", "monotonic"])

    def test_check_runs_each_benchmark_once(self):
        import inspect
        self.assertEqual(inspect.signature(bench.measure).parameters["repetitions"].default, 1)

    def test_a_benchmark_that_gave_up_keeps_its_reason(self):
        out = json.dumps({"benchmarks": [{"name": "w/pool", "run_type": "iteration", "error_occurred": True,
                                          "error_message": "allocate() returned nullptr", "real_time": 0,
                                          "time_unit": "ns", "iterations": 0}]})
        row = bench.parse(out)["w"]["pool"]
        self.assertIsNone(row["ns"])
        self.assertEqual(row["error"], "allocate() returned nullptr")


if __name__ == "__main__":
    unittest.main()
