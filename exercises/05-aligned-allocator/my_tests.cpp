// Your own tests of exercise 05's contract (chapters/05-aligned-allocator.md), judged with
//   python3 judge/judge.py examine 5
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "aligned_allocator.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

// One example: every block a vector gets from the allocator starts on a cache line.
TEST(MyAlignedAllocator, AVectorsBlockStartsOnACacheLine) {
  std::vector<float, alloclab::AlignedAllocator<float>> v(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u);
}
