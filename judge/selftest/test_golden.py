"""The parsers against what real compilers print: g++ 12, clang++ 14 and clang++ 19 (the files
in golden/, made by golden/capture.py). Each case must come out as one line that names the
learner's header and the line at fault, the same with every compiler."""
from __future__ import annotations

import unittest
from pathlib import Path

from lab import build, sanitizers

GOLDEN = Path(__file__).resolve().parent / "golden"
COMPILERS = ("g++-12", "clang++-14", "clang++-19")  # the folders of golden/
HEADER = "/alloclab/arena.hpp"


def fixture(compiler: str, case: str) -> str:
    return (GOLDEN / compiler / f"{case}.txt").read_text(encoding="utf-8")


class Golden(unittest.TestCase):
    def test_every_fixture_is_there(self):
        for compiler in COMPILERS:
            for case in ("compile-error", "warning", "duplicate-definition", "asan", "ubsan", "tsan"):
                self.assertTrue((GOLDEN / compiler / f"{case}.txt").is_file(), f"{compiler}/{case}.txt")

    def test_a_compile_error_in_the_header(self):
        for compiler in COMPILERS:
            result = build.BuildResult(False, 0.0, build.parse_diagnostics(fixture(compiler, "compile-error")))
            error = result.first_error(Path(HEADER))
            self.assertIsNotNone(error)
            self.assertEqual((error.file, error.line, error.severity), (HEADER, 3, "error"))
            self.assertIn("undeclared_name", error.message)
            self.assertTrue(any("undeclared_name" in line for line in error.context), error.context)

    def test_a_warning(self):
        for compiler in COMPILERS:
            found = build.parse_diagnostics(fixture(compiler, "warning"))
            self.assertEqual([(d.file, d.line, d.severity) for d in found], [(HEADER, 2, "warning")])
            self.assertIn("unused parameter", found[0].message)

    def test_a_function_defined_in_two_files(self):
        for compiler in COMPILERS:
            log = fixture(compiler, "duplicate-definition")
            self.assertEqual([d for d in build.parse_diagnostics(log) if d.severity == "error"], [],
                             "a link error is not a compile error in a file")
            problem = build._link_problem(log)
            self.assertIn("answer()", problem)
            self.assertIn("defined more than once", problem)
            self.assertIn("inline", problem)

    def check_finding(self, compiler: str, case: str, tool: str, kind: str, line: int, function: str):
        finding = sanitizers.summarize(fixture(compiler, case), HEADER)
        where = f"{compiler}/{case}.txt"
        self.assertIsNotNone(finding, f"{where}: no report found")
        self.assertEqual((finding.tool, finding.kind), (tool, kind), where)
        self.assertEqual(finding.location, f"{HEADER}:{line}", where)
        self.assertEqual(finding.function, function, where)
        self.assertNotIn("\n", finding.line())

    def test_an_address_sanitizer_report(self):
        for compiler in COMPILERS:
            self.check_finding(compiler, "asan", "AddressSanitizer", "heap-buffer-overflow", 3, "read_past")
            self.assertEqual(sanitizers.summarize(fixture(compiler, "asan"), HEADER).access, "READ of size 4")

    def test_an_undefined_behaviour_report(self):
        for compiler in COMPILERS:
            self.check_finding(compiler, "ubsan", "UndefinedBehaviorSanitizer",
                               "signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'", 4, "grow")

    def test_a_thread_sanitizer_report(self):
        for compiler in COMPILERS:
            self.check_finding(compiler, "tsan", "ThreadSanitizer", "data race", 5, "bump")


if __name__ == "__main__":
    unittest.main()


class AnyCompiler(unittest.TestCase):
    def test_a_compiler_on_path_is_taken_by_its_name(self):
        import shutil
        if not all(shutil.which(t) for t in ("clang++-19", "cmake", "ninja")):
            self.skipTest("clang++-19 not installed")
        self.assertEqual(build.compilers_for("clang++-19"), ("clang++-19",))
        self.assertEqual(build.program("clang++-19"), "clang++-19")
        self.assertEqual(build.program("clang"), "clang++")
        self.assertIn("clang++-19", build.newer_clangs())
        self.assertEqual(build.tree_dir("clang++-19", "asan", build.Impl("solutions")).name, "clang++-19-asan-solutions")

    def test_a_compiler_that_is_not_there_is_named(self):
        with self.assertRaises(build.MissingTool) as caught:
            build.compilers_for("clang++-404")
        self.assertIn("clang++-404", str(caught.exception))
