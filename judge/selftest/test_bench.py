"""Benchmark output is grouped by workload and allocator."""
import json
import unittest

from lab import bench


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

    def test_a_benchmark_that_gave_up_keeps_its_reason(self):
        out = json.dumps({"benchmarks": [{"name": "w/pool", "run_type": "iteration", "error_occurred": True,
                                          "error_message": "allocate() returned nullptr", "real_time": 0,
                                          "time_unit": "ns", "iterations": 0}]})
        row = bench.parse(out)["w"]["pool"]
        self.assertIsNone(row["ns"])
        self.assertEqual(row["error"], "allocate() returned nullptr")


if __name__ == "__main__":
    unittest.main()
