// Your own tests of exercise 03's contract (chapters/03-block-pool.md), judged with
//   python3 judge/judge.py examine 3
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "block_pool.hpp"

#include <gtest/gtest.h>

// One example: allocate is all or nothing; asking for more blocks than are free takes none.
TEST(MyBlockPool, ARequestThatCannotBeMetTakesNothing) {
  alloclab::BlockPool pool(4);
  EXPECT_FALSE(pool.allocate(5).has_value());
  EXPECT_EQ(pool.num_free(), 4) << "a refused request must leave every block free";
}
