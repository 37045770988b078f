// Your own tests of exercise 07's contract (chapters/07-serving-engine.md), judged with
//   python3 judge/judge.py examine 7
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "kv_cache_manager.hpp"

#include <gtest/gtest.h>

#include <vector>

// One example: a prompt of 10 tokens in blocks of 4 takes ceil(10 / 4) = 3 blocks.
TEST(MyKVCacheManager, APromptTakesCeilOfItsLengthOverTheBlockSizeBlocks) {
  alloclab::KVCacheManager manager(8, 4, /*prefix_caching=*/false);
  const std::vector<int> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(manager.admit(1, prompt).has_value());
  EXPECT_EQ(manager.num_free_blocks(), 5);
}
