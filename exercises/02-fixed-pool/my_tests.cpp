// Your own tests of exercise 02's contract (chapters/02-fixed-pool.md), judged with
//   python3 judge/judge.py examine 2
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "fixed_pool.hpp"

#include <gtest/gtest.h>

// One example: a block given back is free again, and the pool counts it.
TEST(MyFixedPool, AFreedBlockCountsAsFreeAgain) {
  alloclab::FixedPool pool(32, 8);
  const std::size_t free_at_first = pool.free_blocks();
  void* p = pool.allocate();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(pool.free_blocks(), free_at_first - 1);
  pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), free_at_first) << "a block given back is free again";
}
