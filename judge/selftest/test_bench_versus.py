"""`bench` compares your allocator with the reference row by row: every row carries yours ÷
reference, and a row more than 1.5× slower is flagged with what usually causes it."""
import contextlib
import io
import unittest

from lab import bench


def row(ns):
    return {"ns": ns, "counters": {}}


class YoursOverReference(unittest.TestCase):
    def table(self, mine, ref):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            slow = bench._print_workload("retain_release", mine, ref, "pool")
        return out.getvalue(), slow

    def test_every_row_has_the_ratio(self):
        text, slow = self.table({"pool": row(20.0), "malloc": row(40.0)}, {"pool": row(10.0), "malloc": row(40.0)})
        self.assertIn("yours ÷ reference", text)
        lines = {line.split()[0]: line for line in text.splitlines()[2:]}
        self.assertIn("2.00 ⚠ slower", lines["pool"])
        self.assertTrue(lines["malloc"].rstrip().endswith("1.00"), lines["malloc"])
        self.assertEqual(slow, ["retain_release/pool"])

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
            self.assertIn(cause, bench.SLOW_CAUSES)


if __name__ == "__main__":
    unittest.main()
