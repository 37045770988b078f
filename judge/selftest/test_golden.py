"""The parsers against what real compilers print: g++ 12, clang++ 14 and clang++ 19 (the files
in golden/, made by golden/capture.py). Each case must come out as one line that names the
learner's header and the line at fault, the same with every compiler."""
from __future__ import annotations

import unittest
from pathlib import Path

from lab.core import build, sanitizers

GOLDEN = Path(__file__).resolve().parent / "golden"
COMPILERS = ("g++-12", "clang++-14", "clang++-19")  # the folders of golden/
HEADER = "/alloclab/arena.hpp"
MISMATCHES = ("asan-alloc-dealloc-mismatch", "replaced-alloc-dealloc-mismatch", "replaced-new-delete-type-mismatch")


def fixture(compiler: str, case: str) -> str:
    return (GOLDEN / compiler / f"{case}.txt").read_text(encoding="utf-8")


class Golden(unittest.TestCase):
    def test_every_fixture_is_there(self):
        for compiler in COMPILERS:
            for case in ("compile-error", "warning", "duplicate-definition", "asan", "ubsan", "tsan", "tsan-heap",
                         "asan-use-after-free", "asan-freed-by-learner", *MISMATCHES):
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

    def test_a_race_on_memory_the_learner_allocated_is_not_placed_at_the_allocation(self):
        """The tests race on a block the learner's constructor allocated, in threads a function
        of the learner's file started: the line named is the racing access's, never a line of the
        allocation's or the threads' stacks, and the allocation is named apart, as such."""
        for compiler in COMPILERS:
            where = f"{compiler}/tsan-heap.txt"
            finding = sanitizers.summarize(fixture(compiler, "tsan-heap"), HEADER)
            self.assertEqual(finding.location, "/alloclab/main.cpp:5", where)
            self.assertTrue(finding.function.endswith("operator()"), f"{where}: {finding.function}")
            self.assertTrue(finding.other.startswith("write at /alloclab/main.cpp:4 in "), f"{where}: {finding.other}")
            self.assertEqual(finding.memory, f"the memory was allocated at {HEADER}:5 in Ring::Ring", where)
            self.assertEqual(finding.advice, sanitizers.UNORDERED_RACE, where)
            line = finding.line()
            self.assertNotIn(f"{HEADER}:10", line, f"{where}: the threads' creation is not the race")
            self.assertLess(line.index("racing with"), line.index("the memory was allocated"), where)

    def test_a_use_after_free_in_the_learners_code_is_placed_at_the_access(self):
        """The free and the allocation are in the learner's file too, on earlier lines: the
        access is the place."""
        for compiler in COMPILERS:
            self.check_finding(compiler, "asan-use-after-free", "AddressSanitizer", "heap-use-after-free", 5, "Box::peek")
            finding = sanitizers.summarize(fixture(compiler, "asan-use-after-free"), HEADER)
            self.assertEqual(finding.memory, "", "the access in the learner's file speaks for itself")

    def test_a_use_after_free_by_the_test_names_the_learners_free_as_such(self):
        """The test reads a block the learner's code freed: the read is the test's line, and the
        learner's free is named as where the memory was freed, not as where it was read."""
        for compiler in COMPILERS:
            where = f"{compiler}/asan-freed-by-learner.txt"
            finding = sanitizers.summarize(fixture(compiler, "asan-freed-by-learner"), HEADER)
            self.assertEqual((finding.kind, finding.access), ("heap-use-after-free", "READ of size 4"), where)
            self.assertEqual((finding.location, finding.function), ("/alloclab/main.cpp:2", "main"), where)
            self.assertEqual(finding.memory, f"the memory was freed at {HEADER}:4 in Box::drop", where)

    def test_a_new_delete_mismatch_names_both_forms_and_the_learners_lines(self):
        """AddressSanitizer's report of a block released through the wrong delete, and the tests'
        replaced operator new's report of it, read alike: the release's line in the learner's file,
        what allocated the block and where, what released it, and why the pair matters."""
        for compiler in COMPILERS:
            for case in ("asan-alloc-dealloc-mismatch", "replaced-alloc-dealloc-mismatch"):
                self.check_finding(compiler, case, "AddressSanitizer", "alloc-dealloc-mismatch", 5, "Chunks::drop")
                advice = sanitizers.summarize(fixture(compiler, case), HEADER).advice
                self.assertIn(f"allocated with operator new at {HEADER}:4 in Chunks::take and released with "
                              "operator delete []: ", advice, f"{compiler}/{case}.txt")
            case = "replaced-new-delete-type-mismatch"
            self.check_finding(compiler, case, "AddressSanitizer", "new-delete-type-mismatch", 5, "Chunks::drop")
            advice = sanitizers.summarize(fixture(compiler, case), HEADER).advice
            self.assertIn(f"allocated with alignment 64 bytes at {HEADER}:4 in Chunks::take and released by an "
                          "operator delete given no alignment: ", advice, f"{compiler}/{case}.txt")

    def test_the_replaced_operator_new_is_never_the_place(self):
        """Without the learner's file to look for, the place is the code that called the tests'
        operator delete, as it is the code that called the runtime's."""
        for compiler in COMPILERS:
            for case in MISMATCHES:
                finding = sanitizers.summarize(fixture(compiler, case))
                self.assertEqual(finding.location, f"{HEADER}:5", f"{compiler}/{case}.txt")


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
