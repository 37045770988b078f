"""`grade`: a folder of learners is judged in parallel and scored stage by stage. Four learners
hand in exercise 01: the reference in a clone of the kit (full marks), a header with a mistake
stage 3 catches in a flat upload (the other three stages' points), a header whose constructor
never returns (0), and nothing (0, "not submitted"). A rerun judges again only what changed or
was never saved. Finding headers, points and the command's usage errors are tested without a
build."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from lab.instructor import grade, grading
from lab.maintainer.mistakes import materialize, mistakes
from lab.model import catalog as cat

ROOT = Path(__file__).resolve().parents[2]
JUDGE = ROOT / "judge" / "judge.py"
HANG_AT = "    poison(buffer_, capacity_);\n  }"
HANG = "    poison(buffer_, capacity_);\n    for (volatile bool forever = true; forever;) {\n    }\n  }"


def hangs(reference: Path) -> str:
    """The reference arena with a constructor that never returns: every test of every stage hangs."""
    text = reference.read_text(encoding="utf-8")
    assert text.count(HANG_AT) == 1, "the reference's constructor changed: update HANG_AT"
    return text.replace(HANG_AT, HANG)


def run_judge(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, str(JUDGE), *argv], capture_output=True, text=True, env=env,
                          timeout=900)


def no_traceback(test: unittest.TestCase, proc: subprocess.CompletedProcess) -> None:
    test.assertNotIn("Traceback", proc.stdout + proc.stderr)
    test.assertNotIn("internal error", proc.stderr)


class FindingHeaders(unittest.TestCase):
    def setUp(self):
        self.catalog = cat.load()
        self.arena, self.pool = self.catalog.resolve("1"), self.catalog.resolve("2")
        self.tmp = Path(tempfile.mkdtemp(prefix="alloclab-grade-"))
        self.addCleanup(shutil.rmtree, self.tmp)

    def write(self, relative: str, text: str = "// a header\n") -> Path:
        path = self.tmp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def test_a_clone_and_a_flat_upload_are_both_found(self):
        clone = self.write("exercises/01-arena/arena.hpp")
        self.write("solutions/01-arena/arena.hpp")            # the kit's own reference, in a clone
        self.write(".alloclab/backups/01-arena/arena.hpp")    # a hidden folder
        flat = self.write("fixed_pool.hpp")
        found = grading.find_headers(self.tmp, [self.arena, self.pool])
        self.assertEqual(found, {"01-arena": grading.Header(clone, b"// a header\n"),
                                 "02-fixed-pool": grading.Header(flat, b"// a header\n")})

    def test_two_candidates_are_an_error_and_none_is_not_submitted(self):
        self.write("a/arena.hpp")
        self.write("b/arena.hpp")
        found = grading.find_headers(self.tmp, [self.arena, self.pool])
        self.assertEqual(found["01-arena"].status, grading.GradeStatus.AMBIGUOUS)
        self.assertTrue(str(found["01-arena"]).startswith(
            "ambiguous: 2 files are named arena.hpp (a/arena.hpp, b/arena.hpp)"))
        self.assertEqual(found["02-fixed-pool"], grading.Unjudged(grading.GradeStatus.NOT_SUBMITTED,
                                                                  "no file named fixed_pool.hpp was handed in"))

    def test_a_symbolic_link_is_not_followed(self):
        outside = Path(tempfile.mkdtemp(prefix="alloclab-grade-outside-"))
        self.addCleanup(shutil.rmtree, outside)
        (outside / "arena.hpp").write_text("// someone else's\n")
        (self.tmp / "arena.hpp").symlink_to(outside / "arena.hpp")
        (self.tmp / "theirs").symlink_to(outside, target_is_directory=True)
        self.assertEqual(grading.find_headers(self.tmp, [self.arena])["01-arena"].status,
                         grading.GradeStatus.NOT_SUBMITTED)

    def test_an_unjudgeable_header_scores_zero_and_says_why(self):
        big = self.write("arena.hpp", "x" * (grading.LARGEST_HEADER + 1))
        grade = grading.grade_header(self.catalog, self.arena, grading.read_header(big), ("clang",), "unused",
                                     self.tmp)
        self.assertEqual((grade.status, grade.score, grade.max_score), ("unreadable", 0.0, 100.0))
        self.assertIn("over 1 MB", grade.message)
        self.assertEqual([s.earned for s in grade.stages], [0.0] * 5)


class Flags(unittest.TestCase):
    def test_a_header_that_could_rewrite_its_results_is_flagged_for_a_human(self):
        forger = """
            #include <cstdio>
            #include <cstdlib>
            // a comment may say fopen or /proc/ freely
            static int rewrite = std::atexit([] { std::FILE* f = std::fopen("/proc/self/cmdline", "r"); (void)f; });
        """
        self.assertEqual(grading.flags_of(forger), [
            "uses /proc/, atexit, fopen: an allocator needs none of these, and a header could use them to rewrite "
            "its test program's results or reach outside it; read it before you trust its score"])
        self.assertTrue(grading.flags_of("pid_t child = ::fork();"))
        self.assertTrue(grading.flags_of("int x = testing::UnitTest::GetInstance()->total_test_count();"))

    def test_no_reference_and_no_skeleton_is_flagged(self):
        for ex in cat.load().exercises:
            for header in (ex.solution_file, ex.exercise_file):
                self.assertEqual(grading.flags_of(header.read_text(encoding="utf-8")), [], header)


class Points(unittest.TestCase):
    def catalog_with(self, *points: str) -> cat.Catalog:
        text = (ROOT / "judge" / "catalog.toml").read_text(encoding="utf-8")
        head, first = text.split("[[exercise]]", 2)[:2]
        stages = first.split("  [[exercise.stage]]\n")
        first = stages[0] + "".join("  [[exercise.stage]]\n" + (p + "\n" if p else "") + s
                                    for s, p in zip(stages[1:], points))
        path = Path(tempfile.mkdtemp(prefix="alloclab-points-")) / "catalog.toml"
        self.addCleanup(shutil.rmtree, path.parent)
        path.write_text(head + "[[exercise]]" + first, encoding="utf-8")
        return cat.load(path)

    def test_stages_are_equal_shares_of_100_unless_the_catalog_says(self):
        self.assertEqual(self.catalog_with("", "", "", "", "").exercises[0].stage_points(), (20.0,) * 5)
        given = self.catalog_with("  points = 10", "  points = 20", "  points = 30", "  points = 40", "  points = 50")
        self.assertEqual(given.exercises[0].stage_points(), (10.0, 20.0, 30.0, 40.0, 50.0))

    def test_points_on_some_stages_only_or_not_positive_are_refused(self):
        with self.assertRaisesRegex(cat.CatalogError, "every stage gives its points or none"):
            self.catalog_with("  points = 10", "", "", "", "")
        with self.assertRaisesRegex(cat.CatalogError, "points is a positive number"):
            self.catalog_with("  points = 0", "  points = 20", "  points = 30", "  points = 40", "  points = 50")


class Usage(unittest.TestCase):
    def test_bad_usage_is_one_line_and_exit_status_2(self):
        empty = Path(tempfile.mkdtemp(prefix="alloclab-grade-"))
        self.addCleanup(shutil.rmtree, empty)
        for argv, says in ((["grade", str(empty / "missing")], "is not a folder"),
                           (["grade", str(empty)], "holds no learner's folder"),
                           (["grade", str(ROOT / "exercises"), "--exercises", "9"], "no exercise is called '9'"),
                           (["grade", str(ROOT / "exercises"), "--jobs", "0"], "--jobs must be at least 1")):
            proc = run_judge(*argv)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertIn(says, proc.stderr)
            no_traceback(self, proc)


class GradingAClass(unittest.TestCase):
    """The class is graded once for every test below; the rerun tests change it afterwards."""

    @classmethod
    def setUpClass(cls):
        if not all(shutil.which(tool) for tool in ("clang++", "cmake", "ninja")):
            raise unittest.SkipTest("clang++, cmake and ninja are needed")
        catalog = cat.load()
        arena = catalog.resolve("1")
        cls.tmp = Path(tempfile.mkdtemp(prefix="alloclab-class-"))
        cls.folder, cls.out = cls.tmp / "class", cls.tmp / "grades"
        reference = arena.solution_file
        clone = cls.folder / "alice" / "exercises" / "01-arena"
        clone.mkdir(parents=True)
        shutil.copy(reference, clone / "arena.hpp")
        (cls.folder / "alice" / "solutions" / "01-arena").mkdir(parents=True)
        shutil.copy(arena.exercise_file, cls.folder / "alice" / "solutions" / "01-arena" / "arena.hpp")
        mistake = next(m for m in mistakes(arena) if m.name == "peak-is-used")   # caught by stages 3 and 5 only
        (cls.folder / "bob").mkdir()
        shutil.copy(materialize(arena, mistake), cls.folder / "bob" / "arena.hpp")
        (cls.folder / "carol").mkdir()
        (cls.folder / "carol" / "arena.hpp").write_text(hangs(reference))
        (cls.folder / "dave" / "notes").mkdir(parents=True)
        cls.first = run_judge("grade", str(cls.folder), "--exercises", "1", "--jobs", "2", "--out", str(cls.out))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rows(self) -> dict[str, dict[str, str]]:
        with open(self.out / "grades.csv", newline="") as handle:
            return {row["student"]: row for row in csv.DictReader(handle)}

    def test_1_each_learner_scores_what_their_header_earns(self):
        no_traceback(self, self.first)
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        self.assertEqual(self.rows(), {
            # Nobody handed in tests of their own: their column, beside the header's, holds 0.
            "alice": {"student": "alice", "01-arena": "100", "01-arena tests": "0", "total": "100"},
            "bob": {"student": "bob", "01-arena": "60", "01-arena tests": "0", "total": "60"},
            "carol": {"student": "carol", "01-arena": "0", "01-arena tests": "0", "total": "0"},
            "dave": {"student": "dave", "01-arena": "0", "01-arena tests": "0", "total": "0"},
        })
        self.assertRegex(self.first.stdout, r"Graded 4 learners × 1 exercise in .* \(3 judged, 0 unchanged since "
                                            r"the last run, 1 with no header to judge\): mean total 40.0 of 120")

    def test_2_the_json_and_the_reports_say_why(self):
        document = json.loads((self.out / "grades.json").read_text())
        self.assertEqual(document["exercises"], [{"name": "01-arena", "title": "The arena", "header": "arena.hpp",
                                                  "max_score": 100, "stage_points": [20, 20, 20, 20, 20],
                                                  "test_points": 20}])
        by_name = {s["student"]: s["exercises"]["01-arena"] for s in document["students"]}
        self.assertEqual(by_name["bob"]["stages_passed"], [1, 2, 4])
        self.assertEqual(by_name["bob"]["message"], "stages 1, 2, 4 of 5 pass; the first failing is stage 3 (reuse)")
        self.assertEqual(by_name["dave"]["status"], "not submitted")
        bob = (self.out / "bob" / "01-arena.txt").read_text()
        self.assertIn("✗ ArenaReuse.PeakIsTheHighWaterMark", bob)
        self.assertIn("(arena.hpp)", bob, "the report names the learner's own file, not the judge's copy")
        self.assertNotIn(str(grading.STAGING), bob)
        self.assertNotIn("\033[", bob, "a report on disk has no colour codes")
        carol = (self.out / "carol" / "01-arena.txt").read_text()
        self.assertIn("every stage hung on its first run", carol)
        self.assertNotIn("Scored 0", carol, "the hang is judged as a hang: the header includes nothing of the kit")
        alice = json.loads((self.out / "alice" / "01-arena.json").read_text())["grade"]
        self.assertEqual(alice["source"], "exercises/01-arena/arena.hpp")
        self.assertTrue(all(s["passed"] for s in alice["stages"]))
        self.assertEqual((self.out / "dave" / "01-arena.txt").read_text(),
                         "not submitted: no file named arena.hpp was handed in\n")

    def test_3_a_header_that_includes_the_reference_scores_0(self):
        catalog = cat.load()
        arena = catalog.resolve("1")
        erin = self.tmp / "erin"
        erin.mkdir()
        relative = os.path.relpath(arena.solution_file, grading.STAGING / "grade0" / arena.name)
        (erin / "arena.hpp").write_text(f'#pragma once\n#include "{relative}"\n')
        grade = grading.grade_header(catalog, arena, grading.read_header(erin / "arena.hpp"), ("clang",), "grade0",
                                     erin)
        self.assertEqual(grade.score, 0.0)
        self.assertEqual(grade.message, "scored 0: arena.hpp includes the kit's reference solution "
                         "(solutions/01-arena/arena.hpp): its tests judged the reference, not the learner's code")
        self.assertTrue(all(s.report.startswith("✗ Scored 0") for s in grade.stages))

    def test_3b_tests_given_points_are_graded_beside_the_header(self):
        catalog = cat.load()
        arena = catalog.resolve("1")
        self.assertEqual(arena.test_points, 20, "the kit's catalog gives every exercise's tests 20 points")
        alice = self.folder / "alice"
        mine = alice / "exercises" / "01-arena" / "my_tests.cpp"
        shutil.copy(arena.exercise_file.parent / "my_tests.cpp", mine)   # the skeleton's example
        self.addCleanup(mine.unlink)
        found = grading.read_header(alice / "exercises" / "01-arena" / "arena.hpp")
        graded = grading.grade_header(catalog, arena, found, ("clang",), "grade0", alice)
        tests = graded.tests
        self.assertEqual((tests.valid, tests.total), (True, len(mistakes(arena))), tests.message)
        self.assertGreater(tests.caught, 0, "the skeleton's example rejects a mistake or two")
        self.assertAlmostEqual(tests.earned, 20 * tests.caught / tests.total)
        self.assertEqual(tests.source, "exercises/01-arena/my_tests.cpp")
        self.assertIn("Thorough: your valid tests reject", graded.report)
        missing = grading.grade_header(catalog, arena, grading.read_header(self.folder / "bob" / "arena.hpp"),
                                       ("clang",), "grade0", self.folder / "bob")
        self.assertEqual((missing.tests.earned, missing.tests.message),
                         (0.0, "no my_tests.cpp was handed in beside arena.hpp"))
        out = self.tmp / "tables"
        learners = [alice, self.folder / "bob"]
        grade.write_tables(out, learners, [arena], {("alice", arena.name): graded, ("bob", arena.name): missing})
        with open(out / "grades.csv", newline="") as handle:
            rows = {row["student"]: row for row in csv.DictReader(handle)}
        self.assertEqual(rows["alice"]["01-arena tests"], f"{round(tests.earned, 2):g}",
                         "the tests' score stands beside the header's")
        self.assertEqual(rows["alice"]["total"], f"{round(100 + tests.earned, 2):g}")
        self.assertEqual(rows["bob"]["01-arena tests"], "0")

    def test_4_a_rerun_judges_only_what_changed_or_was_not_saved(self):
        (self.out / "alice" / "01-arena.json").unlink()        # as if the first run had stopped before it
        shutil.copy(cat.load().resolve("1").solution_file, self.folder / "bob" / "arena.hpp")   # bob fixed it
        again = run_judge("grade", str(self.folder), "--exercises", "1", "--jobs", "2", "--out", str(self.out))
        no_traceback(self, again)
        # carol's hang is not waited out again: her header did not change.
        self.assertIn("(2 judged, 1 unchanged since the last run, 1 with no header to judge)", again.stdout)
        self.assertEqual({name: row["total"] for name, row in self.rows().items()},
                         {"alice": "100", "bob": "100", "carol": "0", "dave": "0"})


if __name__ == "__main__":
    unittest.main()
