"""Known mistakes: every hunk of a diff marks the line that is wrong, and the shipped diffs do."""
import unittest
from pathlib import Path

from lab.model import catalog as cat
from lab.maintainer import mistakes as mis

_MARKED = """Mistake: x
Caught by: S.T

--- a
+++ b
@@ -2,3 +2,3 @@
 b
-c
+C  // MISTAKE: upper case
 d
"""


class MarkedHunksTest(unittest.TestCase):
    def test_a_hunk_that_marks_its_line_passes(self):
        self.assertEqual(mis.unmarked_hunks(_MARKED), [])

    def test_a_hunk_without_a_marked_line_is_named_by_its_line(self):
        diff = _MARKED + "@@ -9,3 +9,3 @@\n h\n-i\n+I\n j\n"
        self.assertEqual(mis.unmarked_hunks(diff), [9])

    def test_a_deletion_must_leave_a_marked_line(self):
        diff = "--- a\n+++ b\n@@ -4,3 +4,2 @@\n d\n-e\n f\n"
        self.assertEqual(mis.unmarked_hunks(diff), [4])

    def test_a_marker_on_a_removed_or_context_line_does_not_count(self):
        diff = "--- a\n+++ b\n@@ -4,3 +4,3 @@\n d  // MISTAKE\n-e  // MISTAKE\n+E\n f\n"
        self.assertEqual(mis.unmarked_hunks(diff), [4])

    def test_the_file_header_lines_are_not_a_hunk(self):
        self.assertEqual(mis.unmarked_hunks("Mistake: x\n--- a\n+++ b  // MISTAKE\n"), [])

    def test_every_shipped_mistake_marks_every_hunk(self):
        for ex in cat.load().exercises:
            for mistake in mis.mistakes(ex):
                with self.subTest(mistake=mistake.path.name):
                    self.assertEqual(mis.unmarked_hunks(mistake.path.read_text(encoding="utf-8")), [])


class ModelLineTest(unittest.TestCase):
    """A mistake names the model stage's test among those that catch it, or says why the model
    cannot catch it, or neither (the model could, but its generator does not find it yet): the
    files are the table."""

    def _problems(self, caught_by: str, beyond: str = "") -> list[str]:
        found = [mis.Mistake(Path("m.diff"), "x", tuple(t.strip() for t in caught_by.split(",")), beyond)]
        return mis.model_problems("ArenaModel", found)

    def test_a_mistake_the_model_catches_names_its_test(self):
        self.assertEqual(self._problems("ArenaBasics.T, ArenaModel.EveryCallAgreesWithTheModel"),
                         [])

    def test_a_mistake_beyond_the_model_says_why(self):
        self.assertEqual(self._problems("ArenaBasics.T", "a race"), [])

    def test_a_mistake_that_does_neither_is_counted_as_a_gap_of_the_generator(self):
        self.assertEqual(self._problems("ArenaBasics.T"), [])
        self.assertIn("it could, but does not yet", mis.model_table([]).splitlines()[0])

    def test_a_mistake_that_does_both_is_named(self):
        problems = self._problems("ArenaModel.E", "a race")
        self.assertEqual(len(problems), 1)
        self.assertIn("says it is beyond the model", problems[0])

    def test_no_shipped_mistake_both_names_the_model_and_says_it_is_beyond_it(self):
        for ex in cat.load().exercises:
            with self.subTest(exercise=ex.name):
                self.assertEqual(mis.model_problems(ex.stages[-1].suite, mis.mistakes(ex)), [])


if __name__ == "__main__":
    unittest.main()


class ServingLineTest(unittest.TestCase):
    """A mistake of the served exercise says what `serve` makes of it, and `check` proves it."""

    def mistake(self, serving: str, name: str = "m") -> mis.Mistake:
        return mis.Mistake(Path(f"{name}.diff"), "x", ("S.T",), "", serving)

    def test_a_line_must_be_an_outcome_or_a_pass_with_its_reason(self):
        good = [self.mistake(o) for o in mis.SERVING_OUTCOMES] + [self.mistake("passes: statistics only")]
        self.assertEqual(mis.serving_problems(good), [])
        for bad in ("", "fails", "passes: ", "tokens differ sometimes"):
            with self.subTest(bad=bad):
                self.assertEqual(len(mis.serving_problems([self.mistake(bad)])), 1)

    def test_the_table_lists_every_mistake_with_its_line(self):
        table = mis.serving_table([self.mistake("a leak", "one"), self.mistake("passes: misuse only", "two")])
        self.assertIn("| `one` | a leak |", table)
        self.assertIn("| `two` | passes: misuse only |", table)

    def test_the_check_proves_each_line_and_refuses_a_wrong_one(self):
        from unittest import mock
        from lab.learner import serve
        from lab.maintainer import check
        catalog = cat.load()
        served = next(e for e in catalog.exercises if e.header == serve.MANAGER_HEADER)
        reference = {"tokens_digest": "a" * 16, "matches_plain_engine": True, "leak": None, "finished": 1,
                     "requests": 1, "mean_batch": 6.0, "peak_running": 9, "kv_utilization": 0.9, "preemptions": 4,
                     "prefix_hit_rate": 0.5, "time_split": {"prefill_tokens": 1000}}
        runs = {  # what the engine prints for each mistake, whatever the manager
            "differs": dict(reference, tokens_digest="b" * 16, matches_plain_engine=None),
            "leaks": dict(reference, leak="2 blocks lost", matches_plain_engine=None),
            "harmless": dict(reference, matches_plain_engine=None),
            "claims-a-leak": dict(reference, matches_plain_engine=None),
            "wastes": dict(reference, matches_plain_engine=None, mean_batch=3.0, preemptions=30),
            "claims-to-waste": dict(reference, matches_plain_engine=None),
            "wastes-unsaid": dict(reference, matches_plain_engine=None, kv_utilization=0.5),
        }
        found = [self.mistake("tokens differ", "differs"), self.mistake("a leak", "leaks"),
                 self.mistake("passes: statistics only", "harmless"), self.mistake("a leak", "claims-a-leak"),
                 self.mistake("crashes", "crashes"), self.mistake("below the reference", "wastes"),
                 self.mistake("below the reference", "claims-to-waste"),
                 self.mistake("passes: statistics only", "wastes-unsaid")]
        current = {}

        def run(binary, trace, manager, timeout, **kwargs):
            if "name" not in current:
                return dict(reference)
            if current["name"] == "crashes":
                raise serve.ServeError("crashed", ending=serve.CRASHED)
            return dict(runs[current["name"]])

        def materialize(ex, mistake, target=None):
            current["name"] = mistake.name
            return Path(f"/tmp/{mistake.name}.hpp")

        with mock.patch.object(check, "mistakes", lambda ex: found), \
                mock.patch.object(check, "materialize", materialize), \
                mock.patch.object(serve, "build_engine", lambda *a, **k: Path("/bin/true")), \
                mock.patch.object(serve, "run", run), \
                mock.patch.object(serve, "with_source", lambda catalog, chosen, file: chosen):
            items = list(check._served_mistakes(catalog, served))
        verdicts = {item.what.split("known mistake ")[-1].split()[0] if "known mistake" in item.what else "reference":
                    item.ok for item in items}
        self.assertEqual(verdicts, {"reference": True, "differs": True, "leaks": True, "harmless": True,
                                    "claims-a-leak": False, "crashes": True, "wastes": True, "claims-to-waste": False,
                                    "wastes-unsaid": False})
