"""Sanitizer reports become one line: the tool, the kind, the access, and the learner's line."""
import shutil
import subprocess
import tomllib
import unittest

from lab.core import sanitizers
from lab.model.catalog import CATALOG, ROOT

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


# A sized delete told another size than the block's, as the tests' replaced operator new reports it
# (g++ 12; clang++ 14 declares no sized delete without -fsized-deallocation).
SIZED = """==7==ERROR: AddressSanitizer: new-delete-type-mismatch on 0x606000000020:
  object passed to delete has wrong type:
  size of the allocated type:   64 bytes;
  size of the deallocated type: 8 bytes.
    #0 0x7fac in __sanitizer_print_stack_trace ../../../../src/libsanitizer/asan/asan_stack.cpp:87
    #1 0x55b3 in failing_new::release(void*, failing_new::Form const&) /kit/judge/tests/support/failing_new.cpp:246
    #2 0x55b4 in operator delete(void*, unsigned long) /kit/judge/tests/support/failing_new.cpp:308
    #3 0x55b5 in alloclab::FixedPool::~FixedPool() /home/me/exercises/02-fixed-pool/fixed_pool.hpp:51

0x606000000020 is located 0 bytes inside of 64-byte region [0x606000000020,0x606000000060)
allocated by thread T0 here:
    #0 0x7fab in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x55c1 in failing_new::allocate(unsigned long, unsigned long, bool) /kit/judge/tests/support/failing_new.cpp:215
    #2 0x55c2 in alloclab::FixedPool::grow() /home/me/exercises/02-fixed-pool/fixed_pool.hpp:137

SUMMARY: AddressSanitizer: new-delete-type-mismatch in operator delete
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


# Exercise 06's tests race on a slot of the ring because the learner's release/acquire pair is
# missing: the accesses are the test's, the ring's memory comes from the learner's constructor,
# and the threads were created by the test. As clang 19 prints it (trimmed to the frames that matter).
TSAN_RING = """WARNING: ThreadSanitizer: data race (pid=4711)
  Read of size 1 at 0x721000000040 by thread T2:
    #0 memcmp <null> (test_06-ring-allocator+0x9f2b1) (BuildId: 9c1e)
    #1 RingTwoThreads_HandoffSeesTheWrite_Test::TestBody()::$_1::operator()() const /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:61:9 (test_06-ring-allocator+0x1a2b3) (BuildId: 9c1e)
    #2 std::thread::_State_impl<std::thread::_Invoker<std::tuple<RingTwoThreads_HandoffSeesTheWrite_Test::TestBody()::$_1>>>::_M_run() /usr/lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/bits/std_thread.h:211:13 (test_06-ring-allocator+0x1a3c4) (BuildId: 9c1e)

  Previous write of size 8 at 0x721000000040 by thread T1:
    #0 memset <null> (test_06-ring-allocator+0x9e1a0) (BuildId: 9c1e)
    #1 RingTwoThreads_HandoffSeesTheWrite_Test::TestBody()::$_0::operator()() const /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:48:9 (test_06-ring-allocator+0x1a0f1) (BuildId: 9c1e)

  Location is heap block of size 4096 at 0x721000000000 allocated by main thread:
    #0 operator new(unsigned long, std::align_val_t) <null> (test_06-ring-allocator+0xa51c2) (BuildId: 9c1e)
    #1 alloclab::RingBumpAllocator::RingBumpAllocator(unsigned long) /home/me/exercises/06-ring-allocator/ring_allocator.hpp:54:17 (test_06-ring-allocator+0x19e77) (BuildId: 9c1e)
    #2 RingTwoThreads_HandoffSeesTheWrite_Test::TestBody() /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:40:21 (test_06-ring-allocator+0x19f02) (BuildId: 9c1e)

  Thread T2 (tid=4714, running) created by main thread at:
    #0 pthread_create <null> (test_06-ring-allocator+0x8c5a1) (BuildId: 9c1e)
    #1 RingTwoThreads_HandoffSeesTheWrite_Test::TestBody() /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:58:15 (test_06-ring-allocator+0x19fa0) (BuildId: 9c1e)

SUMMARY: ThreadSanitizer: data race /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:61:9 in RingTwoThreads_HandoffSeesTheWrite_Test::TestBody()::$_1::operator()() const
"""

# The test's own read of a block the learner's deallocate() freed, as g++ 12's ASan prints it.
ASAN_FREED = """==5120==ERROR: AddressSanitizer: heap-use-after-free on address 0x606000000020 at pc 0x55 bp 0x7ff sp 0x7ff
READ of size 8 at 0x606000000020 thread T0
    #0 0x55a1 in CachingBestFit_ReuseAfterFree_Test::TestBody() /kit/judge/tests/04-caching-allocator/stage2_best_fit.cpp:88
    #1 0x55a2 in void testing::internal::HandleExceptionsInMethodIfSupported<testing::Test, void>() /kit/build/_deps/googletest-src/googletest/src/gtest.cc:2612

0x606000000020 is located 0 bytes inside of 64-byte region [0x606000000020,0x606000000060)
freed by thread T0 here:
    #0 0x7fb1 in operator delete(void*) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:152
    #1 0x55b1 in alloclab::CachingAllocator::release_cached() /home/me/exercises/04-caching-allocator/caching_allocator.hpp:140
    #2 0x55b2 in CachingBestFit_ReuseAfterFree_Test::TestBody() /kit/judge/tests/04-caching-allocator/stage2_best_fit.cpp:86

previously allocated by thread T0 here:
    #0 0x7fb2 in operator new(unsigned long) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:99
    #1 0x55c1 in alloclab::CachingAllocator::allocate(unsigned long) /home/me/exercises/04-caching-allocator/caching_allocator.hpp:97

SUMMARY: AddressSanitizer: heap-use-after-free /kit/judge/tests/04-caching-allocator/stage2_best_fit.cpp:88 in CachingBestFit_ReuseAfterFree_Test::TestBody()
"""


class SummarizeTest(unittest.TestCase):
    def test_a_race_is_placed_at_its_accesses_only(self):
        """The learner's constructor allocated the ring: that line is where the memory came
        from, not where it was raced on, and must not be named as the race's place."""
        f = sanitizers.summarize(TSAN_RING, "exercises/06-ring-allocator/ring_allocator.hpp")
        self.assertEqual(f.location, "/kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:61")
        self.assertEqual(f.function, "RingTwoThreads_HandoffSeesTheWrite_Test::TestBody()::$_1::operator()")
        self.assertTrue(f.other.startswith("write at /kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:48"),
                        f.other)
        self.assertEqual(f.memory, "the memory was allocated at /home/me/exercises/06-ring-allocator/"
                                   "ring_allocator.hpp:54 in alloclab::RingBumpAllocator::RingBumpAllocator")
        self.assertEqual(f.advice, sanitizers.UNORDERED_RACE)
        line = f.line()
        self.assertNotIn("· at /home/me/exercises/06-ring-allocator/ring_allocator.hpp:54", line)
        self.assertNotIn("· in alloclab::RingBumpAllocator::RingBumpAllocator", line)

    def test_a_race_in_the_learners_file_names_no_allocation(self):
        f = sanitizers.summarize(TSAN_RING.replace("/kit/judge/tests/06-ring-allocator/stage3_two_threads.cpp:61",
                                                   "/home/me/exercises/06-ring-allocator/ring_allocator.hpp:88"),
                                 "exercises/06-ring-allocator/ring_allocator.hpp")
        self.assertTrue(f.location.endswith("ring_allocator.hpp:88"), f.location)
        self.assertEqual((f.memory, f.advice), ("", ""))

    def test_a_read_of_freed_memory_is_placed_at_the_read(self):
        """ASan's "freed by" and "previously allocated by" stacks say where the block came and
        went; the place of the bad access is the access's stack, here the test's."""
        f = sanitizers.summarize(ASAN_FREED, "exercises/04-caching-allocator/caching_allocator.hpp")
        self.assertEqual(f.location, "/kit/judge/tests/04-caching-allocator/stage2_best_fit.cpp:88")
        self.assertEqual(f.function, "CachingBestFit_ReuseAfterFree_Test::TestBody")
        self.assertEqual(f.memory, "the memory was freed at /home/me/exercises/04-caching-allocator/"
                                   "caching_allocator.hpp:140 in alloclab::CachingAllocator::release_cached")
        self.assertIn("READ of size 8 · at /kit/judge/tests/04-caching-allocator/stage2_best_fit.cpp:88", f.line())

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

    def test_a_sized_delete_told_another_size_names_both_sizes(self):
        f = sanitizers.summarize(SIZED, "exercises/02-fixed-pool/fixed_pool.hpp")
        self.assertEqual((f.kind, f.location, f.function), ("new-delete-type-mismatch",
                         "/home/me/exercises/02-fixed-pool/fixed_pool.hpp:51", "alloclab::FixedPool::~FixedPool"))
        self.assertIn("allocated as 64 bytes at /home/me/exercises/02-fixed-pool/fixed_pool.hpp:137 in "
                      "alloclab::FixedPool::grow and released by a sized operator delete told 8 bytes: ", f.advice)
        self.assertEqual(sanitizers.summarize(SIZED).location, "/home/me/exercises/02-fixed-pool/fixed_pool.hpp:51",
                         "the tests' operator delete is never the place")

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
