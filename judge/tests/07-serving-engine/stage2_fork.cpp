// Stage 2 — fork and copy-on-write: a child shares every block of its parent, and the first
// write into a shared, partly filled last block gives the writer a private copy, reported so
// that the engine copies the KV before it writes.
#include "manager_under_test.hpp"

#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"
#include "kv_test_support.hpp"

namespace stage2_fork {

using alloclab::test::kv::BlockCopy;
using alloclab::test::kv::KVCacheManager;
using alloclab::test::describe;
using alloclab::test::show;
using alloclab::test::tokens;

constexpr const char* kAdmitFails = "admit must succeed when enough blocks are free (stage 1).";
constexpr const char* kAppendFails = "append_token must succeed when a block is free.";

TEST(KVFork, AChildSharesEveryBlock) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  const auto parent = m.block_table(1);
  const auto child = m.block_table(2);
  ASSERT_EQ(child.size(), parent.size()) << "The child gets the parent's whole block table.";
  for (std::size_t i = 0; i < parent.size(); ++i) {
    EXPECT_EQ(child[i], parent[i]) << "fork shares every block: nothing is copied until someone writes.";
    EXPECT_EQ(m.pool().refcount(parent[i]), 2) << "Each shared block is held by both requests.";
  }
  EXPECT_EQ(m.num_tokens(2), 6) << "The child gets the parent's tokens.";
  EXPECT_EQ(m.num_free_blocks(), 6) << "A fork takes no block.";
  m.fork(2, 3);
  EXPECT_EQ(m.pool().refcount(parent[0]), 3) << "A fork of a fork shares the blocks a third time.";
}

TEST(KVFork, WritingASharedPartlyFilledBlockCopiesIt) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  const int shared = m.block_table(1)[1];
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 50, copies)) << kAppendFails;
  ASSERT_EQ(copies.size(), 1u) << "The child's 7th token goes into a shared, partly filled block: one copy.";
  EXPECT_EQ(copies[0].src, shared) << "The copy's source is the shared block.";
  EXPECT_EQ(m.block_table(2)[1], copies[0].dst) << "The child now writes into the copy.";
  EXPECT_NE(copies[0].dst, shared) << "The copy is a new block.";
  EXPECT_EQ(m.pool().refcount(copies[0].dst), 1) << "The copy is the child's alone.";
  EXPECT_EQ(m.block_table(1)[1], shared) << "The parent keeps its block.";
  EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]) << "The full first block stays shared.";
  EXPECT_EQ(m.pool().refcount(shared), 1) << "The child gave up its reference to the shared block.";
  EXPECT_EQ(m.num_free_blocks(), 5) << "The copy took one block.";
  EXPECT_EQ(m.stats().copies, 1u) << "stats().copies counts every copy append_token ordered.";
  EXPECT_EQ(m.num_tokens(2), 7);
  EXPECT_EQ(m.num_tokens(1), 6) << "The parent's tokens do not grow with the child's.";
  copies.clear();
  ASSERT_TRUE(m.append_token(1, 60, copies)) << kAppendFails;
  EXPECT_TRUE(copies.empty()) << "The parent's block is its own again: no copy.";
  ASSERT_TRUE(m.append_token(2, 51, copies)) << kAppendFails;
  EXPECT_TRUE(copies.empty()) << "The child's copy is its own: no second copy.";
  EXPECT_EQ(m.stats().copies, 1u);
}

TEST(KVFork, BlockCopiesCompareFieldByField) {
  using alloclab::test::kv::learners_copies_equal;
  ASSERT_TRUE(learners_copies_equal({1, 2}, {1, 2}).has_value())
      << "BlockCopy must keep its operator==, as the contract declares it: a caller compares the copies ordered.";
  EXPECT_TRUE(*learners_copies_equal({1, 2}, {1, 2})) << "Two copies of block 1 into block 2 are equal.";
  EXPECT_FALSE(*learners_copies_equal({1, 2}, {2, 1})) << "Copying 1 into 2 is not copying 2 into 1.";
  EXPECT_FALSE(*learners_copies_equal({1, 2}, {1, 3})) << "Copies into different blocks differ.";
  EXPECT_FALSE(*learners_copies_equal({1, 2}, {3, 2})) << "Copies from different blocks differ.";
}

TEST(KVFork, AppendTokenAddsToCopiesWithoutClearingThem) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(5)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  m.fork(1, 3);
  std::vector<BlockCopy> copies{{6, 7}};
  ASSERT_TRUE(m.append_token(2, 50, copies)) << kAppendFails;
  ASSERT_TRUE(m.append_token(3, 50, copies)) << kAppendFails;
  ASSERT_EQ(copies.size(), 3u) << "append_token appends each copy to `copies` and keeps what was there: the engine "
                                  "gathers a whole step's copies in one vector.";
  EXPECT_EQ(copies[0], (BlockCopy{6, 7})) << "What `copies` held before must stay, in place.";
  EXPECT_EQ(copies[1].src, copies[2].src) << "Both children copied the block the three shared.";
  EXPECT_NE(copies[1].dst, copies[2].dst) << "Each child got a copy of its own.";
  EXPECT_EQ(m.stats().copies, 2u);
  ASSERT_TRUE(m.append_token(1, 50, copies)) << kAppendFails;
  EXPECT_EQ(copies.size(), 3u) << "The parent is the last owner of the block: it writes in place, no copy.";
}

TEST(KVFork, FullSharedBlocksAreNeverCopied) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 9, copies)) << kAppendFails;
  EXPECT_TRUE(copies.empty()) << "The child's 9th token starts a new block: full blocks are never written again.";
  EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]);
  EXPECT_EQ(m.block_table(2)[1], m.block_table(1)[1]) << "A full shared last block stays shared.";
  EXPECT_EQ(m.block_table(2).size(), 3u) << "The 9th token takes a third block.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[1]), 2);
}

TEST(KVFork, ACopyThatCannotBeHadChangesNothing) {
  KVCacheManager m(2, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  const std::string before = describe(m, {1, 2});
  std::vector<BlockCopy> copies;
  EXPECT_FALSE(m.append_token(2, 1, copies)) << "No block is free for the copy: append_token returns false.";
  EXPECT_TRUE(copies.empty()) << "A refused append_token orders no copy.";
  EXPECT_EQ(m.num_tokens(2), 6);
  EXPECT_EQ(m.block_table(2)[1], m.block_table(1)[1]) << "The child still shares its last block.";
  EXPECT_EQ(describe(m, {1, 2}), before) << "A refused append_token must change nothing, references included.";
}

TEST(KVFork, ReleasingBothGivesEveryBlockBack) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 1, copies)) << kAppendFails;
  m.release(1);
  EXPECT_EQ(m.pool().refcount(m.block_table(2)[0]), 1) << "After the parent's release the child holds the first block alone.";
  EXPECT_EQ(m.num_free_blocks(), 6) << "The parent's private last block is free; the shared one is still the child's.";
  m.release(2);
  EXPECT_EQ(m.pool().num_free(), 8) << "Every reference taken by fork and by the copy must be given back.";
}

TEST(KVFork, AForkIntoAnAdmittedIdThrows) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(2, tokens(2)).has_value()) << kAdmitFails;
  const std::string before = describe(m, {1, 2, 3});
  EXPECT_THROW(m.fork(1, 2), std::invalid_argument) << "A child id already admitted must throw.";
  EXPECT_THROW(m.fork(1, 1), std::invalid_argument) << "A request cannot be forked into itself: its id is admitted.";
  EXPECT_THROW(m.fork(3, 1), std::invalid_argument) << "An unknown parent must throw.";
  EXPECT_THROW(m.fork(3, 4), std::invalid_argument) << "An unknown parent must throw, whatever the child.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[0]), 1) << "A refused fork retains nothing.";
  EXPECT_EQ(describe(m, {1, 2, 3}), before) << "A refused fork must change nothing: request 2 keeps its own 2 tokens.";
  EXPECT_THROW((void)m.num_tokens(4), std::invalid_argument) << "The child of an unknown parent is not admitted.";
}

// A world for the tests of a failing heap: a parent, its child sharing a partly filled block,
// and a third request.
struct Family {
  KVCacheManager m{8, 4, false};
  std::vector<int> ids{1, 2, 3, 4};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Family() {
    ok = m.admit(1, tokens(6)).has_value() && m.admit(3, tokens(4, 40)).has_value();
    if (ok) m.fork(1, 2);
  }
};

TEST(KVFork, ForkAndCopyChangeNothingWhenTheHeapFails) {
  using alloclab::test::changes_nothing_when_the_heap_fails;
  auto make = [] { return Family(); };
  const int refused = changes_nothing_when_the_heap_fails<Family>(
      "fork(1, 4)", make, [](Family& f) { f.m.fork(1, 4); },
      [](Family& f) {
        EXPECT_EQ(f.m.pool().refcount(f.m.block_table(1)[0]), 3) << "After a second fork, three requests hold block 0.";
      });
  EXPECT_GT(refused, 0) << "fork must allocate: it stores the child's tokens and table.";
  std::vector<BlockCopy> copies;
  changes_nothing_when_the_heap_fails<Family>(
      "append_token(2, ...) into a shared, partly filled block", make,
      [&](Family& f) {
        copies.clear();
        try {
          (void)f.m.append_token(2, 9, copies);
        } catch (const std::bad_alloc&) {
          EXPECT_TRUE(copies.empty()) << "An append_token that throws must not leave a copy in `copies`: the "
                                         "engine would copy into a block the request does not hold.";
          throw;
        }
      },
      [&](Family& f) {
        EXPECT_EQ(copies.size(), 1u) << "The child's write into the shared block must order one copy.";
        EXPECT_EQ(f.m.stats().copies, 1u);
      });  changes_nothing_when_the_heap_fails<Family>(
      "append_token(2, ...) into a shared block, with `copies` as long as its room", make,
      [&](Family& f) {
        copies = std::vector<BlockCopy>(8, BlockCopy{0, 1});  // 8 copies of earlier calls: the next one needs room
        try {
          (void)f.m.append_token(2, 9, copies);
        } catch (const std::bad_alloc&) {
          EXPECT_EQ(copies.size(), 8u) << "An append_token that throws must leave `copies` as it was.";
          throw;
        }
      },
      [&](Family&) {
        ASSERT_EQ(copies.size(), 9u) << "The copy goes after the 8 already there.";
        EXPECT_EQ(copies[0], (BlockCopy{0, 1})) << "The copies already there stay.";
      });
}

}  // namespace stage2_fork
