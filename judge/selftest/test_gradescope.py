"""The Gradescope autograder (judge/lab/instructor/gradescope.py, judge/autograders/gradescope/):
the zip's layout, and run_autograder run for real in a local root (ALLOCLAB_GRADESCOPE_ROOT) on
exercise 01: the reference (full marks), a header that fails a later stage (partial), one that
does not compile (0, its first error shown), a hostile one (its flood and its forged
results.json change nothing), and graders that fail (a results.json still says so). Every
results.json is checked against judge/schemas/gradescope-results.schema.json.

Every case grades in the same root, so the header is always at the same path and the build
trees of grading.py's slots stay warm from one case to the next: after the first build, each
case costs its own header's compile, its tests and, when it passes, two brief benchmark runs."""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import unittest
import zipfile
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

from lab.instructor import gradescope, gradescope_results, grading, platforms
from lab.model import catalog as cat
from lab.model.catalog import ROOT

from . import formats

SCHEMA = json.loads((formats.SCHEMAS / "gradescope-results.schema.json").read_text(encoding="utf-8"))
RUN_AUTOGRADER = ROOT / "judge" / "autograders" / "gradescope" / "run_autograder"
REFERENCE = (ROOT / "solutions" / "01-arena" / "arena.hpp").read_text(encoding="utf-8")


def env(root: Path) -> dict[str, str]:
    return dict(os.environ, ALLOCLAB_GRADESCOPE_ROOT=str(root), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")


def edited(old: str, new: str) -> str:
    """The reference with one exact passage replaced."""
    if REFERENCE.count(old) != 1:
        raise AssertionError(f"the reference no longer holds {old!r} exactly once: update this test")
    return REFERENCE.replace(old, new)


# reset() that also lowers peak(): stages 1 and 2 pass, stage 3 (reuse) fails on
# ArenaReuse.ResetKeepsPeak (judge/mistakes/01-arena/reset-clears-peak.diff).
RESET_CLEARS_PEAK = edited("    used_ = 0;\n  }\n", "    used_ = 0;\n    peak_ = 0;\n  }\n")
# A missing semicolon in used().
DOES_NOT_COMPILE = edited("std::size_t used() const noexcept { return used_; }",
                          "std::size_t used() const noexcept { return used_ }")
# A correct arena whose every program, as it starts, prints 2 MB, writes a results.json of full
# marks times ten, and leaves behind a process in a session of its own that writes it again every
# 0.2 s for a minute. The judge's results must be the ones Gradescope reads: each such process is
# ended when the run that started it ends, and the grader writes its results last.
HOSTILE = """\
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gradescope_hostile {
inline void forge(const char* name, const char* text) {
  const char* root = std::getenv("ALLOCLAB_GRADESCOPE_ROOT");
  if (root == nullptr) return;
  if (std::FILE* f = std::fopen((std::string(root) + name).c_str(), "w")) {
    std::fputs(text, f);
    std::fclose(f);
  }
}
inline const char* const kForged = "{\\"score\\": 1000, \\"output\\": \\"forged\\", \\"tests\\": []}";
inline const bool attacked = [] {
  forge("/results/results.json", kForged);
  forge("/forged", "the header wrote a results.json of its own\\n");
  if (fork() == 0) {
    setsid();
    for (int fd = 0; fd < 1024; ++fd) close(fd);   // holds no pipe of the judge's or of a death test's
    for (int i = 0; i < 300; ++i) {
      usleep(200000);
      forge("/results/results.json", kForged);
      forge("/forged", "again\\n");
    }
    _exit(0);
  }
  for (int i = 0; i < 20000; ++i) std::printf("%0100d\\n", i);
  std::fflush(stdout);
  return true;
}();
}  // namespace gradescope_hostile

""" + REFERENCE


class Zip(unittest.TestCase):
    def test_the_zip_holds_the_entry_points_the_settings_and_the_tracked_kit(self):
        catalog = cat.load()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "gradescope.zip"
            printed = io.StringIO()
            with redirect_stdout(printed):
                self.assertTrue(gradescope.package(argparse.Namespace(exercises="1", out=out), catalog))
            self.assertIn("Update Autograder", printed.getvalue(), "the command says how to upload the zip")
            with zipfile.ZipFile(out) as archive:
                names = archive.namelist()
                for entry in ("setup.sh", "run_autograder"):
                    self.assertIn(entry, names, f"Gradescope looks for {entry} at the zip's root")
                    mode = archive.getinfo(entry).external_attr >> 16
                    self.assertTrue(mode & stat.S_IXUSR, f"{entry} must be executable once unpacked")
                    self.assertEqual(archive.read(entry), (gradescope.PLATFORM / entry).read_bytes())
                self.assertEqual(json.loads(archive.read(gradescope.SETTINGS))["exercises"], ["01-arena"],
                                 "--exercises 1 grades exercise 01 only")
                kit = sorted(n.removeprefix("alloclab/") for n in names if n.startswith("alloclab/"))
                self.assertEqual(kit, platforms.kit_files(), "the kit in the zip is the platforms' one file list")
                for needed in ("judge/judge.py", "CMakeLists.txt", "judge/catalog.toml", "solutions/01-arena/arena.hpp"):
                    self.assertIn(needed, kit)
                self.assertFalse([n for n in kit if n.startswith(("build/", ".git/"))],
                                 "no build tree and no git history in the zip")
                self.assertIn(platforms.NOT_YOUR_FAULT_FILE, names, "run_autograder reads it beside itself")
                self.assertEqual(len(names), len(kit) + 4, "nothing else beside the kit and the four files")

    def test_an_unknown_exercise_is_a_usage_error(self):
        from lab.model.errors import UsageError
        with tempfile.TemporaryDirectory() as tmp, self.assertRaises(UsageError):
            gradescope.package(argparse.Namespace(exercises="99", out=Path(tmp) / "x.zip"), cat.load())


class Autograder(unittest.TestCase):
    """run_autograder in a local root laid out as Gradescope lays out /autograder."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="alloclab-gradescope-")
        os.chmod(cls.tmp.name, 0o755)   # as in /autograder: the unprivileged user reaches the submission
        cls.root = Path(cls.tmp.name) / "autograder"
        (cls.root / "source").mkdir(parents=True)
        (cls.root / "source" / "alloclab").symlink_to(ROOT)
        (cls.root / "source" / gradescope.SETTINGS).write_text(
            json.dumps({"exercises": ["01-arena"], "compilers": ["clang"]}), encoding="utf-8")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def grade(self, header: str | None, files: dict[str, str] | None = None, user: str = "") -> tuple[dict, str]:
        """run_autograder on a submission of arena.hpp (and `files`), the learner's code run as
        `user` when one is named; the results and what it printed."""
        for name in ("submission", "results"):
            shutil.rmtree(self.root / name, ignore_errors=True)
        for name in ("forged", "survived"):
            (self.root / name).unlink(missing_ok=True)
        (self.root / "submission").mkdir()
        if header is not None:
            (self.root / "submission" / "arena.hpp").write_text(header, encoding="utf-8")
        for name, text in (files or {}).items():
            (self.root / "submission" / name).write_text(text, encoding="utf-8")
        environment = dict(env(self.root), ALLOCLAB_GRADESCOPE_USER=user) if user else env(self.root)
        proc = subprocess.run(["bash", str(RUN_AUTOGRADER)], env=environment, capture_output=True, text=True,
                              timeout=900, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        return self.results(), proc.stdout

    def results(self) -> dict:
        path = self.root / "results" / "results.json"
        self.assertTrue(path.is_file(), "run_autograder must always write results.json")
        data = json.loads(path.read_text(encoding="utf-8"))
        self.assertEqual(formats.json_errors(data, SCHEMA), [], "results.json breaks Gradescope's format")
        # A submission of a header alone has no tests of its own: the test that grades them, last,
        # scores 0 and says so. The stages' tests are the rest.
        if data["tests"] and gradescope_results.TESTS_TAG in data["tests"][-1].get("tags", []):
            yours = data["tests"].pop()
            self.assertEqual((yours["number"], yours["score"], yours["max_score"], yours["status"]),
                             ("1.6", 0, 20, "failed"))
            self.assertIn("was handed in beside arena.hpp", yours["output"])
        return data

    def assert_stage_tests(self, data: dict) -> None:
        catalog = cat.load()
        arena = catalog.resolve("1")
        self.assertEqual([t["name"] for t in data["tests"]],
                         [f"01 · The arena · stage {s.number}: {s.title}" for s in arena.stages],
                         "one test per stage of exercise 01, named by exercise and stage")
        self.assertEqual([t["number"] for t in data["tests"]], [f"1.{s.number}" for s in arena.stages])
        self.assertEqual([t["max_score"] for t in data["tests"]], list(arena.stage_points()))
        self.assertAlmostEqual(data["score"], sum(t["score"] for t in data["tests"]),
                               msg="the score is the sum of the tests' scores")
        for test in data["tests"]:
            self.assertEqual(test["status"], "passed" if test["score"] == test["max_score"] else "failed")
            self.assertEqual((test["output_format"], test["visibility"]), ("md", "visible"))
            self.assertLess(len(test["output"]), gradescope_results.OUTPUT_CHARS + 2000,
                            "a test's output stays bounded")

    def test_setup_grades_the_references_in_every_slot_and_requires_full_marks(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            recorded = self.root / "source" / gradescope.SETTINGS
            printed = io.StringIO()
            with redirect_stdout(printed):
                status = gradescope.main(["--references", str(Path(tmp) / "warm"), str(recorded)])
            self.assertEqual(status, 0, printed.getvalue())
            self.assertIn("The references score 100 of 100", printed.getvalue())
            with mock.patch.object(grading, "grade_header", side_effect=lambda catalog, exercise, *rest, **kw:
                                   grading.ungraded(exercise, grading.Unjudged(grading.GradeStatus.NOT_SUBMITTED,
                                                                               "the test took it away"))), \
                    redirect_stdout(io.StringIO()) as refused:
                status = gradescope.main(["--references", str(Path(tmp) / "again"), str(recorded)])
            self.assertEqual(status, 1, "an image whose references do not score full marks is refused")
            self.assertIn("would grade wrongly", refused.getvalue())

    def test_the_reference_scores_full_marks_with_a_leaderboard_figure(self):
        data, printed = self.grade(REFERENCE)
        self.assert_stage_tests(data)
        self.assertEqual(data["score"], 100, data["output"])
        self.assertTrue(all(t["status"] == "passed" for t in data["tests"]))
        self.assertIn("✓ Stage 1", data["tests"][0]["output"], "a test shows the judge's report of its stage")
        if not data["leaderboard"]:   # the machine's load moved the benchmark too much to rank it
            self.assertIn("too much to rank", data["output"], "a passed exercise has its benchmark ratio, or a "
                          "note that says why not")
        else:
            self.assertEqual(len(data["leaderboard"]), 1)
            entry = data["leaderboard"][0]
            self.assertEqual(entry["order"], "asc", "a lower time ratio ranks higher")
            self.assertTrue(0.2 < entry["value"] < 5, f"the reference against itself is near 1, not {entry['value']}")
        self.assertIn("100 points", printed)
        self.assertEqual(data["extra_data"]["alloclab"][0]["flags"], [], "nothing for the staff to read in the reference")
        kit_link = str(self.root / "source" / "alloclab")
        for cache in (ROOT / "build").glob("*/CMakeCache.txt"):
            self.assertNotIn(kit_link, cache.read_text(errors="replace"),
                             f"{cache.parent.name} was configured through the root's link to the kit: it breaks "
                             "once the root is gone")

    def test_a_header_failing_a_later_stage_scores_the_stages_before_it(self):
        data, _ = self.grade(RESET_CLEARS_PEAK)
        self.assert_stage_tests(data)
        self.assertEqual([t["status"] for t in data["tests"]], ["passed", "passed", "failed", "passed", "failed"],
                         "stage 3 (reuse) fails, and the model stage after it: reset() lowers peak()")
        self.assertEqual(data["score"], sum(t["max_score"] for t in data["tests"][:2]) + data["tests"][3]["max_score"])
        self.assertIn("ResetKeepsPeak", data["tests"][2]["output"], "the failing stage names its failing test")
        self.assertEqual(data["leaderboard"], [], "an exercise that did not pass is not on the leaderboard")

    def test_a_header_that_does_not_compile_scores_0_with_its_first_error(self):
        data, _ = self.grade(DOES_NOT_COMPILE)
        self.assert_stage_tests(data)
        self.assertEqual(data["score"], 0)
        line = DOES_NOT_COMPILE.splitlines().index(next(l for l in DOES_NOT_COMPILE.splitlines()
                                                        if "return used_ }" in l)) + 1
        for test in data["tests"]:
            self.assertEqual(test["status"], "failed")
            self.assertIn("does not compile", test["output"])
            self.assertIn(f"arena.hpp:{line}:", test["output"], "the first error names the learner's file and line")
            self.assertIn("error:", test["output"])
        self.assertIn("does not compile", data["output"])

    def test_a_hostile_header_cannot_forge_the_results_nor_outlive_the_grader(self):
        data, printed = self.grade(HOSTILE)
        ended = time.time()
        self.assertTrue((self.root / "forged").exists(), "the hostile header's attack did not even run")
        time.sleep(1.5)   # a forger still alive writes every 0.2 s
        self.assertLess((self.root / "forged").stat().st_mtime, ended,
                        "a process the header started outlived the grader")
        self.assertEqual(self.results(), data, "results.json changed after the grader finished")
        self.assert_stage_tests(data)
        self.assertEqual(data["score"], 100, "the judge's own verdict on a correct arena, not the forged 1000")
        self.assertNotEqual(data["output"], "forged")
        flags = data["extra_data"]["alloclab"][0]["flags"]
        self.assertTrue(flags and "fork" in flags[0], "the staff are told to read a header that forks")
        self.assertIn("For the staff, 01-arena", printed, "and Gradescope's log of the run, the staff's, says so")

    @unittest.skipUnless(os.geteuid() == 0,
                         "only root can run the learner's code as another user, as Gradescope's container does")
    def test_as_an_unprivileged_user_the_learners_code_cannot_write_beside_the_results(self):
        import pwd
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            self.skipTest("there is no user nobody to run the learner's code as")
        closed = [str(folder) for folder in (ROOT, *ROOT.parents) if not folder.stat().st_mode & stat.S_IXOTH]
        if closed:
            self.skipTest(f"another user cannot reach the kit here ({closed[0]} is closed to others)")
        data, _ = self.grade(HOSTILE, user="nobody")
        self.assertFalse((self.root / "forged").exists(),
                         "code run as the unprivileged user wrote into the autograder's root")
        self.assertEqual(stat.S_IMODE((self.root / "results").stat().st_mode), 0o700,
                         "the results folder is the grader's alone")
        self.assert_stage_tests(data)
        self.assertEqual(data["score"], 100, data["output"])

    def test_a_submission_without_the_header_scores_0_and_says_what_was_missing(self):
        data, _ = self.grade(None, {"notes.txt": "I did not finish\n"})
        self.assert_stage_tests(data)
        self.assertEqual(data["score"], 0)
        self.assertIn("arena.hpp", data["tests"][0]["output"], "the output names the file that was not handed in")

    def test_a_missing_submission_folder_is_the_graders_failure(self):
        shutil.rmtree(self.root / "results", ignore_errors=True)
        root = self.root
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "source").mkdir()
            (Path(tmp) / "source" / "alloclab").symlink_to(ROOT)
            proc = subprocess.run(["bash", str(RUN_AUTOGRADER)], env=env(Path(tmp)), capture_output=True, text=True,
                                  timeout=300, stdin=subprocess.DEVNULL)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.root = Path(tmp)
            try:
                data = self.results()
            finally:
                self.root = root
        self.assertEqual((data["score"], data["tests"]), (0, []))
        self.assertIn("not a fault of your submission", data["output"], "the learner is told it is not their fault")
        self.assertIn("submission", data["output"])

    def test_a_crash_inside_the_grader_still_writes_results_that_say_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "submission").mkdir()
            printed = io.StringIO()
            with mock.patch.object(grading, "grade_learner", side_effect=RuntimeError("the disk is full")), \
                    redirect_stdout(printed):
                self.assertEqual(gradescope.run(root), 0)
            data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        self.assertEqual(formats.json_errors(data, SCHEMA), [])
        self.assertEqual(data["score"], 0)
        self.assertIn("RuntimeError: the disk is full", data["output"])
        self.assertIn("not a fault of your submission", data["output"])
        self.assertIn("Traceback", printed.getvalue(), "the staff's log (Gradescope's stdout) shows where it broke")

    def test_an_interrupted_grader_writes_its_results_and_stops(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "submission").mkdir()
            with mock.patch.object(grading, "grade_learner", side_effect=KeyboardInterrupt), \
                    redirect_stdout(io.StringIO()), self.assertRaises(KeyboardInterrupt):
                gradescope.run(root)
            data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        self.assertEqual(formats.json_errors(data, SCHEMA), [])
        self.assertIn("not a fault of your submission", data["output"])

    def test_run_autograder_writes_results_when_the_grader_cannot_even_start(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)   # no kit in source/: setup.sh did not run
            (root / "submission").mkdir()
            proc = subprocess.run(["bash", str(RUN_AUTOGRADER)], env=env(root), capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual(proc.returncode, 0)
            data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        self.assertEqual(formats.json_errors(data, SCHEMA), [])
        self.assertEqual(data["score"], 0)
        self.assertIn("not a fault of your submission", data["output"])


class Format(unittest.TestCase):
    def test_the_schema_refuses_what_gradescope_would_not_read(self):
        good = {"score": 1, "output": "", "tests": [{"name": "a", "number": "1.1", "score": 1, "max_score": 1,
                                                     "status": "passed", "output": "", "visibility": "visible"}],
                "leaderboard": [{"name": "t", "value": 1.0, "order": "asc"}]}
        self.assertEqual(formats.json_errors(good, SCHEMA), [])
        for broken in ({**good, "score": "1"}, {**good, "tests": [{**good["tests"][0], "status": "ok"}]},
                       {**good, "tests": [{**good["tests"][0], "number": 1.1}]},
                       {**good, "leaderboard": [{"name": "t", "value": 1, "order": "up"}]},
                       {**good, "visibility": "public"}, {**good, "grade": 1}):
            self.assertNotEqual(formats.json_errors(broken, SCHEMA), [], broken)

    def test_each_platforms_not_your_fault_can_be_written_into_json_by_its_shell_script(self):
        for platform in ("gradescope", "prairielearn"):
            text = platforms.not_your_fault(platform)
            self.assertIn("not a fault of your submission", text)
            self.assertFalse(set(text) & set('"\\$`\n'), f"{platform}: the shell script puts it in JSON as it is")

    def test_a_code_block_cannot_be_closed_by_the_text_inside_it(self):
        block = gradescope_results.code_block("before\n```\nafter ````` end")
        fence = block.split("text", 1)[0]
        self.assertEqual(fence, "``````", "the fence is longer than any run of backticks inside")
        self.assertTrue(block.endswith("\n" + fence))

    def test_the_grader_judges_as_many_exercises_at_once_as_it_has_cores(self):
        self.assertTrue(1 <= platforms.cores() <= (os.cpu_count() or 1))
        with mock.patch.object(os, "sched_getaffinity", return_value={0, 1, 2, 3, 4, 5, 6, 7}), \
                mock.patch.object(Path, "read_text", side_effect=lambda *a, **k: "50000 100000"):
            self.assertEqual(platforms.cores(), 1, "half a CPU's quota (Gradescope's default) is one job")

    def test_no_test_program_may_outgrow_the_container(self):
        catalog = cat.load()
        with mock.patch.object(platforms, "cores", return_value=2):
            for memory, jobs, test_mb in ((768, 1, 368), (2048, 2, 624), (4096, 2, 1648), (None, 2, None)):
                with mock.patch.object(platforms, "container_memory_mb", return_value=memory):
                    fitted, got_jobs = platforms.fitted(catalog)
                self.assertEqual(got_jobs, jobs, f"jobs in a container of {memory} MB")
                self.assertEqual(fitted.limits.memory_mb, test_mb or catalog.limits.memory_mb,
                                 f"a test program's memory in a container of {memory} MB: what is left once the "
                                 "other jobs' compilers have theirs, or Gradescope kills the whole grader")
        self.assertEqual(catalog.limits.memory_mb, cat.load().limits.memory_mb, "the catalog itself is untouched")

    def test_a_grading_root_is_named_by_its_platform_and_the_former_name_still_works(self):
        for named in ({"ALLOCLAB_GRADESCOPE_ROOT": "/new"}, {"ALLOCLAB_AUTOGRADER_ROOT": "/new"},
                      {"ALLOCLAB_GRADESCOPE_ROOT": "/new", "ALLOCLAB_AUTOGRADER_ROOT": "/old"}):
            with mock.patch.dict(os.environ, named):
                self.assertEqual(gradescope.autograder_root(), Path("/new"), named)
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(gradescope.autograder_root(), Path("/autograder"))

    def test_a_long_report_is_clipped_to_its_head_and_tail(self):
        text = "head\n" + "x" * (3 * gradescope_results.OUTPUT_CHARS) + "\ntail"
        clipped = platforms.clipped(text, gradescope_results.OUTPUT_CHARS)
        self.assertLess(len(clipped), gradescope_results.OUTPUT_CHARS + 100)
        self.assertTrue(clipped.startswith("head") and clipped.endswith("tail"))
        self.assertIn("characters left out", clipped)


if __name__ == "__main__":
    unittest.main()
