"""Which tests exist is what GoogleTest counts: a TEST_P counts once per parameter, a TYPED_TEST
once per type, a TEST inside `#if 0` not at all, and each is run by the stage whose suite it
belongs to. The sources' text is read for it only where it tells the same (plain tests, outside
any `#if`), which check proves against every reference build."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from lab.core import listing
from lab.model.catalog import ROOT

STAGE_FILE = r"""
#include <gtest/gtest.h>

TEST(ArenaBasics, Plain) {}

#if 0
TEST(ArenaBasics, DisabledByThePreprocessor) {}
#endif

class ArenaBasicsP : public ::testing::TestWithParam<int> {};
TEST_P(ArenaBasicsP, EverySize) { EXPECT_GE(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(Sizes, ArenaBasicsP, ::testing::Values(0, 1, 8));

template <class T> class ArenaTyped : public ::testing::Test {};
using Types = ::testing::Types<int, double>;
TYPED_TEST_SUITE(ArenaTyped, Types);
TYPED_TEST(ArenaTyped, EveryType) { EXPECT_TRUE(true); }

TEST(Other, NotThisStage) {}
"""

LISTED = """ArenaBasics.
  Plain
Sizes/ArenaBasicsP.
  EverySize/0  # GetParam() = 0
  EverySize/1  # GetParam() = 1
ArenaTyped/0.  # TypeParam = int
  EveryType
"""


class FromText(unittest.TestCase):
    """The text tells the list only where GoogleTest would list exactly what it names."""

    def listed(self, files: dict[str, str], program: str = "") -> list[str] | None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / program if program else Path(tmp)
            folder.mkdir(exist_ok=True)
            for name, text in files.items():
                (folder / name).write_text(text)
            return listing.from_text(SimpleNamespace(tests_dir=Path(tmp)), program)

    def test_plain_tests_in_the_order_of_the_files_and_of_each_file(self):
        files = {"stage2_b.cpp": "TEST(B, First) {}\nALLOCLAB_MODEL_TEST(B, Model, 1, {}, [] {})\n",
                 "stage1_a.cpp": "#ifdef ALLOCLAB_TEST_ASAN\n#include <x>\n#endif\n  TEST_F(A, Fixture) {}\n"
                                 "/* TEST(A, Commented) {} */\n// TEST(A, Commented2) {}\nTEST(A, Last) {}\n",
                 "notes.txt": "TEST(N, NotAFile) {}\n"}
        self.assertEqual(self.listed(files), ["A.Fixture", "A.Last", "B.First", "B.Model"])

    def test_a_program_reads_its_own_folder(self):
        self.assertEqual(self.listed({"stage4_engine.cpp": "TEST(Engine, Serves) {}\n"}, "engine"),
                         ["Engine.Serves"])

    def test_the_text_cannot_tell_what_a_build_may_leave_out_or_expand(self):
        for text in ("#if 0\nTEST(A, Gone) {}\n#endif\n", "#ifndef X\n  TEST(A, Maybe) {}\n#endif\n",
                     "TEST_P(A, Each) {}\n", "TYPED_TEST(A, Each) {}\n",
                     "INSTANTIATE_TEST_SUITE_P(S, A, ::testing::Values(1));\n"):
            with self.subTest(text=text):
                self.assertIsNone(self.listed({"stage1_a.cpp": "TEST(A, Plain) {}\n" + text}))

    def test_a_learners_build_takes_the_text_and_a_reference_lists_itself(self):
        from unittest import mock

        from lab.core import build
        from lab.model import catalog as cat
        exercise, limits = cat.load().resolve("1"), cat.load().limits
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(listing, "from_text", return_value=["ArenaBasics.Told"]):
            tree = Path(tmp)
            source = build.Impl("source", Path("/x/arena.hpp"))
            self.assertEqual(listing.tests_of(tree, exercise, source, limits), ["ArenaBasics.Told"])
            self.assertEqual(listing.to_build(tree, exercise, source), "", "no list_ twin to build")
            (tree / f"test_{exercise.name}").write_text("#!/bin/sh\nprintf 'ArenaBasics.\\n  Listed\\n'\n")
            os.chmod(tree / f"test_{exercise.name}", 0o755)
            self.assertEqual(listing.tests_of(tree, exercise, build.Impl("solutions"), limits), ["ArenaBasics.Listed"])

    def test_every_program_of_the_kit_is_told_by_its_text(self):
        # check proves the text right against every reference build; this says the judge uses it.
        from lab.model import catalog
        for ex in catalog.load().exercises:
            for program in dict.fromkeys(s.program for s in ex.stages):
                with self.subTest(exercise=ex.name, program=program):
                    self.assertTrue(listing.from_text(ex, program))


class Parse(unittest.TestCase):
    def test_parameters_and_types_are_names_of_their_own(self):
        self.assertEqual(listing.parse(LISTED), ["ArenaBasics.Plain", "Sizes/ArenaBasicsP.EverySize/0",
                                                 "Sizes/ArenaBasicsP.EverySize/1", "ArenaTyped/0.EveryType"])

    def test_a_test_belongs_to_its_suite_only(self):
        self.assertTrue(listing.belongs("Sizes/ArenaBasicsP.EverySize/0", "ArenaBasicsP"))
        self.assertTrue(listing.belongs("ArenaTyped/1.EveryType", "ArenaTyped"))
        self.assertTrue(listing.belongs("Prefix/ArenaTyped/1.EveryType", "ArenaTyped"))
        self.assertFalse(listing.belongs("ArenaBasicsP.X", "ArenaBasics"))
        self.assertFalse(listing.belongs("ArenaBasics/0.X", "Arena"))


class RealBinary(unittest.TestCase):
    """A stage file with a TEST_P, a TYPED_TEST and a TEST inside `#if 0`, compiled for real."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("clang++") or not Path("/usr/include/gtest/gtest.h").is_file():
            raise unittest.SkipTest("clang++ or GoogleTest not installed")
        cls.tmp = tempfile.TemporaryDirectory()
        src, cls.binary = Path(cls.tmp.name) / "stage.cpp", Path(cls.tmp.name) / "stage"
        src.write_text(STAGE_FILE)
        subprocess.run(["clang++", "-std=c++20", str(src), "-o", str(cls.binary), "-lgtest", "-lgtest_main",
                        "-pthread"], check=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_binary(self, *args: str) -> str:
        return subprocess.run([str(self.binary), *args], capture_output=True, text=True, timeout=60).stdout

    def test_every_instance_is_counted_and_nothing_disabled(self):
        names = listing.parse(self.run_binary("--gtest_list_tests"))
        self.assertEqual(sorted(names), sorted([
            "ArenaBasics.Plain", "Sizes/ArenaBasicsP.EverySize/0", "Sizes/ArenaBasicsP.EverySize/1",
            "Sizes/ArenaBasicsP.EverySize/2", "ArenaTyped/0.EveryType", "ArenaTyped/1.EveryType",
            "Other.NotThisStage"]))
        self.assertNotIn("DisabledByThePreprocessor", " ".join(names))

    def test_the_stage_filter_runs_exactly_the_stage_tests(self):
        names = listing.parse(self.run_binary("--gtest_list_tests"))
        for suite in ("ArenaBasics", "ArenaBasicsP", "ArenaTyped"):
            ran = listing.parse(self.run_binary("--gtest_list_tests", f"--gtest_filter={listing.stage_filter(suite)}"))
            self.assertEqual(ran, [n for n in names if listing.belongs(n, suite)], suite)
            self.assertTrue(ran, suite)


if __name__ == "__main__":
    unittest.main()


class TheListIsTrusted(unittest.TestCase):
    """The judged binary has the learner's code in it, whose static initializers could print a
    list without the test that fails: the list is read from the build against the reference."""

    def test_the_judged_binary_is_never_asked(self):
        from unittest import mock

        from lab.core import build
        from lab.model import catalog as cat
        exercise = cat.load().resolve("1")
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp)
            for name, listed in ((f"test_{exercise.name}", "ArenaBasics.\n  OnlyThePassingOne\n"),
                                 (f"list_{exercise.name}", "ArenaBasics.\n  OnlyThePassingOne\n  TheFailingOne\n")):
                (tree / name).write_text(f"#!/bin/sh\nprintf '{listed}'\n")
                os.chmod(tree / name, 0o755)
            built = build.BuildResult(True, 0.0, [])
            limits = cat.load().limits
            # Tests the text cannot tell (a TEST_P, say), so that the list must come from a build.
            with mock.patch.object(listing, "from_text", return_value=None):
                with mock.patch.object(listing.build, "build", return_value=built) as rebuilt:
                    names = listing.tests_of(tree, exercise, build.Impl("source", Path("/x/arena.hpp")), limits)
                rebuilt.assert_called_once_with(tree, f"list_{exercise.name}", limits.build_timeout_seconds)
                self.assertEqual(names, ["ArenaBasics.OnlyThePassingOne", "ArenaBasics.TheFailingOne"])
                # Listed once, the list is kept until the test files change.
                (tree / f"list_{exercise.name}").write_text("#!/bin/sh\nexit 1\n")
                self.assertEqual(listing.tests_of(tree, exercise, build.Impl("exercises"), limits), names)


class OneListPerCompilerAndInstrumentation(unittest.TestCase):
    """`check` compiles the same test files against the same reference in many trees; one of them
    lists the tests for all the trees of its compiler and instrumentation, and for no other."""

    def test_a_list_is_shared_by_trees_of_one_compiler_and_sanitizer(self):
        from unittest import mock

        from lab.core import build
        from lab.model import catalog as cat
        exercise, limits = cat.load().resolve("1"), cat.load().limits
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)

            def tree(name: str, sanitizer: str, listed: str, only: str = "", program: str = "list") -> Path:
                path = root / name
                path.mkdir()
                (path / "CMakeCache.txt").write_text(
                    f"CMAKE_CXX_COMPILER:FILEPATH=/usr/bin/clang++\nALLOCLAB_SANITIZER:STRING={sanitizer}\n"
                    f"ALLOCLAB_ONLY_STAGES:STRING={only}\n")
                (path / f"{program}_{exercise.name}").write_text(f"#!/bin/sh\nprintf '{listed}'\n")
                os.chmod(path / f"{program}_{exercise.name}", 0o755)
                return path

            first = tree("first", "asan", "ArenaBasics.\n  A\n  B\n")
            second = tree("second", "asan", "ArenaBasics.\n  Other\n")
            third = tree("third", "tsan", "ArenaBasics.\n  Other\n")
            built = build.BuildResult(True, 0.0, [])
            source = build.Impl("source", Path("/x/arena.hpp"))
            with mock.patch.object(listing.build, "BUILD_ROOT", root), \
                    mock.patch.object(listing, "from_text", return_value=None), \
                    mock.patch.object(listing.build, "build", return_value=built) as rebuilt:
                self.assertEqual(listing.tests_of(first, exercise, source, limits), ["ArenaBasics.A", "ArenaBasics.B"])
                self.assertEqual(listing.tests_of(second, exercise, source, limits), ["ArenaBasics.A", "ArenaBasics.B"],
                                 "a tree of the same compiler and sanitizer uses the list already made")
                self.assertEqual(rebuilt.call_count, 1, "only the first tree built its list_ program")
                self.assertEqual(listing.tests_of(third, exercise, source, limits), ["ArenaBasics.Other"],
                                 "another sanitizer lists for itself: tests may depend on it")

                # A reference built with stage 4 alone lists stage 4 for the trees built so, not for all.
                partial = tree("partial", "release", "ArenaAsan.\n  Four\n", only="4", program="test")
                self.assertEqual(listing.tests_of(partial, exercise, build.Impl("solutions"), limits),
                                 ["ArenaAsan.Four"])
                alike = tree("alike", "release", "ArenaBasics.\n  Unused\n", only="4")
                self.assertEqual(listing.tests_of(alike, exercise, source, limits), ["ArenaAsan.Four"])
                self.assertEqual(listing.tests_of(tree("whole", "release", "ArenaBasics.\n  All\n"), exercise, source,
                                                  limits), ["ArenaBasics.All"],
                                 "a tree of every stage takes only a list of every stage")
