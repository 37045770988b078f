"""`examine` on hostile test files: a file that defines main, exits 0, redefines the test macros,
loops forever, floods its output or never compiles is told so in one plain verdict, scores
nothing, and the judge shows no traceback. Each is judged as a learner runs it, through
judge.py, against exercise 01."""
from __future__ import annotations

import json
import shutil
import tempfile
import unittest
from pathlib import Path

from lab.model import catalog as cat
from selftest.test_grade import no_traceback, run_judge

HEAD = '#include "arena.hpp"\n#include <gtest/gtest.h>\n#include <cstdio>\n#include <cstdlib>\n'
VALID = 'TEST(Mine, UsedCounts) { alloclab::Arena a(4096); (void)a.allocate(10, 1); EXPECT_EQ(a.used(), 10u); }\n'


class HostileTestFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not all(shutil.which(tool) for tool in ("clang++", "cmake", "ninja")):
            raise unittest.SkipTest("clang++, cmake and ninja are needed")
        cls.tmp = Path(tempfile.mkdtemp(prefix="alloclab-examine-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def examine(self, name: str, body: str) -> tuple[dict, str]:
        path = self.tmp / f"{name}.cpp"
        path.write_text(HEAD + body, encoding="utf-8")
        proc = run_judge("examine", "1", "--source", str(path), "--json")
        no_traceback(self, proc)
        self.assertEqual(proc.returncode, 1, f"{name}: not valid, exit status 1\n{proc.stdout}{proc.stderr}")
        verdict = json.loads(proc.stdout)
        self.assertEqual((verdict["valid"], verdict["chaffs_caught"]), (False, 0), f"{name} scores nothing")
        said = verdict["problem"] or "\n".join(m for i in verdict["invalid_tests"] for m in i["messages"])
        return verdict, said

    def test_a_file_that_defines_main(self):
        _, said = self.examine("main", VALID + "int main() { return 0; }\n")
        self.assertIn("defines main", said)

    def test_a_file_that_exits_0(self):
        _, said = self.examine("exits", 'TEST(Mine, Leaves) { std::exit(0); }\n' + VALID)
        self.assertIn("ended without GoogleTest's report", said)

    def test_a_file_that_redefines_the_test_macros(self):
        _, said = self.examine("macros", "#undef EXPECT_EQ\n#define EXPECT_EQ(a, b) (void)0\n" + VALID)
        self.assertIn("GoogleTest's macro EXPECT_EQ", said)

    def test_a_file_that_never_ends(self):
        verdict, said = self.examine("loops", 'TEST(Mine, Spins) { volatile bool forever = true; while (forever) {} }\n')
        self.assertIn("did not end within", said)
        self.assertEqual(verdict["invalid_tests"][0]["test"], "Mine.Spins", "the test that was running is named")

    def test_a_file_that_floods_its_output(self):
        _, said = self.examine("floods", 'TEST(Mine, Floods) { for (int i = 0; i < 200000; ++i) '
                                         'std::printf("flood %d\\n", i); }\n')
        self.assertIn("more than the", said)

    def test_a_file_that_never_compiles(self):
        verdict, said = self.examine("broken", "TEST(Mine, Broken) { this is not C++; }\n")
        self.assertRegex(said, r"broken\.cpp:\d+:\d+: ", "the first error, at the learner's file and line")
        self.assertEqual(verdict["parts"], [])

    def test_bad_usage_is_exit_status_2(self):
        proc = run_judge("examine", "1", "--source", str(self.tmp / "missing.cpp"))
        no_traceback(self, proc)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no such file", proc.stderr)

    def test_every_exercise_has_a_test_file_to_start_from_and_wheats(self):
        from lab.model.variants import wheats
        for ex in cat.load().exercises:
            self.assertTrue((ex.exercise_file.parent / "my_tests.cpp").is_file(), ex.name)
            self.assertGreaterEqual(len(wheats(ex)), 2, f"{ex.name}: two correct implementations besides the reference")
            self.assertTrue(all(w.description and w.description_zh for w in wheats(ex)),
                            f"{ex.name}: every wheat says how it differs, in English and in Chinese")


if __name__ == "__main__":
    unittest.main()
