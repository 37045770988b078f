// Your own tests of exercise 06's contract (chapters/06-ring-allocator.md), judged with
//   python3 judge/judge.py examine 6
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "ring_allocator.hpp"

#include <gtest/gtest.h>

// One example: a request larger than the ring is refused with nullptr, and nothing changes.
TEST(MyRing, ARequestLargerThanTheRingIsRefused) {
  alloclab::RingBumpAllocator ring(4096);
  EXPECT_EQ(ring.allocate(ring.capacity() + 1), nullptr);
  EXPECT_EQ(ring.in_use(), 0u) << "a refused request changes nothing";
}
