"""The PrairieLearn external grader (`autograder prairielearn`): the folder it writes (the image's
build context, one question per exercise), and its entry point run for real in a temporary
grading root on exercise 01: the reference, a header that fails a later stage, one that does not
compile, a hostile one, none handed in, and the grader's own failure. The root is named by
ALLOCLAB_GRADE_ROOT, the former name of ALLOCLAB_PRAIRIELEARN_ROOT, which must keep working.
Every results.json must validate against judge/schemas/prairielearn-results.schema.json.

The grading cases share build trees of their own (slot "selftest-prairielearn"), so after the
first build each compiles only the header that changed."""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from lab.instructor import grading, platforms, prairielearn
from lab.maintainer import mistakes
from lab.model import catalog as cat
from lab.model.catalog import ROOT

from . import formats

SLOT = "selftest-prairielearn"
UNPRIVILEGED = "nobody"   # the user the learner's code runs as when the tests run as root
SCHEMA = json.loads((ROOT / "judge" / "schemas" / "prairielearn-results.schema.json").read_text(encoding="utf-8"))
ENTRY = ROOT / prairielearn.ENTRY_POINT
JUDGE = ROOT / "judge" / "judge.py"

# Appended to a header, this runs when any test program starts: it writes a results.json that
# gives full marks where the grader writes its own (and a file beside it, the proof that it could
# write there), then floods standard output.
FORGER = r'''
#include <cstdio>
#include <cstdlib>
#include <string>
namespace forged_results {
inline const int forged = [] {
  const char* root = std::getenv("ALLOCLAB_GRADE_ROOT");
  const std::string results = std::string(root ? root : "/grade") + "/results/";
  if (std::FILE* proof = std::fopen((results + "forged-proof").c_str(), "w")) std::fclose(proof);
  if (std::FILE* f = std::fopen((results + "results.json").c_str(), "w")) {
    std::fputs("{\"gradable\": true, \"score\": 1.0, \"message\": \"forged by the header\", \"tests\": []}", f);
    std::fclose(f);
  }
  for (int i = 0; i < 100000; ++i) std::puts("flood flood flood flood flood flood flood flood flood flood");
  return 0;
}();
}  // namespace forged_results
'''


def environment(root: Path, **more: str) -> dict[str, str]:
    env = dict(os.environ, ALLOCLAB_GRADE_ROOT=str(root), ALLOCLAB_SLOT=SLOT, NO_COLOR="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("ALLOCLAB_RUN_AS", None)
    return dict(env, **more)


def others_can_read(folder: Path) -> bool:
    """Whether a user other than the owner can reach `folder` and read its files."""
    for parent in [folder, *folder.parents]:
        if not parent.stat().st_mode & stat.S_IXOTH:
            return False
    return all(p.stat().st_mode & stat.S_IROTH for p in folder.iterdir())


class ResultsChecks:
    def valid(self, results: dict, where: str) -> None:
        self.assertEqual(formats.json_errors(results, SCHEMA), [], f"{where}: results.json against its schema")
        self.assertTrue(0 <= results["score"] <= 1, f"{where}: PrairieLearn takes a score in [0, 1]")
        for test in results["tests"]:
            self.assertLessEqual(test["points"], test["max_points"], f"{where}: {test['name']}")

    def results_of(self, root: Path) -> dict:
        path = root / "results" / "results.json"
        self.assertTrue(path.is_file(), "the entry point must always write results/results.json")
        self.assertLess(path.stat().st_size, prairielearn.RESULTS_BYTES, "PrairieLearn takes results.json up to 1 MB")
        return json.loads(path.read_text(encoding="utf-8"))


class Package(unittest.TestCase):
    """The folder a course copies: every question runs the image's entry point on its exercise."""

    @classmethod
    def setUpClass(cls):
        cls.catalog = cat.load()
        cls.tmp = tempfile.TemporaryDirectory(prefix="alloclab-pl-")
        cls.out = Path(cls.tmp.name) / "prairielearn"
        cls.image = prairielearn.write(cls.out, cls.catalog, list(cls.catalog.exercises))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_exercise_is_a_question_on_the_image_and_its_entry_point(self):
        kit = self.out / "image" / "alloclab"
        uuids = set()
        for ex in self.catalog.exercises:
            folder = self.out / "questions" / prairielearn.TOPIC / ex.name
            info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
            where = f"{ex.name}/info.json"
            for key in ("uuid", "title", "topic", "type"):
                self.assertIn(key, info, f"{where}: PrairieLearn requires {key}")
            self.assertEqual(info["type"], "v3", where)
            self.assertEqual(info["gradingMethod"], "External", f"{where}: graded by the external grader")
            options = info["externalGradingOptions"]
            self.assertIs(options["enabled"], True, where)
            self.assertEqual(options["image"], self.image, f"{where}: names the image the folder builds")
            self.assertIs(options["enableNetworking"], False, f"{where}: the learner's code gets no network")
            self.assertTrue(0 < options["timeout"] <= 600, f"{where}: PrairieLearn allows 1-600 seconds")
            entry, argument = options["entrypoint"]
            self.assertEqual(argument, ex.name, f"{where}: the entry point grades this question's exercise")
            self.assertTrue(entry.startswith(prairielearn.KIT + "/"), where)
            script = kit / Path(entry).relative_to(prairielearn.KIT)
            self.assertTrue(script.is_file(), f"{where}: the entry point {entry} is not in the image's kit")
            self.assertTrue(script.stat().st_mode & stat.S_IXUSR, f"{where}: the entry point must be executable")
            uuids.add(info["uuid"])
        self.assertEqual(len(uuids), len(self.catalog.exercises), "each question needs a uuid of its own")

    def test_a_question_uploads_its_header_and_shows_the_results_and_its_chapter(self):
        for ex in self.catalog.exercises:
            folder = self.out / "questions" / prairielearn.TOPIC / ex.name
            html = (folder / "question.html").read_text(encoding="utf-8")
            self.assertIn(f'<pl-file-upload file-names="{ex.header}">', html, ex.name)
            self.assertIn("<pl-external-grader-results>", html, ex.name)
            self.assertNotRegex(html, r"@[a-z_]+@", f"{ex.name}: a template field was left unfilled")
            for link in re.findall(r"\{\{options\.client_files_question_url\}\}/([^\"]+)", html):
                chapter = folder / "clientFilesQuestion" / link
                self.assertTrue(chapter.is_file(), f"{ex.name}: the statement links {link}, which is not there")
                for figure in re.findall(r"\]\((figures/[^)\s]+)\)", chapter.read_text(encoding="utf-8")):
                    self.assertTrue((chapter.parent / figure).is_file(), f"{ex.name}: the chapter's {figure}")
            for stage, points in zip(ex.stages, ex.stage_points()):
                self.assertIn(f"Stage {stage.number}, {stage.title.replace('&', '&amp;')} ({points:g} points)", html)

    def test_uuids_stay_the_same_when_the_folder_is_written_again(self):
        again = Path(self.tmp.name) / "again"
        prairielearn.write(again, self.catalog, list(self.catalog.exercises[:1]))
        first = self.catalog.exercises[0].name
        read = [json.loads((o / "questions" / prairielearn.TOPIC / first / "info.json").read_text())["uuid"]
                for o in (self.out, again)]
        self.assertEqual(read[0], read[1], "PrairieLearn keys the learners' work on a question's uuid")

    def test_the_image_is_the_development_containers_with_the_kit_warmed(self):
        dockerfile = (self.out / "image" / "Dockerfile").read_text(encoding="utf-8")
        devcontainer = (ROOT / ".devcontainer" / "Dockerfile").read_text(encoding="utf-8")
        base = re.findall(r"^FROM\s+(\S+)", devcontainer, re.M)
        self.assertEqual(re.findall(r"^FROM\s+(\S+)", dockerfile, re.M), base,
                         "the grading image starts from the development container's base")
        self.assertIn("/tmp/alloclab-ci/install", dockerfile, "the toolchain comes from the same .ci/install")
        context = self.out / "image"
        for line in re.findall(r"^COPY\s+(.+)$", dockerfile, re.M):
            for source in line.split()[:-1]:
                self.assertTrue((context / source).exists(), f"COPY {source}: not in the build context")
        self.assertRegex(dockerfile, rf"useradd .*\b{prairielearn.LEARNER_USER}\b")
        self.assertRegex(dockerfile, rf"ENV ALLOCLAB_RUN_AS={prairielearn.LEARNER_USER}\b",
                         "the learner's code must run as the unprivileged user")
        warm = re.search(r"^RUN .*run --warm (\S+)$", dockerfile, re.M)
        self.assertIsNotNone(warm, "the image warms its build trees by grading the references")
        self.assertEqual(warm.group(1).split(","), [ex.name for ex in self.catalog.exercises])
        self.assertNotRegex(dockerfile, r"@[a-z_]+@", "a template field was left unfilled")
        kit = context / "alloclab"
        for needed in ("CMakeLists.txt", "judge/catalog.toml", "judge/lab/instructor/prairielearn.py",
                       "solutions/01-arena/arena.hpp", ".ci/install"):
            self.assertTrue((kit / needed).is_file(), f"the image's kit lacks {needed}")
        self.assertFalse((kit / "build").exists(), "the kit's own build trees stay out of the image")
        shipped = sorted(p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file())
        self.assertEqual(shipped, platforms.kit_files(), "the image holds the kit Gradescope's zip holds")

    def test_the_command_writes_the_chosen_exercises_and_keeps_a_folder_it_did_not_write(self):
        out = Path(self.tmp.name) / "cli"
        env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, str(JUDGE), "autograder", "prairielearn", "--exercises", "1",
                               "-o", str(out)], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(sorted(p.name for p in (out / "questions" / prairielearn.TOPIC).iterdir()), ["01-arena"])
        self.assertIn("run --warm 01-arena\n", (out / "image" / "Dockerfile").read_text(encoding="utf-8"))
        self.assertIn("docker push", done.stdout)
        again = subprocess.run([sys.executable, str(JUDGE), "autograder", "prairielearn", "--exercises", "1",
                                "-o", str(out)], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(again.returncode, 0, "a folder it wrote is written again: " + again.stderr)
        mine = Path(self.tmp.name) / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("an instructor's file\n")
        refused = subprocess.run([sys.executable, str(JUDGE), "autograder", "prairielearn", "--exercises", "1",
                                  "-o", str(mine)], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertNotIn("Traceback", refused.stderr)
        self.assertTrue((mine / "notes.txt").is_file(), "a folder it did not write is never overwritten")


class NoGrading(ResultsChecks, unittest.TestCase):
    """Results that need no build: nothing handed in, and the grader's own failures."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="alloclab-pl-")
        self.root = Path(self.tmp.name)
        (self.root / "student").mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_missing_header_is_not_gradable_and_says_what_to_hand_in(self):
        (self.root / "student" / "Arena.hpp").write_text("// the wrong name\n")
        done = subprocess.run([str(ENTRY), "01-arena"], capture_output=True, text=True, env=environment(self.root),
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = self.results_of(self.root)
        self.valid(results, "not handed in")
        self.assertIs(results["gradable"], False, "no header where one was asked: PrairieLearn counts no attempt")
        self.assertIn("arena.hpp", results["message"])
        self.assertTrue(any("arena.hpp" in e for e in results["format_errors"]))

    def test_a_failure_of_the_grader_says_it_is_not_the_learners_fault(self):
        (self.root / "student" / "arena.hpp").write_text("// a header\n")
        with mock.patch.object(grading, "grade_header", side_effect=RuntimeError("the build trees are gone")):
            results = prairielearn.run(self.root, "01-arena", slot=SLOT)
        self.assertEqual(self.results_of(self.root), results)
        self.valid(results, "the grader failed")
        self.assertIs(results["gradable"], False, "the grader's failure must cost the learner no attempt")
        self.assertIn("not a fault of your submission", results["message"])
        self.assertIn("the build trees are gone", results["output"])

    def test_an_interrupted_grader_writes_its_results_and_stops(self):
        (self.root / "student" / "arena.hpp").write_text("// a header\n")
        with mock.patch.object(grading, "grade_header", side_effect=KeyboardInterrupt), \
                self.assertRaises(KeyboardInterrupt):
            prairielearn.run(self.root, "01-arena", slot=SLOT)
        results = self.results_of(self.root)
        self.valid(results, "an interrupted grader")
        self.assertIs(results["gradable"], False)

    def test_the_entry_point_writes_results_even_when_python_cannot_run(self):
        fake = self.root / "bin"
        fake.mkdir()
        (fake / "python3").write_text("#!/bin/sh\nexit 3\n")
        (fake / "python3").chmod(0o755)
        env = environment(self.root, PATH=f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
        done = subprocess.run([str(ENTRY), "01-arena"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = self.results_of(self.root)
        self.valid(results, "python3 failed")
        self.assertIs(results["gradable"], False)
        self.assertIn("not a fault of your submission", results["message"])
        self.assertIn("status 3", results["output"])

    def test_the_schema_refuses_what_prairielearn_could_not_show(self):
        good = {"gradable": True, "score": 0.5, "message": "m", "output": "o",
                "tests": [{"name": "Stage 1: basics", "description": "d", "points": 1, "max_points": 2,
                           "message": "m", "output": "o"}]}
        self.assertEqual(formats.json_errors(good, SCHEMA), [])
        broken = {
            "no tests": {k: v for k, v in good.items() if k != "tests"},
            "a negative score": dict(good, score=-0.5),
            "a score as text": dict(good, score="1"),
            "a test without max_points": dict(good, tests=[{k: v for k, v in good["tests"][0].items()
                                                            if k != "max_points"}]),
            "a test named after no stage": dict(good, tests=[dict(good["tests"][0], name="Test 1")]),
            "a field the grader never writes": dict(good, points=3),
        }
        for what, results in broken.items():
            self.assertNotEqual(formats.json_errors(results, SCHEMA), [], f"the schema must refuse {what}")

    def test_several_exercises_score_together_and_a_huge_report_stays_under_1_mb(self):
        catalog = cat.load()
        first, second = catalog.exercises[:2]
        missing = grading.ungraded(first, grading.Unjudged(grading.GradeStatus.NOT_SUBMITTED,
                                                           f"no file named {first.header} was handed in"))
        judged = grading.ungraded(second, grading.Unjudged(grading.GradeStatus.NOT_SUBMITTED, ""))
        judged.status, judged.message = grading.GradeStatus.GRADED, "stages 1 of 2 pass"
        judged.stages[0].earned, judged.stages[0].passed = judged.stages[0].points, True
        judged.score = judged.stages[0].points
        judged.report = "flood\n" * 1_000_000
        for stage in judged.stages:
            stage.report = "x" * 3_000_000
        results = prairielearn.results([missing, judged])
        prairielearn._write_results(self.root, results)
        written = self.results_of(self.root)
        self.valid(written, "two exercises")
        self.assertIs(written["gradable"], True, "one header handed in is enough to grade")
        self.assertAlmostEqual(written["score"], judged.score / (missing.max_score + judged.max_score))
        self.assertEqual(len(written["tests"]), len(first.stages) + len(second.stages), "one test per stage of each")
        self.assertTrue(all(t["name"].startswith((first.name, second.name)) for t in written["tests"]),
                        "with several exercises a test's name says which")
        self.assertIn(f"no file named {first.header}", written["tests"][0]["message"])
        self.assertIn("characters left out", written["tests"][-1]["output"], "a huge output is cut, head and tail")

    def test_an_unknown_exercise_is_the_graders_failure_not_the_learners(self):
        done = subprocess.run([str(ENTRY), "99-nothing"], capture_output=True, text=True, env=environment(self.root),
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        results = self.results_of(self.root)
        self.valid(results, "an unknown exercise")
        self.assertIs(results["gradable"], False)
        self.assertIn("99-nothing", results["output"], "the output names what the question's entry point asked")


@unittest.skipUnless(shutil.which("clang++") and shutil.which("cmake") and shutil.which("ninja"),
                     "clang++, cmake and ninja are needed to grade")
class Grading(ResultsChecks, unittest.TestCase):
    """The entry point on exercise 01, as PrairieLearn runs it, in a temporary grading root."""

    @classmethod
    def setUpClass(cls):
        cls.catalog = cat.load()
        cls.exercise = cls.catalog.resolve("01")
        cls.reference = cls.exercise.solution_file.read_text(encoding="utf-8")
        diff = (ROOT / "judge" / "mistakes" / "01-arena" / "reset-does-not-poison.diff").read_text(encoding="utf-8")
        cls.stage4_mistake = mistakes.apply(cls.reference, diff)

    def grade(self, header: str | None, *argv: str, **env: str) -> dict:
        with tempfile.TemporaryDirectory(prefix="alloclab-pl-") as tmp:
            root = Path(tmp)
            os.chmod(root, 0o755)   # as PrairieLearn's /grade: others may look in, not write
            (root / "student").mkdir()
            if header is not None:
                (root / "student" / "arena.hpp").write_text(header, encoding="utf-8")
            done = subprocess.run([str(ENTRY), *argv], capture_output=True, text=True,
                                  env=environment(root, **env), timeout=900)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertNotIn("Traceback", done.stderr)
            results = self.results_of(root)
            self.left_in_results = sorted(p.name for p in (root / "results").iterdir())
        self.valid(results, argv[0] if argv else "every exercise")
        # A header handed in alone has no tests of its own: the last test, which grades them, is 0
        # of the exercise's test_points, and the score counts them. The rest is the stages'.
        if results["tests"] and results["tests"][-1]["name"] == "Your tests":
            yours = results["tests"].pop()
            self.assertEqual((yours["points"], yours["max_points"]), (0, self.exercise.test_points))
            self.assertIn("no my_tests.cpp was handed in", yours["message"])
            stages = sum(self.exercise.stage_points())
            results["score"] *= (stages + self.exercise.test_points) / stages   # the stages' share of their points
        return results

    def test_the_reference_scores_full_marks(self):
        results = self.grade(self.reference)   # no argument: every exercise handed in, here 01 alone
        self.assertIs(results["gradable"], True)
        self.assertAlmostEqual(results["score"], 1, places=5, msg=results["message"])
        self.assertEqual([t["name"] for t in results["tests"]],
                         [f"Stage {s.number}: {s.title}" for s in self.exercise.stages], "one test per stage")
        self.assertEqual([t["points"] for t in results["tests"]], list(self.exercise.stage_points()))
        self.assertIn("passes every stage", results["message"])

    def test_a_header_failing_a_later_stage_scores_the_stages_before_it(self):
        results = self.grade(self.stage4_mistake, "01-arena")
        self.assertIs(results["gradable"], True)
        points = self.exercise.stage_points()
        self.assertAlmostEqual(results["score"], sum(points[:3]) / sum(points), msg=results["message"])
        last = results["tests"][3]
        self.assertEqual(last["points"], 0, "stage 4 fails: its points are not earned")
        self.assertIn("ArenaAsan.ResetPoisonsWhatItReclaims", last["message"], "the first failing test is named")
        self.assertIn("reset() must poison", last["output"], "the test's own message reaches the learner")

    def test_a_header_that_does_not_compile_scores_0_with_the_first_compiler_error(self):
        lines = self.reference.splitlines()
        broken_at = next(i for i, line in enumerate(lines) if "void reset() noexcept {" in line)
        lines[broken_at] = lines[broken_at].replace("{", "{ this is not C++;")
        results = self.grade("\n".join(lines) + "\n", "01-arena")
        self.assertIs(results["gradable"], True, "a compile error is the learner's: graded 0, an attempt spent")
        self.assertEqual(results["score"], 0)
        self.assertRegex(results["message"], rf"does not compile: arena\.hpp:{broken_at + 1}:\d+: error:")
        self.assertIn("this is not C++", results["output"], "the compiler's quoted line is shown")
        for test in results["tests"]:
            self.assertEqual(test["points"], 0)
            self.assertIn(f"arena.hpp:{broken_at + 1}", test["output"], f"{test['name']} shows the error")

    def test_warming_grades_the_reference_as_the_image_build_does(self):
        done = subprocess.run([str(ENTRY), "--warm", "01-arena"], capture_output=True, text=True,
                              env=environment(Path(tempfile.gettempdir()) / "unused"), timeout=900)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("01-arena: the reference scores 1", done.stdout)

    def check_forger_lost(self, results: dict) -> None:
        self.assertNotIn("forged", results["message"], "the header's results.json must be replaced by the judge's")
        self.assertIs(results["gradable"], True)
        points = self.exercise.stage_points()
        self.assertAlmostEqual(results["score"], sum(points[:3]) / sum(points),
                               msg="the judge's score, whatever the header wrote or printed")
        self.assertIn("bytes to standard output", results["tests"][3]["output"], "the flood is named, not kept")

    def test_a_hostile_header_cannot_forge_the_results(self):
        results = self.grade(self.stage4_mistake + FORGER, "01-arena")
        self.check_forger_lost(results)
        self.assertIn("forged-proof", self.left_in_results,
                      "run as the judge's own user, the forger could write in results/; still the results are the judge's")

    @unittest.skipUnless(os.geteuid() == 0, "ALLOCLAB_RUN_AS is honoured when the judge is root, as in the grading image")
    def test_run_as_an_unprivileged_user_the_learners_code_cannot_write_the_results(self):
        try:
            pwd.getpwnam(UNPRIVILEGED)
        except KeyError:
            self.skipTest(f"there is no user {UNPRIVILEGED} to run the learner's code as")
        if not others_can_read(self.exercise.tests_dir):
            self.skipTest(f"{UNPRIVILEGED} cannot read the kit's tests in this checkout, as it can in the image")
        results = self.grade(self.stage4_mistake + FORGER, "01-arena", ALLOCLAB_RUN_AS=UNPRIVILEGED,
                             ALLOCLAB_SLOT=SLOT + "-run-as")
        self.check_forger_lost(results)
        self.assertEqual(self.left_in_results, ["results.json"],
                         "the learner's code, run as another user, must not be able to write in results/")


if __name__ == "__main__":
    unittest.main()
