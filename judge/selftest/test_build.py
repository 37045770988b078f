"""Compiler output becomes diagnostics, and the learner's first error is the one shown."""
import unittest
from pathlib import Path

from lab.core import build

LOG = """[1/2] Building CXX object CMakeFiles/test_01-arena.dir/Unity/unity_0_cxx.cxx.o
FAILED: CMakeFiles/test_01-arena.dir/Unity/unity_0_cxx.cxx.o
In file included from /kit/judge/tests/01-arena/stage1_basics.cpp:2:
/kit/judge/tests/01-arena/stage1_basics.cpp:10:3: error: no member named 'nope' in 'alloclab::Arena'
/learner/arena.hpp:12:5: warning: unused variable 'x' [-Wunused-variable]
    int x = 0;
        ^
/learner/arena.hpp:20:10: error: use of undeclared identifier 'buffer'
  return buffer;
         ^
1 warning and 2 errors generated.
ninja: build stopped: subcommand failed.
"""


class DiagnosticsTest(unittest.TestCase):
    def test_errors_and_warnings_with_their_context(self):
        diags = build.parse_diagnostics(LOG)
        self.assertEqual([d.severity for d in diags], ["error", "warning", "error"])
        self.assertEqual(diags[2].message, "use of undeclared identifier 'buffer'")
        self.assertEqual(diags[2].context, ["  return buffer;", "         ^"])

    def test_the_first_error_in_the_learners_file_comes_first(self):
        result = build.BuildResult(False, 1.0, build.parse_diagnostics(LOG))
        self.assertEqual(result.first_error(Path("/learner/arena.hpp")).line, 20)
        self.assertEqual(result.first_error(None).line, 10)
        self.assertEqual(len(result.warnings_in(Path("/learner/arena.hpp"))), 1)

    def test_missing_definitions_are_explained(self):
        text = build._link_problem("x.cpp:(.text+0x1): undefined reference to `alloclab::Arena::reset()'")
        self.assertIn("alloclab::Arena::reset()", text)

    def test_duplicate_definitions_are_explained(self):
        for log in ("ld.lld: error: duplicate symbol: alloclab::helper()\n",
                    "x.o: multiple definition of `alloclab::helper()'; y.o: first defined here\n"):
            text = build._link_problem(log)
            self.assertIn("alloclab::helper()", text)
            self.assertIn("inline", text)

    def test_trees_are_named_by_compiler_sanitizer_and_implementation(self):
        self.assertEqual(build.tree_dir("clang", "asan", build.Impl("exercises")).name, "clang-asan")
        self.assertEqual(build.tree_dir("gcc", "tsan", build.Impl("solutions")).name, "gcc-tsan-solutions")
        self.assertEqual(build.tree_dir("clang", "asan", build.Impl("source", Path("/x")), "check1").name,
                         "clang-asan-source-check1")


if __name__ == "__main__":
    unittest.main()
