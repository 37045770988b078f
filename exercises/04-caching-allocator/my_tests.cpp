// Your own tests of exercise 04's contract (chapters/04-caching-allocator.md), judged with
//   python3 judge/judge.py examine 4
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "caching_allocator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

// The allocator asks a device for memory; the tests bring one. This one lends memory from the
// heap and says every event is done at once.
struct HeapDevice {
  void* malloc(std::size_t n) noexcept { return std::aligned_alloc(512, n); }
  void free(void* p) noexcept { std::free(p); }
  void synchronize() noexcept {}
  int record_event(int) noexcept { return 0; }
  bool event_done(int) const noexcept { return true; }
};

// One example: a request is rounded up to a multiple of 512 bytes, and at least 512.
TEST(MyCachingAllocator, RoundsUpToAMultipleOf512) {
  EXPECT_EQ(alloclab::CachingAllocator<HeapDevice>::round_size(1), 512u);
  EXPECT_EQ(alloclab::CachingAllocator<HeapDevice>::round_size(513), 1024u);
}
