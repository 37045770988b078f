// Stage 1 — admission, block tables, slots and release, with prefix caching off: a request
// holds ceil(len / block_tokens) blocks, takes a new one only when its last is full, and a
// refused request changes nothing.
#include "kv_cache_manager.hpp"

#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"

namespace stage1_admission {

using alloclab::BlockCopy;
using alloclab::KVCacheManager;

std::vector<int> tokens(int n, int first = 0) {
  std::vector<int> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), first);
  return out;
}

TEST(KVAdmission, RejectsBadSizes) {
  EXPECT_THROW(KVCacheManager(-1, 16, false), std::invalid_argument)
      << "A negative number of blocks must throw std::invalid_argument.";
  EXPECT_THROW(KVCacheManager(8, 0, false), std::invalid_argument)
      << "A block of 0 tokens holds nothing: block_tokens <= 0 must throw std::invalid_argument.";
  EXPECT_NO_THROW(KVCacheManager(0, 16, false)) << "A manager of 0 blocks is empty, not an error.";
}

TEST(KVAdmission, APromptTakesCeilLenOverBlockTokensBlocks) {
  KVCacheManager m(8, 4, false);
  const auto computed = m.admit(1, tokens(9));
  ASSERT_TRUE(computed.has_value()) << "admit of a 9-token prompt into 8 free blocks of 4 tokens must succeed.";
  EXPECT_EQ(*computed, 0) << "With prefix caching off, no prompt token has its KV already: admit must return 0.";
  EXPECT_EQ(m.block_table(1).size(), 3u)
      << "9 tokens in blocks of 4 need ceil(9 / 4) = 3 blocks: two full and one with a single token.";
  EXPECT_EQ(m.num_tokens(1), 9);
  EXPECT_EQ(m.num_free_blocks(), 5) << "8 blocks minus the 3 the prompt took leaves 5 free.";
}

TEST(KVAdmission, SlotsFollowTheBlockTable) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value());
  ASSERT_TRUE(m.admit(2, tokens(6)).has_value());
  const auto table = m.block_table(2);
  for (int p = 0; p < 6; ++p) {
    EXPECT_EQ(m.slot(2, p), table[static_cast<std::size_t>(p / 4)] * 4 + p % 4)
        << "Token " << p << " of a request lives in block table[" << p / 4 << "] at offset " << p % 4
        << ": slot is that block times block_tokens plus the offset.";
  }
  EXPECT_THROW((void)m.slot(2, 6), std::out_of_range) << "Position 6 of a 6-token request does not exist.";
  EXPECT_THROW((void)m.slot(2, -1), std::out_of_range);
}

TEST(KVAdmission, AppendTakesABlockOnlyWhenTheLastIsFull) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value());
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 100, copies));
  EXPECT_EQ(m.block_table(1).size(), 1u) << "The 4th token fits in the first block: no new block yet.";
  ASSERT_TRUE(m.append_token(1, 101, copies));
  EXPECT_EQ(m.block_table(1).size(), 2u) << "The 5th token starts a second block.";
  EXPECT_TRUE(copies.empty()) << "A request that shares nothing never copies a block.";
  EXPECT_EQ(m.num_tokens(1), 5);
}

TEST(KVAdmission, ARefusedAdmitChangesNothing) {
  KVCacheManager m(3, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value());
  EXPECT_FALSE(m.admit(2, tokens(5)).has_value())
      << "5 tokens need 2 blocks and only 1 is free: admit must return std::nullopt.";
  EXPECT_EQ(m.num_free_blocks(), 1) << "A refused admit must take no block, not even the one that was free.";
  EXPECT_THROW((void)m.num_tokens(2), std::invalid_argument) << "A refused request is not admitted.";
  EXPECT_TRUE(m.admit(2, tokens(4)).has_value()) << "The same id can be admitted later, when it fits.";
}

TEST(KVAdmission, AFullManagerRefusesAnAppend) {
  KVCacheManager m(1, 2, false);
  ASSERT_TRUE(m.admit(1, tokens(2)).has_value());
  std::vector<BlockCopy> copies;
  EXPECT_FALSE(m.append_token(1, 7, copies)) << "No block is free for the third token: append_token returns false.";
  EXPECT_EQ(m.num_tokens(1), 2) << "A refused append_token must not count the token.";
}

TEST(KVAdmission, ReleaseGivesEveryBlockBack) {
  KVCacheManager m(6, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(10)).has_value());
  ASSERT_TRUE(m.admit(2, tokens(4)).has_value());
  m.release(1);
  EXPECT_EQ(m.num_free_blocks(), 5) << "Releasing a 3-block request gives its 3 blocks back.";
  EXPECT_THROW((void)m.block_table(1), std::invalid_argument) << "A released request is unknown.";
  m.release(2);
  EXPECT_EQ(m.pool().num_free(), 6) << "With every request released and caching off, every block is idle.";
}

TEST(KVAdmission, MisuseThrowsAndChangesNothing) {
  KVCacheManager m(4, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(4)).has_value());
  EXPECT_THROW((void)m.admit(1, tokens(2)), std::invalid_argument) << "An id already admitted must throw.";
  EXPECT_THROW((void)m.admit(2, std::vector<int>{}), std::invalid_argument) << "An empty prompt must throw.";
  std::vector<BlockCopy> copies;
  EXPECT_THROW((void)m.append_token(9, 1, copies), std::invalid_argument);
  EXPECT_THROW(m.release(9), std::invalid_argument);
  EXPECT_THROW(m.fork(9, 10), std::invalid_argument);
  EXPECT_EQ(m.num_free_blocks(), 3) << "Every refused call must leave the manager as it was.";
}

}  // namespace stage1_admission
