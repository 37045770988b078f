// Stage 2 — fork and copy-on-write: a child shares every block of its parent, and the first
// write into a shared, partly filled last block gives the writer a private copy, reported so
// that the engine copies the KV before it writes.
#include "kv_cache_manager.hpp"

#include <numeric>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"

namespace stage2_fork {

using alloclab::BlockCopy;
using alloclab::KVCacheManager;

std::vector<int> tokens(int n, int first = 0) {
  std::vector<int> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), first);
  return out;
}

TEST(KVFork, AChildSharesEveryBlock) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value());
  m.fork(1, 2);
  const auto parent = m.block_table(1);
  const auto child = m.block_table(2);
  ASSERT_EQ(child.size(), parent.size());
  for (std::size_t i = 0; i < parent.size(); ++i) {
    EXPECT_EQ(child[i], parent[i]) << "fork shares every block: nothing is copied until someone writes.";
    EXPECT_EQ(m.pool().refcount(parent[i]), 2) << "Each shared block is held by both requests.";
  }
  EXPECT_EQ(m.num_tokens(2), 6);
  EXPECT_EQ(m.num_free_blocks(), 6) << "A fork takes no block.";
}

TEST(KVFork, WritingASharedPartlyFilledBlockCopiesIt) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value());
  m.fork(1, 2);
  const int shared = m.block_table(1)[1];
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 50, copies));
  ASSERT_EQ(copies.size(), 1u) << "The child's 7th token goes into a shared, partly filled block: one copy.";
  EXPECT_EQ(copies[0].src, shared) << "The copy's source is the shared block.";
  EXPECT_EQ(m.block_table(2)[1], copies[0].dst) << "The child now writes into the copy.";
  EXPECT_EQ(m.block_table(1)[1], shared) << "The parent keeps its block.";
  EXPECT_EQ(m.pool().refcount(shared), 1) << "The child gave up its reference to the shared block.";
  EXPECT_EQ(m.stats().copies, 1u);
  copies.clear();
  ASSERT_TRUE(m.append_token(1, 60, copies));
  EXPECT_TRUE(copies.empty()) << "The parent's block is its own again: no copy.";
}

TEST(KVFork, FullSharedBlocksAreNeverCopied) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value());
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 9, copies));
  EXPECT_TRUE(copies.empty()) << "The child's 9th token starts a new block: full blocks are never written again.";
  EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]);
}

TEST(KVFork, ACopyThatCannotBeHadChangesNothing) {
  KVCacheManager m(2, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value());
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  EXPECT_FALSE(m.append_token(2, 1, copies)) << "No block is free for the copy: append_token returns false.";
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(m.num_tokens(2), 6);
  EXPECT_EQ(m.block_table(2)[1], m.block_table(1)[1]) << "The child still shares its last block.";
}

TEST(KVFork, ReleasingBothGivesEveryBlockBack) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value());
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 1, copies));
  m.release(1);
  m.release(2);
  EXPECT_EQ(m.pool().num_free(), 8) << "Every reference taken by fork and by the copy must be given back.";
}

TEST(KVFork, AForkIntoAnAdmittedIdThrows) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value());
  ASSERT_TRUE(m.admit(2, tokens(2)).has_value());
  EXPECT_THROW(m.fork(1, 2), std::invalid_argument);
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[0]), 1) << "A refused fork retains nothing.";
}

}  // namespace stage2_fork
