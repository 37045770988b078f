"""Sanitizer reports become one line: the tool, the kind, the access, and the learner's line."""
import shutil
import subprocess
import tomllib
import unittest

from lab import sanitizers
from lab.catalog import CATALOG, ROOT

ASAN = """=================================================================
==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014 at pc 0x55 bp 0x7ff sp 0x7ff
READ of size 1 at 0x602000000014 thread T0
    #0 0x55d in alloclab::Arena::allocate(unsigned long, unsigned long) /home/me/exercises/01-arena/arena.hpp:42:7
    #1 0x55e in ArenaBasics_X_Test::TestBody() /kit/judge/tests/01-arena/stage1_basics.cpp:30:3
    #2 0x55f in void testing::internal::HandleExceptionsInMethodIfSupported /usr/include/gtest/internal/gtest.cc:10
"""

UBSAN = """/home/me/exercises/01-arena/arena.hpp:51:20: runtime error: applying non-zero offset 8 to null pointer
    #0 0x1 in alloclab::Arena::allocate(unsigned long, unsigned long) /home/me/exercises/01-arena/arena.hpp:51:20
"""

LEAK = """
=================================================================
==77==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 4096 byte(s) in 1 object(s) allocated from:
    #0 0x4 in operator new(unsigned long, std::align_val_t) (/kit/build/test+0x1)
    #1 0x5 in alloclab::Arena::Arena(unsigned long) /home/me/exercises/01-arena/arena.hpp:20:30
"""

TSAN = """==================
WARNING: ThreadSanitizer: data race (pid=9)
  Write of size 8 at 0x7b0400000000 by thread T2:
    #0 alloclab::FixedPool::allocate() /home/me/exercises/02-fixed-pool/fixed_pool.hpp:77:5 (test+0x1)
"""

# The runtime's consistency check, as clang 14's ASan printed it for a rewind that poisoned a
# region of wrapped size.
CHECK = """AddressSanitizer: CHECK failed: asan_poisoning.cpp:124 "((beg.chunk)) < ((end.chunk))" (0xc4a, 0xc4a) (tid=8)
    #0 0x55d3 in __asan::CheckUnwind() crtstuff.c
    #1 0x55d4 in __sanitizer::CheckFailed(char const*, int, char const*, unsigned long long, unsigned long long) crtstuff.c
    #2 0x55d5 in __asan_poison_memory_region (/kit/build/test_01-arena+0x1d30bb) (BuildId: 0efd)
    #3 0x55d6 in alloclab::Arena::poison(void const*, unsigned long) /home/me/exercises/01-arena/arena.hpp:131:5
    #4 0x55d7 in alloclab::Arena::rewind(alloclab::Arena::Marker) /home/me/exercises/01-arena/arena.hpp:112:5
"""


# A race whose two sides are in different functions: the unlocked read is the mistake.
TSAN_TWO_SIDES = """WARNING: ThreadSanitizer: data race (pid=9)
  Write of size 8 at 0x7b0400000000 by thread T2 (mutexes: write M1):
    #0 alloclab::FixedPool::grow() /home/me/exercises/02-fixed-pool/fixed_pool.hpp:142:5 (test+0x1)
    #1 alloclab::FixedPool::allocate() /home/me/exercises/02-fixed-pool/fixed_pool.hpp:60:5 (test+0x2)

  Previous read of size 8 at 0x7b0400000000 by thread T3:
    #0 std::vector<char*>::size() const /usr/include/c++/12/bits/stl_vector.h:919:40 (test+0x3)
    #1 alloclab::SharedFixedPool::owns(void const*) const /home/me/exercises/02-fixed-pool/fixed_pool.hpp:170:12 (test+0x4)

SUMMARY: ThreadSanitizer: data race /home/me/exercises/02-fixed-pool/fixed_pool.hpp:142:5 in alloclab::FixedPool::grow()
"""


class SummarizeTest(unittest.TestCase):
    def test_a_race_names_both_sides_in_the_learners_code(self):
        """The report's first access is often the correct, locked one; the mistake is the other."""
        f = sanitizers.summarize(TSAN_TWO_SIDES, "exercises/02-fixed-pool/fixed_pool.hpp")
        self.assertEqual(f.function, "alloclab::FixedPool::grow")
        self.assertTrue(f.other.startswith("read at ") and f.other.endswith(
            "exercises/02-fixed-pool/fixed_pool.hpp:170 in alloclab::SharedFixedPool::owns"), f.other)
        self.assertIn("racing with a read", f.line())
        same = sanitizers.summarize(TSAN, "exercises/02-fixed-pool/fixed_pool.hpp")
        self.assertEqual(same.other, "", "one place racing with itself needs no second name")
        self.assertEqual(f.advice, "", "a race in the learner's file speaks for itself")

    def test_a_race_outside_the_learners_file_says_what_orders_it(self):
        """A missing acquire or release shows up as a race between the tests' own reads and
        writes of the blocks; the report must still point at the learner's atomics."""
        f = sanitizers.summarize(TSAN_TWO_SIDES, "exercises/06-ring-allocator/ring_allocator.hpp")
        self.assertEqual(f.advice, sanitizers.UNORDERED_RACE)
        self.assertIn("your atomics", f.line())

    def test_a_failed_runtime_check_is_a_finding_in_the_learners_code(self):
        """Without it the test reads "ended the whole test program", which says nothing."""
        f = sanitizers.summarize(CHECK, "exercises/01-arena/arena.hpp")
        self.assertIsNotNone(f)
        self.assertEqual((f.tool, f.kind, f.function), ("AddressSanitizer", sanitizers.CHECK_FAILED,
                                                         "alloclab::Arena::poison"))
        self.assertTrue(f.location.endswith("exercises/01-arena/arena.hpp:131"), f.location)

    def test_asan_names_kind_access_and_learner_frame(self):
        f = sanitizers.summarize(ASAN, "exercises/01-arena/arena.hpp")
        self.assertEqual((f.tool, f.kind, f.access), ("AddressSanitizer", "heap-buffer-overflow", "READ of size 1"))
        self.assertEqual(f.location, "/home/me/exercises/01-arena/arena.hpp:42")
        self.assertEqual(f.function, "alloclab::Arena::allocate")
        self.assertIn("heap-buffer-overflow · READ of size 1 · at /home/me/exercises/01-arena/arena.hpp:42", f.line())

    def test_without_focus_the_first_frame_outside_runtimes_is_used(self):
        f = sanitizers.summarize(ASAN)
        self.assertIn("arena.hpp:42", f.location)

    def test_ubsan(self):
        f = sanitizers.summarize(UBSAN, "arena.hpp")
        self.assertEqual(f.tool, "UndefinedBehaviorSanitizer")
        self.assertEqual(f.kind, "applying non-zero offset 8 to null pointer")
        self.assertIn("arena.hpp:51", f.location)

    def test_leak(self):
        f = sanitizers.summarize(LEAK, "exercises/01-arena/arena.hpp")
        self.assertEqual((f.tool, f.kind), ("LeakSanitizer", "memory leak"))
        self.assertEqual(f.access, "Direct leak of 4096 byte(s) in 1 object(s)")
        self.assertEqual(f.function, "alloclab::Arena::Arena")

    def test_tsan(self):
        f = sanitizers.summarize(TSAN, "fixed_pool.hpp")
        self.assertEqual((f.tool, f.kind), ("ThreadSanitizer", "data race"))

    def test_plain_output_has_no_finding(self):
        self.assertIsNone(sanitizers.summarize("[ RUN      ] A.B\n[       OK ] A.B\n"))

    def test_environment_carries_the_memory_limit(self):
        env = sanitizers.environment(1234)
        self.assertIn("max_allocation_size_mb=1234", env["ASAN_OPTIONS"])
        self.assertIn("detect_leaks=1", env["ASAN_OPTIONS"])

    @unittest.skipUnless(shutil.which("cmake"), "cmake is not installed")
    def test_ctest_runs_with_the_judges_options(self):
        # ctest's environment comes from judge/sanitizer_options.cmake, the judge's from
        # sanitizers.environment(): both must read the same options and the same memory limit.
        memory_mb = tomllib.loads(CATALOG.read_text(encoding="utf-8"))["limits"]["memory_mb"]
        script = ROOT / "judge" / "sanitizer_options.cmake"
        out = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True, check=True)
        ctest = dict(line.split("=", 1) for line in out.stderr.splitlines() if "=" in line)
        self.assertEqual(ctest, sanitizers.environment(memory_mb),
                         "ctest and the judge would run the tests with different sanitizer options")
        self.assertIn("allocator_may_return_null=1", ctest["ASAN_OPTIONS"])


if __name__ == "__main__":
    unittest.main()
