// Stage 1 — admission, block tables, slots and release, with prefix caching off: a request
// holds ceil(len / block_tokens) blocks, takes a new one only when its last is full, and a
// refused or failed call changes nothing.
#include "manager_under_test.hpp"

#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"
#include "kv_test_support.hpp"

namespace stage1_admission {

using alloclab::test::kv::BlockCopy;
using alloclab::test::kv::KVCacheManager;
using alloclab::test::describe;
using alloclab::test::show;
using alloclab::test::tokens;

constexpr const char* kAdmitFails = "admit must succeed when enough blocks are free (see APromptTakesCeilLenOverBlockTokensBlocks).";

TEST(KVAdmission, RejectsBadSizes) {
  EXPECT_THROW(KVCacheManager(-1, 16, false), std::invalid_argument)
      << "A negative number of blocks must throw std::invalid_argument.";
  EXPECT_THROW(KVCacheManager(8, 0, false), std::invalid_argument)
      << "A block of 0 tokens holds nothing: block_tokens <= 0 must throw std::invalid_argument.";
  EXPECT_THROW(KVCacheManager(8, -4, true), std::invalid_argument)
      << "A negative block size must throw std::invalid_argument.";
  EXPECT_NO_THROW(KVCacheManager(0, 16, false)) << "A manager of 0 blocks is empty, not an error.";
  EXPECT_NO_THROW(KVCacheManager(4, 1, false)) << "A block of 1 token is small, not an error.";
}

TEST(KVAdmission, AManagerCannotBeCopied) {
  const auto traits = alloclab::test::kv::traits_of_the_manager();
  EXPECT_FALSE(traits.copy_constructible)
      << "A copy would share the block numbers of every request with the original: two managers would hand "
         "out the same KV blocks. The copy constructor must be deleted.";
  EXPECT_FALSE(traits.copy_assignable) << "The copy assignment must be deleted too.";
}

TEST(KVAdmission, APromptTakesCeilLenOverBlockTokensBlocks) {
  KVCacheManager m(8, 4, false);
  EXPECT_EQ(m.num_free_blocks(), 8) << "A new manager's blocks are all free.";
  const auto computed = m.admit(1, tokens(9));
  ASSERT_TRUE(computed.has_value()) << "admit of a 9-token prompt into 8 free blocks of 4 tokens must succeed.";
  EXPECT_EQ(*computed, 0) << "With prefix caching off, no prompt token has its KV already: admit must return 0.";
  EXPECT_EQ(m.block_table(1).size(), 3u)
      << "9 tokens in blocks of 4 need ceil(9 / 4) = 3 blocks: two full and one with a single token.";
  EXPECT_EQ(m.num_tokens(1), 9) << "num_tokens counts the prompt's tokens.";
  EXPECT_EQ(m.num_free_blocks(), 5) << "8 blocks minus the 3 the prompt took leaves 5 free.";
  ASSERT_TRUE(m.admit(2, tokens(8)).has_value()) << kAdmitFails;
  EXPECT_EQ(m.block_table(2).size(), 2u) << "8 tokens fill exactly 2 blocks of 4: no third, empty block.";
  ASSERT_TRUE(m.admit(3, tokens(1)).has_value()) << kAdmitFails;
  EXPECT_EQ(m.block_table(3).size(), 1u) << "A 1-token prompt needs 1 block.";
  for (const int b : m.block_table(1)) {
    EXPECT_EQ(m.pool().refcount(b), 1) << "Each block of a request is held once, by it (take them from pool()).";
  }
  EXPECT_EQ(m.num_free_blocks(), 2);
  EXPECT_EQ(m.pool().num_free(), 2) << "With caching off, the free blocks are the pool's idle blocks.";
}

TEST(KVAdmission, APromptThatExactlyFitsIsAdmitted) {
  KVCacheManager m(3, 4, false);
  const auto computed = m.admit(1, tokens(12));
  ASSERT_TRUE(computed.has_value()) << "12 tokens need 3 blocks and 3 are free: admit must succeed.";
  EXPECT_EQ(m.num_free_blocks(), 0);
  KVCacheManager none(0, 4, false);
  EXPECT_FALSE(none.admit(1, tokens(1)).has_value()) << "A manager of 0 blocks admits nothing.";
}

TEST(KVAdmission, SlotsFollowTheBlockTable) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(2, tokens(6)).has_value()) << kAdmitFails;
  const auto table = m.block_table(2);
  for (int p = 0; p < 6; ++p) {
    EXPECT_EQ(m.slot(2, p), table[static_cast<std::size_t>(p / 4)] * 4 + p % 4)
        << "Token " << p << " of a request lives in block table[" << p / 4 << "] at offset " << p % 4
        << ": slot is that block times block_tokens plus the offset.";
  }
  EXPECT_THROW((void)m.slot(2, 6), std::out_of_range) << "Position 6 of a 6-token request does not exist.";
  EXPECT_THROW((void)m.slot(2, -1), std::out_of_range) << "A negative position does not exist.";
  EXPECT_THROW((void)m.slot(9, 0), std::invalid_argument) << "slot of an unknown request must throw std::invalid_argument.";
}

TEST(KVAdmission, SlotsFollowATableOutOfOrder) {
  // Block tables are rarely in ascending order: blocks come back to the pool in any order.
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(2, tokens(7)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(3, tokens(2)).has_value()) << kAdmitFails;
  m.release(1);
  std::vector<BlockCopy> copies;
  for (int t = 0; t < 3; ++t) ASSERT_TRUE(m.append_token(2, 50 + t, copies)) << "append_token with blocks free must succeed.";
  const auto table = m.block_table(2);
  ASSERT_EQ(table.size(), 3u) << "10 tokens in blocks of 4 need 3 blocks; the table is " << show(table) << ".";
  EXPECT_EQ(std::vector<int>(table.begin(), table.end()), (std::vector<int>{1, 2, 0}))
      << "Request 2 took blocks 1 and 2, then block 0, which request 1 gave back (the pool hands out the block "
         "released last first); its table is " << show(table) << ".";
  for (int p = 0; p < 10; ++p) {
    EXPECT_EQ(m.slot(2, p), table[static_cast<std::size_t>(p / 4)] * 4 + p % 4)
        << "Token " << p << " lives in block table[" << p / 4 << "] = " << table[static_cast<std::size_t>(p / 4)]
        << " at offset " << p % 4 << " (table " << show(table) << "): slot must follow the table, not assume its "
        << "blocks are consecutive.";
  }
  EXPECT_THROW((void)m.slot(2, 10), std::out_of_range) << "Position 10 of a 10-token request does not exist.";
  EXPECT_EQ(m.slot(2, 9), table[2] * 4 + 1);
}

TEST(KVAdmission, AppendTakesABlockOnlyWhenTheLastIsFull) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 100, copies)) << "append_token with blocks free must succeed.";
  EXPECT_EQ(m.block_table(1).size(), 1u) << "The 4th token fits in the first block: no new block yet.";
  EXPECT_EQ(m.num_free_blocks(), 7);
  ASSERT_TRUE(m.append_token(1, 101, copies)) << "append_token with blocks free must succeed.";
  EXPECT_EQ(m.block_table(1).size(), 2u) << "The 5th token starts a second block.";
  EXPECT_EQ(m.num_free_blocks(), 6);
  EXPECT_TRUE(copies.empty()) << "A request that shares nothing never copies a block.";
  EXPECT_EQ(m.num_tokens(1), 5) << "num_tokens counts the prompt and every appended token.";
  EXPECT_EQ(m.stats().copies, 0u);
}

TEST(KVAdmission, ARefusedAdmitChangesNothing) {
  KVCacheManager m(3, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  const std::string before = describe(m, {1, 2});
  EXPECT_FALSE(m.admit(2, tokens(5)).has_value())
      << "5 tokens need 2 blocks and only 1 is free: admit must return std::nullopt.";
  EXPECT_EQ(m.num_free_blocks(), 1) << "A refused admit must take no block, not even the one that was free.";
  EXPECT_EQ(describe(m, {1, 2}), before) << "A refused admit must change nothing at all.";
  EXPECT_THROW((void)m.num_tokens(2), std::invalid_argument) << "A refused request is not admitted.";
  EXPECT_TRUE(m.admit(2, tokens(4)).has_value()) << "The same id can be admitted later, when it fits.";
}

TEST(KVAdmission, AFullManagerRefusesAnAppend) {
  KVCacheManager m(1, 2, false);
  ASSERT_TRUE(m.admit(1, tokens(2)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies{{7, 8}};
  const std::string before = describe(m, {1});
  EXPECT_FALSE(m.append_token(1, 7, copies)) << "No block is free for the third token: append_token returns false.";
  EXPECT_EQ(m.num_tokens(1), 2) << "A refused append_token must not count the token.";
  EXPECT_EQ(describe(m, {1}), before) << "A refused append_token must change nothing.";
  EXPECT_EQ(copies, (std::vector<BlockCopy>{{7, 8}})) << "A refused append_token must leave `copies` as it was.";
}

TEST(KVAdmission, AnAppendTakesTheLastFreeBlock) {
  KVCacheManager m(2, 2, false);
  ASSERT_TRUE(m.admit(1, tokens(2)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies;
  EXPECT_TRUE(m.append_token(1, 2, copies)) << "One block is free for the third token: append_token must take it.";
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_TRUE(m.append_token(1, 3, copies)) << "The fourth token fits in the second block: no block is needed.";
  EXPECT_FALSE(m.append_token(1, 4, copies)) << "The fifth token needs a third block, and none is free.";
}

TEST(KVAdmission, ReleaseGivesEveryBlockBack) {
  KVCacheManager m(6, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(10)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(2, tokens(4)).has_value()) << kAdmitFails;
  m.release(1);
  EXPECT_EQ(m.num_free_blocks(), 5) << "Releasing a 3-block request gives its 3 blocks back.";
  EXPECT_THROW((void)m.block_table(1), std::invalid_argument) << "A released request is unknown.";
  EXPECT_THROW(m.release(1), std::invalid_argument) << "A request released twice is unknown the second time.";
  m.release(2);
  EXPECT_EQ(m.pool().num_free(), 6) << "With every request released and caching off, every block is idle.";
  EXPECT_EQ(m.num_cached_blocks(), 0) << "With prefix caching off, no block is ever cached.";
  EXPECT_TRUE(m.admit(1, tokens(3)).has_value()) << "A released id may be admitted again.";
}

TEST(KVAdmission, ReleaseGoesFromTheLastBlockToTheFirst) {
  KVCacheManager m(6, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(12)).has_value()) << kAdmitFails;
  const std::vector<int> first(m.block_table(1).begin(), m.block_table(1).end());
  m.release(1);
  // The pool's idle blocks are a stack: the block released last is handed out first.
  ASSERT_TRUE(m.admit(2, tokens(12)).has_value()) << kAdmitFails;
  const std::vector<int> second(m.block_table(2).begin(), m.block_table(2).end());
  EXPECT_EQ(second, first)
      << "release must give the blocks back from the last to the first, so that the first block ends on top of "
         "the pool's stack and the next request gets them in the same order; request 1 had " << show(first)
      << ", the next one got " << show(second) << ".";
}

TEST(KVAdmission, WithCachingOffNothingIsCachedOrCounted) {
  KVCacheManager m(8, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(9)).has_value()) << kAdmitFails;
  const auto again = m.admit(2, tokens(9));
  ASSERT_TRUE(again.has_value()) << kAdmitFails;
  EXPECT_EQ(*again, 0) << "With prefix caching off, an identical prompt hits nothing.";
  EXPECT_NE(m.block_table(2)[0], m.block_table(1)[0]) << "With prefix caching off, no block is shared by admit.";
  EXPECT_EQ(m.num_cached_blocks(), 0) << "With prefix caching off, no block is cached.";
  const auto st = m.stats();
  EXPECT_EQ(st.queried_tokens, 0u) << "queried_tokens stays 0 while prefix caching is off.";
  EXPECT_EQ(st.hit_tokens, 0u);
  EXPECT_EQ(st.evictions, 0u);
  m.release(1);
  m.release(2);
  EXPECT_EQ(m.pool().num_free(), 8) << "Without a cache, a released block is idle: no reference stays behind.";
}

TEST(KVAdmission, WithCachingOffABlockATokenFillsIsNotCachedEither) {
  KVCacheManager m(4, 4, false);
  ASSERT_TRUE(m.admit(1, std::vector<int>{7, 7, 7}).has_value()) << kAdmitFails;
  const int block = m.block_table(1)[0];
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 7, copies)) << "The 4th token fits in the prompt's block.";
  EXPECT_EQ(m.num_cached_blocks(), 0)
      << "With prefix caching off, nothing is ever cached, not even a block that a token fills: append_token must "
         "look at prefix_caching as admit does.";
  EXPECT_EQ(m.pool().refcount(block), 1) << "The filled block is held by its request alone: with caching off, no "
                                            "cache takes a reference of its own.";
  m.release(1);
  EXPECT_EQ(m.pool().num_free(), 4) << "Released, the block must be idle in the pool: a reference kept by a cache "
                                       "that is off would hold it forever.";
  ASSERT_TRUE(m.admit(2, std::vector<int>{7, 7, 7, 7, 1}).has_value()) << kAdmitFails;
  EXPECT_EQ(m.block_table(2)[0], block)
      << "The block request 1 gave back last is on top of the pool's stack: the next admit must get it first.";
}

TEST(KVAdmission, MisuseThrowsAndChangesNothing) {
  KVCacheManager m(4, 4, false);
  ASSERT_TRUE(m.admit(1, tokens(4)).has_value()) << kAdmitFails;
  const std::string before = describe(m, {1, 2, 9, 10});
  EXPECT_THROW((void)m.admit(1, tokens(2)), std::invalid_argument) << "An id already admitted must throw.";
  EXPECT_THROW((void)m.admit(1, tokens(40)), std::invalid_argument)
      << "An id already admitted must throw, even with a prompt that would not fit: misuse is no refusal.";
  EXPECT_THROW((void)m.admit(2, std::vector<int>{}), std::invalid_argument) << "An empty prompt must throw.";
  std::vector<BlockCopy> copies;
  EXPECT_THROW((void)m.append_token(9, 1, copies), std::invalid_argument) << "append_token of an unknown id must throw.";
  EXPECT_THROW(m.release(9), std::invalid_argument) << "release of an unknown id must throw.";
  EXPECT_THROW((void)m.num_tokens(9), std::invalid_argument) << "num_tokens of an unknown id must throw.";
  EXPECT_THROW((void)m.block_table(9), std::invalid_argument) << "block_table of an unknown id must throw.";
  EXPECT_EQ(m.num_free_blocks(), 3) << "Every refused call must leave the manager as it was.";
  EXPECT_EQ(describe(m, {1, 2, 9, 10}), before)
      << "Every call that throws must change nothing: request 1 keeps its 4 tokens and its block, and the empty "
         "prompt's id is not admitted.";
}

// A world for the tests of a failing heap: two requests, one of them released.
struct Plain {
  KVCacheManager m{6, 4, false};
  std::vector<int> ids{1, 2, 3, 4};
  bool ok = true;
  std::string why;
  Plain() {
    std::vector<BlockCopy> copies;
    ok = m.admit(1, tokens(6)).has_value() && m.admit(2, tokens(4, 50)).has_value() &&
         m.append_token(1, 7, copies) && m.admit(3, tokens(2, 90)).has_value();
    if (ok) m.release(3);
    why = "admit or append_token failed with blocks free";
  }
};

// A world for a failing heap: a request whose table of 8 blocks is as long as its room, so that
// the next block makes the table grow.
struct Long {
  KVCacheManager m{12, 1, false};
  std::vector<int> ids{1};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Long() { ok = m.admit(1, tokens(8)).has_value(); }
};

TEST(KVAdmission, ACallThatThrowsBadAllocChangesNothing) {
  using alloclab::test::changes_nothing_when_the_heap_fails;
  auto make = [] { return Plain(); };
  int refused = changes_nothing_when_the_heap_fails<Plain>(
      "admit(4, 9 tokens)", make, [](Plain& w) { (void)w.m.admit(4, tokens(9, 200)); },
      [](Plain& w) { EXPECT_EQ(w.m.block_table(4).size(), 3u) << "admit of 9 tokens must take 3 blocks."; });
  EXPECT_GT(refused, 0) << "admit must allocate: it stores the request's tokens and block table.";
  std::vector<BlockCopy> copies;
  changes_nothing_when_the_heap_fails<Plain>(
      "append_token(2, ...) into a new block", make, [&](Plain& w) { (void)w.m.append_token(2, 60, copies); },
      [](Plain& w) { EXPECT_EQ(w.m.block_table(2).size(), 2u) << "The 5th token must take a second block."; });
  changes_nothing_when_the_heap_fails<Plain>(
      "append_token(1, ...) into its last block", make, [&](Plain& w) { (void)w.m.append_token(1, 8, copies); },
      [](Plain& w) { EXPECT_EQ(w.m.num_tokens(1), 8) << "append_token must store the 8th token."; });
  changes_nothing_when_the_heap_fails<Plain>(
      "release(1)", make, [](Plain& w) { w.m.release(1); },
      [](Plain& w) { EXPECT_EQ(w.m.num_free_blocks(), 5) << "release(1) must give its 2 blocks back."; });
  changes_nothing_when_the_heap_fails<Long>(
      "append_token(1, ...) into a 9th block", [] { return Long(); },
      [&](Long& w) { (void)w.m.append_token(1, 8, copies); },
      [](Long& w) { EXPECT_EQ(w.m.block_table(1).size(), 9u) << "The 9th token of 1-token blocks takes a 9th block."; });
  EXPECT_TRUE(copies.empty()) << "Nothing is shared, so nothing is copied.";
}

}  // namespace stage1_admission
