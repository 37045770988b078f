// Stage 3 — prefix caching: a full block is found again by its whole prefix, never by its own
// tokens alone; the last prompt token is always computed; idle blocks go before cached ones,
// and the cached block unused longest goes first.
#include "manager_under_test.hpp"

#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"
#include "kv_test_support.hpp"
#include "prefix_collisions.hpp"

namespace stage3_prefix_caching {

using alloclab::test::kv::BlockCopy;
using alloclab::test::kv::KVCacheManager;
using alloclab::test::describe;
using alloclab::test::show;
using alloclab::test::tokens;

constexpr const char* kAdmitFails = "admit must succeed when enough blocks are free or cached and unused.";
constexpr const char* kAppendFails = "append_token must succeed when a block is free or cached and unused.";

// `front` followed by `back`.
std::vector<int> join(std::vector<int> front, const std::vector<int>& back) {
  front.insert(front.end(), back.begin(), back.end());
  return front;
}

TEST(KVPrefixCaching, ASharedPrefixIsReused) {
  KVCacheManager m(8, 4);
  const auto first = m.admit(1, tokens(10));
  ASSERT_TRUE(first.has_value()) << kAdmitFails;
  EXPECT_EQ(*first, 0) << "Nothing is cached yet: the first prompt hits nothing.";
  EXPECT_EQ(m.num_cached_blocks(), 2) << "The two full blocks of a 10-token prompt become findable; the third, "
                                         "partly filled, does not.";
  const auto computed = m.admit(2, tokens(10));
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 8) << "The two full blocks of the same 10-token prompt are cached: 8 tokens hit.";
  EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]) << "A hit reuses the very block, retained, not copied.";
  EXPECT_EQ(m.block_table(2)[1], m.block_table(1)[1]) << "Both full blocks hit.";
  EXPECT_NE(m.block_table(2)[2], m.block_table(1)[2]) << "The partly filled block is never shared by admit.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[0]), 3) << "Two requests and the cache hold that block.";
  EXPECT_EQ(m.num_free_blocks(), 4) << "8 blocks: 3 for the first request, 1 more for the second.";
  EXPECT_EQ(m.num_cached_blocks(), 2) << "Hits add no key.";
  EXPECT_EQ(m.stats().queried_tokens, 20u) << "queried_tokens counts every prompt token of every successful admit.";
  EXPECT_EQ(m.stats().hit_tokens, 8u) << "hit_tokens counts the tokens admit found cached.";
}

TEST(KVPrefixCaching, PrefixesAreComparedTokenForToken) {
  for (const auto& [a, b] : alloclab::test::kv::kCollisions) {
    KVCacheManager m(4, 3);
    const std::vector<int> first{a[0], a[1], a[2], 7}, second{b[0], b[1], b[2], 7};
    ASSERT_TRUE(m.admit(1, first).has_value()) << kAdmitFails;
    const auto computed = m.admit(2, second);
    ASSERT_TRUE(computed.has_value()) << kAdmitFails;
    EXPECT_EQ(*computed, 0) << "The first blocks " << show(a) << " and " << show(b)
                            << " differ, though a weak 64-bit hash (FNV-1a, or 31 * h + token) gives both one value: "
                               "a key that is only a digest lets one prompt read KV computed for another. The key "
                               "is the prefix, compared token for token.";
    EXPECT_NE(m.block_table(2)[0], m.block_table(1)[0]) << "Two different prefixes must never share a block.";
  }
}

TEST(KVPrefixCaching, ATokenIsAWholeInt) {
  KVCacheManager m(6, 2);
  ASSERT_TRUE(m.admit(1, std::vector<int>{1, 2, 3}).has_value()) << kAdmitFails;
  const auto computed = m.admit(2, std::vector<int>{65537, 2, 3});
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 0) << "Token 65537 is not token 1: a key that keeps 16 bits of each token (65537 = 65536 + 1) "
                             "lets {65537, 2} hit the block of {1, 2}. A token is any int.";
  EXPECT_NE(m.block_table(2)[0], m.block_table(1)[0]) << "Two different prefixes must never share a block.";
  const auto again = m.admit(3, std::vector<int>{65537, 2, 4});
  ASSERT_TRUE(again.has_value()) << kAdmitFails;
  EXPECT_EQ(*again, 2) << "{65537, 2} is cached now, whole, and hits.";
}

TEST(KVPrefixCaching, TheLastPromptTokenIsAlwaysComputed) {
  KVCacheManager m(16, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  const auto computed = m.admit(2, tokens(8));
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 4)
      << "Both blocks of an 8-token prompt are cached, but at most (8 - 1) / 4 = 1 may hit: the last token's "
         "logits give the first generated token, so its block is computed again.";
  const auto four = m.admit(3, tokens(4));
  ASSERT_TRUE(four.has_value()) << kAdmitFails;
  EXPECT_EQ(*four, 0) << "A 4-token prompt whose one block is cached may hit (4 - 1) / 4 = 0 blocks.";
  const auto nine = m.admit(4, tokens(9));
  ASSERT_TRUE(nine.has_value()) << kAdmitFails;
  EXPECT_EQ(*nine, 8) << "A 9-token prompt may hit (9 - 1) / 4 = 2 blocks, and both are cached.";
  EXPECT_EQ(m.stats().hit_tokens, 12u);
  EXPECT_EQ(m.stats().queried_tokens, 29u);
}

TEST(KVPrefixCaching, ABlockHitsOnlyWithEverythingBeforeIt) {
  KVCacheManager m(12, 4);
  std::vector<int> a = tokens(9);
  std::vector<int> b = tokens(9);
  b[0] = 1000;  // the second block's own tokens are the same, its prefix is not
  ASSERT_TRUE(m.admit(1, a).has_value()) << kAdmitFails;
  const auto computed = m.admit(2, b);
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 0) << "The KV of a token depends on every token before it: a block whose own tokens "
                             "match but whose prefix differs must not hit.";
  std::vector<int> c = tokens(13);
  c[5] = 1000;  // the first block is the same, the second differs, the third's own tokens are the same
  const auto partly = m.admit(3, c);
  ASSERT_TRUE(partly.has_value()) << kAdmitFails;
  EXPECT_EQ(*partly, 4) << "Only the first block of this prompt is cached with everything before it.";
  EXPECT_EQ(m.block_table(3)[0], m.block_table(1)[0]);
  EXPECT_NE(m.block_table(3)[1], m.block_table(1)[1]);
  const auto shifted = m.admit(4, tokens(5, 4));  // its first block holds the tokens of a's second block
  ASSERT_TRUE(shifted.has_value()) << kAdmitFails;
  EXPECT_EQ(*shifted, 0) << "Tokens 4, 5, 6, 7 at the start of a prompt are not tokens 4, 5, 6, 7 after 0, 1, 2, 3: "
                            "the key of a block is its whole prefix, so this prompt's first block must not hit.";
}

TEST(KVPrefixCaching, ReleasedBlocksStayFindableAndCountAsFree) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(9)).has_value()) << kAdmitFails;
  const std::vector<int> table(m.block_table(1).begin(), m.block_table(1).end());
  EXPECT_EQ(m.num_free_blocks(), 1) << "Cached blocks a request uses are not free.";
  m.release(1);
  EXPECT_EQ(m.num_free_blocks(), 4) << "Cached blocks no request uses count as free.";
  EXPECT_EQ(m.num_cached_blocks(), 2) << "The two full blocks stay findable after the release.";
  EXPECT_EQ(m.pool().refcount(table[0]), 1) << "A cached block keeps one reference, the cache's own.";
  EXPECT_EQ(m.pool().refcount(table[2]), 0) << "The partly filled block was never cached: it is idle.";
  EXPECT_EQ(m.pool().num_free(), 2) << "Idle in the pool: the partly filled block and the one never used.";
  const auto computed = m.admit(2, tokens(9));
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 8);
  EXPECT_EQ(m.pool().refcount(table[0]), 2) << "A hit retains the cached block: the cache and the request.";
  EXPECT_EQ(m.num_free_blocks(), 1) << "Cached blocks in use again are not free.";
  EXPECT_EQ(m.stats().evictions, 0u) << "Blocks were idle: nothing was evicted.";
}

TEST(KVPrefixCaching, IdleBlocksGoBeforeCachedOnes) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  m.release(1);
  ASSERT_TRUE(m.admit(2, tokens(8, 100)).has_value()) << kAdmitFails;
  EXPECT_EQ(m.stats().evictions, 0u) << "Two blocks were idle: nothing cached may be evicted to admit 2 blocks.";
  EXPECT_EQ(m.num_cached_blocks(), 4);
  const auto hit = m.admit(3, tokens(5));
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 4) << "The first prompt's blocks were not evicted, so its prefix still hits.";
}

TEST(KVPrefixCaching, TheBlockUnusedLongestIsEvictedFirst) {
  KVCacheManager m(2, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  m.release(1);  // the second block becomes unused first
  ASSERT_TRUE(m.admit(2, tokens(3, 100)).has_value()) << kAdmitFails;
  EXPECT_EQ(m.stats().evictions, 1u) << "No block was idle: one cached block had to be evicted.";
  EXPECT_EQ(m.num_cached_blocks(), 1) << "An evicted block is no longer findable.";
  const auto computed = m.admit(3, tokens(9));
  EXPECT_FALSE(computed.has_value()) << "One block is in use by request 2, so 3 blocks cannot be had.";
  m.release(2);
  const auto again = m.admit(4, tokens(5));
  ASSERT_TRUE(again.has_value()) << kAdmitFails;
  EXPECT_EQ(*again, 4) << "A release goes from the last block to the first, so the end of a prompt is evicted "
                          "before its beginning: the first block must still hit.";
}

TEST(KVPrefixCaching, NewBlocksAreTakenInTokenOrder) {
  // The chapter's worked example: 8 blocks of 4 tokens, prompt A of 12 tokens, prompt B of 8.
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(12)).has_value()) << kAdmitFails;       // [0, 1, 2]
  ASSERT_TRUE(m.admit(2, tokens(8, 100)).has_value()) << kAdmitFails;   // [3, 4]
  m.release(1);                                                         // unused: 2 1 0
  m.release(2);                                                         // unused: 2 1 0 4 3
  ASSERT_TRUE(m.admit(3, tokens(20, 200)).has_value()) << kAdmitFails;
  const std::vector<int> third(m.block_table(3).begin(), m.block_table(3).end());
  EXPECT_EQ(third, (std::vector<int>{5, 6, 7, 2, 1}))
      << "A call takes its blocks one at a time, for the request's blocks in token order: the three idle blocks "
         "first, as the pool's stack hands them out (5, 6, 7), then the cached blocks unused longest (2, then 1). "
         "Request 3's table is " << show(third) << ".";
  const auto hit = m.admit(4, join(tokens(4), tokens(5, 300)));
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 4) << "The prompt starts with prompt A's first block, block 0, which the eviction spared.";
  const std::vector<int> fourth(m.block_table(4).begin(), m.block_table(4).end());
  EXPECT_EQ(fourth, (std::vector<int>{0, 4, 3}))
      << "The hit comes first, then the new blocks in token order: nothing is idle, so B's blocks are evicted, the "
         "one unused longest first (4, then 3). Request 4's table is " << show(fourth) << ".";
  EXPECT_EQ(m.stats().evictions, 4u);
  EXPECT_FALSE(m.admit(5, tokens(1, 400)).has_value()) << "Every block is in use: a fifth request is refused.";
}

TEST(KVPrefixCaching, ABlockAnotherRequestHoldsStaysOffTheUnusedList) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;  // two full blocks, both cached
  m.fork(1, 2);
  const std::vector<int> shared(m.block_table(1).begin(), m.block_table(1).end());
  m.release(1);
  ASSERT_EQ(m.num_free_blocks(), 2)
      << "Request 2 still holds both blocks of request 1: only the two idle blocks are free. A cached block becomes "
         "unused (and free) only when no request holds it any more, its count down to the cache's 1, not whenever "
         "one of its holders releases it.";
  EXPECT_EQ(m.pool().refcount(shared[0]), 2) << "Request 2 and the cache hold the first block.";
  EXPECT_FALSE(m.admit(3, tokens(12, 100)).has_value())
      << "12 tokens need 3 blocks and only the 2 idle ones can be had: request 2's blocks cannot be evicted.";
  ASSERT_TRUE(m.admit(4, tokens(8, 100)).has_value()) << kAdmitFails;
  EXPECT_EQ(m.stats().evictions, 0u) << "The two idle blocks were enough: nothing is evicted.";
  EXPECT_EQ(std::vector<int>(m.block_table(2).begin(), m.block_table(2).end()), shared);
  m.release(2);
  EXPECT_EQ(m.num_free_blocks(), 2) << "Now no request holds request 1's blocks: they are unused, cached and free.";
  m.release(4);
  EXPECT_EQ(m.num_free_blocks(), 4);
  const auto hit = m.admit(5, tokens(9));
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 8) << "Both blocks of the first prompt stayed findable.";
}

TEST(KVPrefixCaching, AHitMakesABlockRecentlyUsedAgain) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(8, 0)).has_value()) << kAdmitFails;  // blocks a0 a1
  m.release(1);                                                      // unused: a1 a0
  ASSERT_TRUE(m.admit(2, tokens(8, 100)).has_value()) << kAdmitFails;  // the two idle blocks: b0 b1
  m.release(2);                                                        // unused: a1 a0 b1 b0
  EXPECT_EQ(m.stats().evictions, 0u);
  const auto hit = m.admit(3, tokens(5, 0));  // hits a0 and evicts a1, the block unused longest
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 4);
  EXPECT_EQ(m.stats().evictions, 1u) << "Nothing was idle: the second block took the block unused longest.";
  m.release(3);  // a0 becomes unused again, after b1 and b0: unused b1 b0 a0
  ASSERT_TRUE(m.admit(4, tokens(9, 200)).has_value()) << kAdmitFails;  // 1 idle block, then b1 and b0 evicted
  EXPECT_EQ(m.stats().evictions, 3u);
  m.release(4);
  const auto a = m.admit(5, tokens(5, 0));
  ASSERT_TRUE(a.has_value()) << kAdmitFails;
  EXPECT_EQ(*a, 4) << "The hit of request 3 made the first prompt's first block recently used: the blocks of the "
                      "second prompt, unused since before that, must have been evicted first.";
  m.release(5);
  const auto b = m.admit(6, tokens(5, 100));
  ASSERT_TRUE(b.has_value()) << kAdmitFails;
  EXPECT_EQ(*b, 0) << "The second prompt's blocks were the ones unused longest, so they were evicted.";
}

TEST(KVPrefixCaching, AHitTakesTheBlockOffTheUnusedListOnce) {
  KVCacheManager m(3, 4);
  ASSERT_TRUE(m.admit(1, tokens(4, 0)).has_value()) << kAdmitFails;  // block 0, cached
  m.release(1);                                                      // block 0 unused
  ASSERT_TRUE(m.admit(2, tokens(4, 100)).has_value()) << kAdmitFails;  // block 1, cached
  m.release(2);                                                        // block 1 unused, after block 0
  const auto hit = m.admit(3, tokens(5, 100));
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 4) << "The prompt's first block is cached.";
  EXPECT_EQ(m.num_free_blocks(), 1)
      << "The hit block is in use again: only the other cached block counts as free (the idle block went to the "
         "prompt's second block).";
  const auto again = m.admit(4, tokens(5, 100));
  ASSERT_TRUE(again.has_value())
      << "A second hit on a block already in use needs one more block, and one cached block is unused: admit must "
         "evict it. A block taken off the unused list by the first hit must not count against the second.";
  EXPECT_EQ(*again, 4);
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_EQ(m.stats().evictions, 1u);
  m.release(3);
  m.release(4);
  EXPECT_EQ(m.num_free_blocks(), 3) << "Every block is free once both requests are released.";
}

TEST(KVPrefixCaching, AnEvictedBlockIsNoLongerCached) {
  KVCacheManager m(2, 4);
  ASSERT_TRUE(m.admit(1, tokens(4)).has_value()) << kAdmitFails;
  m.release(1);  // its block cached, unused
  ASSERT_TRUE(m.admit(2, tokens(3, 100)).has_value()) << kAdmitFails;  // the idle block
  ASSERT_TRUE(m.admit(3, tokens(2, 200)).has_value()) << "admit must evict the unused cached block.";
  EXPECT_EQ(m.num_cached_blocks(), 0) << "The evicted block is no longer findable.";
  m.fork(3, 4);
  m.release(3);
  EXPECT_EQ(m.num_free_blocks(), 0)
      << "The evicted block now holds request 3's partly filled block, and request 4 still uses it: it is not cached "
         "any more, so dropping to one reference must not make it free.";
  EXPECT_EQ(m.pool().refcount(m.block_table(4)[0]), 1);
  m.release(4);
  EXPECT_EQ(m.pool().num_free(), 1) << "Released by its last request, an evicted block is idle, not cached.";
}

TEST(KVPrefixCaching, AHitOnAnUnusedBlockIsNotFree) {
  KVCacheManager m(2, 4);
  ASSERT_TRUE(m.admit(1, tokens(5)).has_value()) << kAdmitFails;
  m.release(1);
  const std::string before = describe(m, {1, 2});
  EXPECT_FALSE(m.admit(2, tokens(9)).has_value())
      << "9 tokens need 3 blocks and only 2 exist; the hit on the first does not make it free twice.";
  EXPECT_EQ(describe(m, {1, 2}), before) << "A refused admit changes nothing.";
  const auto computed = m.admit(3, tokens(5));
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 4);
}

TEST(KVPrefixCaching, AHitOnAnUnusedBlockCountsExactly) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(5)).has_value()) << kAdmitFails;
  m.release(1);  // one cached block unused, three idle
  EXPECT_FALSE(m.admit(2, tokens(17)).has_value())
      << "17 tokens need 5 blocks; with the hit on the cached block, 4 more are needed and only 3 are idle.";
  EXPECT_EQ(m.num_cached_blocks(), 1) << "A refused admit evicts nothing.";
  const auto fits = m.admit(3, tokens(13));
  ASSERT_TRUE(fits.has_value()) << "13 tokens need 4 blocks: the cached one hits and the 3 idle blocks hold the rest.";
  EXPECT_EQ(*fits, 4);
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_EQ(m.stats().evictions, 0u);
}

TEST(KVPrefixCaching, ARefusedAdmitEvictsNothingAndCountsNothing) {
  KVCacheManager m(3, 4);
  ASSERT_TRUE(m.admit(1, tokens(9)).has_value()) << kAdmitFails;
  m.release(1);  // two cached blocks unused, one idle
  ASSERT_TRUE(m.admit(2, tokens(2, 500)).has_value()) << kAdmitFails;  // takes the idle block
  const std::string before = describe(m, {1, 2, 3});
  EXPECT_FALSE(m.admit(3, tokens(12, 300)).has_value()) << "3 blocks are needed and only 2 are free.";
  EXPECT_EQ(describe(m, {1, 2, 3}), before)
      << "A refused admit must change nothing at all: no eviction (the cached prefix must still hit), and no stats "
         "(only a successful admit counts its prompt).";
  EXPECT_THROW((void)m.admit(2, tokens(9)), std::invalid_argument);
  EXPECT_EQ(describe(m, {1, 2, 3}), before) << "An admit that throws must change nothing, stats included.";
  m.release(2);
  const auto hit = m.admit(4, tokens(9));
  ASSERT_TRUE(hit.has_value()) << kAdmitFails;
  EXPECT_EQ(*hit, 8) << "The cached prefix was not evicted by the refused admit.";
  EXPECT_EQ(m.stats().queried_tokens, 20u) << "Only the successful admits count: 9 + 2 + 9 tokens.";
}

TEST(KVPrefixCaching, BlocksFilledByDecodingAreCached) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies;
  EXPECT_EQ(m.num_cached_blocks(), 0) << "A partly filled block is not findable.";
  ASSERT_TRUE(m.append_token(1, 3, copies)) << kAppendFails;
  EXPECT_EQ(m.num_cached_blocks(), 1) << "The token that fills a block makes the block findable.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[0]), 2) << "The cache holds a reference of its own on the block.";
  m.release(1);
  const auto computed = m.admit(2, tokens(6));
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 4);
  EXPECT_EQ(m.stats().queried_tokens, 9u) << "Queried tokens count every prompt token of every successful admit.";
  EXPECT_EQ(m.stats().hit_tokens, 4u);
}

TEST(KVPrefixCaching, ABlockATokenFillsIsCachedAfterItsPrefixWasEvicted) {
  KVCacheManager m(3, 2);
  ASSERT_TRUE(m.admit(1, std::vector<int>{1, 2}).has_value()) << kAdmitFails;  // its block holds key {1, 2}
  ASSERT_TRUE(m.admit(2, std::vector<int>{1, 2}).has_value()) << kAdmitFails;  // the same key: not cached
  m.release(1);                                                                  // key {1, 2} unused
  ASSERT_TRUE(m.admit(3, std::vector<int>{9}).has_value()) << kAdmitFails;       // the last idle block
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 3, copies)) << kAppendFails;  // evicts key {1, 2}
  EXPECT_EQ(m.num_cached_blocks(), 0) << "The new block evicted the only cached block.";
  ASSERT_TRUE(m.append_token(2, 4, copies)) << kAppendFails;
  EXPECT_EQ(m.num_cached_blocks(), 1)
      << "Token 4 fills request 2's second block: it becomes findable under {1, 2, 3, 4} although {1, 2} is no "
         "longer cached. The contract caches every block a token fills (one block per key); a prompt hits it again "
         "once a block holds {1, 2} again.";
  EXPECT_EQ(m.pool().refcount(m.block_table(2)[1]), 2) << "The request and the cache hold the filled block.";
}

TEST(KVPrefixCaching, ADecodedBlockIsKeyedByTheGeneratedTokens) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(6)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 77, copies)) << kAppendFails;
  ASSERT_TRUE(m.append_token(1, 78, copies)) << kAppendFails;
  EXPECT_EQ(m.num_cached_blocks(), 2);
  const auto other = m.admit(2, tokens(9));
  ASSERT_TRUE(other.has_value()) << kAdmitFails;
  EXPECT_EQ(*other, 4) << "The second block holds tokens 4, 5, 77, 78: a prompt with 6, 7 there must not hit it.";
  const auto same = m.admit(3, join(tokens(6), {77, 78, 79}));
  ASSERT_TRUE(same.has_value()) << kAdmitFails;
  EXPECT_EQ(*same, 8) << "A prompt that repeats the prompt and the generated tokens hits both blocks.";
  EXPECT_EQ(m.block_table(3)[1], m.block_table(1)[1]);
}

TEST(KVPrefixCaching, OneBlockPerKey) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.admit(2, tokens(8)).has_value()) << kAdmitFails;  // its second block is computed again
  EXPECT_EQ(m.num_cached_blocks(), 2) << "The second prompt's second block has the key of a cached block: one block "
                                         "per key, so it is not cached.";
  EXPECT_EQ(m.pool().refcount(m.block_table(2)[1]), 1) << "An uncached block is held by its request alone.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[1]), 2) << "The first block of the key keeps it.";
  m.release(2);
  m.release(1);
  EXPECT_EQ(m.num_free_blocks(), 8) << "Every block is free again.";
  EXPECT_EQ(m.pool().num_free(), 6) << "The two cached blocks keep the cache's reference; the others are idle.";
}

TEST(KVPrefixCaching, EveryFullPromptBlockBecomesFindable) {
  KVCacheManager m(4, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.admit(1, std::vector<int>{1, 2}).has_value()) << kAdmitFails;   // block A, key {1, 2}
  ASSERT_TRUE(m.admit(2, std::vector<int>{1, 2}).has_value()) << kAdmitFails;   // block A', the same key: not cached
  ASSERT_TRUE(m.append_token(2, 3, copies)) << kAppendFails;
  ASSERT_TRUE(m.append_token(2, 4, copies)) << kAppendFails;    // block B, key {1, 2, 3, 4}
  EXPECT_EQ(m.num_cached_blocks(), 2);
  m.release(1);                                                 // A unused
  ASSERT_TRUE(m.admit(3, std::vector<int>{100, 101, 102}).has_value()) << kAdmitFails;  // the idle block, then A evicted
  EXPECT_EQ(m.stats().evictions, 1u);
  m.release(2);  // B unused, A' idle
  m.release(3);  // the full block of request 3 unused, its last block idle
  // Key {1, 2} is gone, key {1, 2, 3, 4} is still held by B, which this admit evicts first.
  const auto computed = m.admit(4, std::vector<int>{1, 2, 3, 4, 5});
  ASSERT_TRUE(computed.has_value()) << kAdmitFails;
  EXPECT_EQ(*computed, 0) << "The first block of the prompt is not cached, so no block may hit, however many "
                             "after it are: the hits are the prompt's leading cached blocks.";
  EXPECT_EQ(m.stats().evictions, 2u) << "Two blocks were idle and three were needed: one eviction.";
  EXPECT_EQ(m.num_cached_blocks(), 3)
      << "Every full prompt block becomes findable: {1, 2} and {1, 2, 3, 4} now belong to request 4's blocks (the "
         "block that held the second was evicted by this very admit), besides request 3's.";
  m.release(4);
  const auto again = m.admit(5, std::vector<int>{1, 2, 3, 4, 5});
  ASSERT_TRUE(again.has_value()) << kAdmitFails;
  EXPECT_EQ(*again, 4) << "Both full blocks of the prompt must hit after it was admitted once.";
}

TEST(KVPrefixCaching, AFullCachedLastBlockIsNeverCopied) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value()) << kAdmitFails;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 8, copies)) << kAppendFails;
  EXPECT_TRUE(copies.empty()) << "The last block is full (and held by the cache too): the 9th token takes a new "
                                 "block, and nothing is copied.";
  EXPECT_EQ(m.block_table(1).size(), 3u);
  ASSERT_TRUE(m.admit(2, tokens(6, 50)).has_value()) << kAdmitFails;
  ASSERT_TRUE(m.append_token(2, 1, copies)) << kAppendFails;
  EXPECT_TRUE(copies.empty()) << "A partly filled block held by one request is its own, cache or not.";
  EXPECT_EQ(m.stats().copies, 0u);
}

TEST(KVPrefixCaching, AppendTokenEvictsWhenNothingIsIdle) {
  KVCacheManager m(3, 4);
  ASSERT_TRUE(m.admit(1, tokens(4)).has_value()) << kAdmitFails;
  m.release(1);  // one cached block unused
  ASSERT_TRUE(m.admit(2, tokens(6, 100)).has_value()) << kAdmitFails;  // the two idle blocks
  m.fork(2, 3);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(3, 7, copies)) << "The copy may evict the cached block no request uses.";
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(m.stats().evictions, 1u) << "Nothing was idle: the copy took the cached block.";
  EXPECT_EQ(m.stats().copies, 1u);
  EXPECT_EQ(m.num_free_blocks(), 0);
  ASSERT_TRUE(m.append_token(3, 8, copies)) << kAppendFails;
  EXPECT_EQ(m.num_cached_blocks(), 2) << "The token that fills the copy makes it findable, under the child's tokens.";
  EXPECT_FALSE(m.append_token(3, 9, copies)) << "Nothing is idle and every cached block is in use.";
  const auto hit = m.admit(4, tokens(5));
  EXPECT_FALSE(hit.has_value()) << "The first prompt's block was evicted, and no block is free.";
}

TEST(KVPrefixCaching, ATokenThatFillsACopyCachesTheCopy) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, std::vector<int>{1, 2, 3}).has_value()) << kAdmitFails;
  m.fork(1, 2);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(2, 40, copies)) << kAppendFails;
  ASSERT_EQ(copies.size(), 1u) << "The child writes into the shared, partly filled block: one copy.";
  const int source = copies[0].src, copy = copies[0].dst;
  EXPECT_EQ(m.num_cached_blocks(), 1) << "Token 40 fills the child's copy: the copy becomes findable.";
  EXPECT_EQ(m.pool().refcount(copy), 2)
      << "The child and the cache hold the copy: the block that token 40 filled is the copy, whose KV is that of "
         "1, 2, 3, 40, so the cache's key {1, 2, 3, 40} must name the copy, not the block it was copied from.";
  EXPECT_EQ(m.pool().refcount(source), 1) << "The source is the parent's alone: it never holds token 40.";
  ASSERT_TRUE(m.append_token(1, 50, copies)) << kAppendFails;
  EXPECT_EQ(copies.size(), 1u) << "The parent holds its block alone again: no copy.";
  EXPECT_EQ(m.num_cached_blocks(), 2) << "Token 50 fills the parent's block: a second key, {1, 2, 3, 50}.";
  EXPECT_EQ(m.pool().refcount(source), 2) << "The parent and the cache hold the source, under one key only.";
  const auto child_like = m.admit(3, std::vector<int>{1, 2, 3, 40, 9});
  ASSERT_TRUE(child_like.has_value()) << kAdmitFails;
  EXPECT_EQ(*child_like, 4);
  EXPECT_EQ(m.block_table(3)[0], copy) << "A prompt that starts like the child must hit the child's copy, the block "
                                          "whose KV was computed for 1, 2, 3, 40.";
  const auto parent_like = m.admit(4, std::vector<int>{1, 2, 3, 50, 9});
  ASSERT_TRUE(parent_like.has_value()) << kAdmitFails;
  EXPECT_EQ(*parent_like, 4);
  EXPECT_EQ(m.block_table(4)[0], source);
  for (const int r : {1, 2, 3, 4}) m.release(r);
  EXPECT_EQ(m.num_free_blocks(), 8) << "Every block is free once every request is released.";
  EXPECT_EQ(m.pool().num_free(), 6) << "Only the two cached blocks keep a reference, the cache's own.";
}

// A world for the tests of a failing heap: no block idle, two cached blocks unused (the older
// one first), a parent and its child sharing a block with one free slot.
struct Busy {
  KVCacheManager m{5, 4};
  std::vector<int> ids{1, 2, 3, 4, 5, 6, 7};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Busy() {
    ok = m.admit(1, tokens(11)).has_value();            // 3 blocks, 2 cached
    ok = ok && m.admit(2, tokens(6, 100)).has_value();  // 2 blocks, 1 cached
    if (!ok) return;
    m.release(2);  // its first block unused, its second idle
    ok = m.admit(3, tokens(4, 300)).has_value();  // the idle block, cached
    if (!ok) return;
    m.release(3);  // unused: request 2's block, then request 3's
    m.fork(1, 4);
  }
};

// A world with no block idle, one cached block unused, and a request whose blocks are full and
// whose table is as long as its room: its next token evicts, and its table grows.
struct Evicting {
  KVCacheManager m{3, 2};
  std::vector<int> ids{1, 2};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Evicting() {
    ok = m.admit(1, std::vector<int>{1, 2}).has_value();
    if (!ok) return;
    m.release(1);  // its block cached and unused
    ok = m.admit(2, tokens(4, 10)).has_value();  // the two idle blocks, both full
  }
};

TEST(KVPrefixCaching, ACallThatThrowsBadAllocChangesNothing) {
  using alloclab::test::changes_nothing_when_the_heap_fails;
  auto make = [] { return Busy(); };
  int refused = changes_nothing_when_the_heap_fails<Busy>(
      "admit of a prompt that hits an unused block and evicts another", make,
      [](Busy& w) { (void)w.m.admit(5, tokens(6, 100)); },
      [](Busy& w) {
        EXPECT_EQ(w.m.stats().hit_tokens, 4u) << "The prompt must hit request 2's cached block.";
        EXPECT_EQ(w.m.stats().evictions, 1u) << "Its second block must evict request 3's.";
      });
  EXPECT_GT(refused, 0) << "admit must allocate.";
  changes_nothing_when_the_heap_fails<Busy>(
      "admit of a prompt that evicts two blocks and caches two", make,
      [](Busy& w) { (void)w.m.admit(6, tokens(8, 500)); },
      [](Busy& w) {
        EXPECT_EQ(w.m.stats().evictions, 2u);
        EXPECT_EQ(w.m.num_cached_blocks(), 4) << "Two new keys, two evicted: still 4 cached blocks.";
      });
  changes_nothing_when_the_heap_fails<Busy>(
      "admit of a prompt that hits two blocks in use", make, [](Busy& w) { (void)w.m.admit(7, tokens(9)); },
      [](Busy& w) { EXPECT_EQ(w.m.stats().hit_tokens, 8u) << "The prompt must hit request 1's two full blocks."; });
  std::vector<BlockCopy> copies;
  changes_nothing_when_the_heap_fails<Busy>(
      "append_token that copies a shared block, evicts, and fills the copy", make,
      [&](Busy& w) {
        copies.clear();
        try {
          (void)w.m.append_token(4, 11, copies);
        } catch (const std::bad_alloc&) {
          EXPECT_TRUE(copies.empty()) << "An append_token that throws must not leave a copy in `copies`.";
          throw;
        }
      },
      [&](Busy& w) {
        EXPECT_EQ(copies.size(), 1u);
        EXPECT_EQ(w.m.stats().evictions, 1u);
        EXPECT_EQ(w.m.num_cached_blocks(), 4) << "The filled copy is cached, the evicted block is not: still 4.";
      });
  changes_nothing_when_the_heap_fails<Evicting>(
      "append_token that evicts for a new block", [] { return Evicting(); },
      [&](Evicting& w) { (void)w.m.append_token(2, 14, copies); },
      [](Evicting& w) {
        EXPECT_EQ(w.m.stats().evictions, 1u) << "No block is idle: the new block must evict the unused cached one.";
        EXPECT_EQ(w.m.block_table(2).size(), 3u);
      });
  changes_nothing_when_the_heap_fails<Busy>(
      "fork(1, 5)", make, [](Busy& w) { w.m.fork(1, 5); },
      [](Busy& w) { EXPECT_EQ(w.m.num_tokens(5), 11); });
  changes_nothing_when_the_heap_fails<Busy>(
      "release(1) and release(4)", make,
      [](Busy& w) {
        w.m.release(4);
        w.m.release(1);
      },
      [](Busy& w) { EXPECT_EQ(w.m.num_free_blocks(), 5); });
}

// A world with idle blocks: a parent and its child share a partly filled block that one more
// token fills.
struct Roomy {
  KVCacheManager m{8, 4};
  std::vector<int> ids{1, 2, 3};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Roomy() {
    ok = m.admit(1, tokens(7)).has_value();
    if (ok) m.fork(1, 2);
  }
};

// A world whose first key comes from append_token: admit cached nothing before it.
struct Fresh {
  KVCacheManager m{4, 2};
  std::vector<int> ids{1};
  bool ok = true;
  std::string why = "admit failed with blocks free";
  Fresh() { ok = m.admit(1, std::vector<int>{5}).has_value(); }
};

TEST(KVPrefixCaching, ACallThatThrowsBadAllocWithIdleBlocksChangesNothing) {
  using alloclab::test::changes_nothing_when_the_heap_fails;
  auto make = [] { return Roomy(); };
  std::vector<BlockCopy> copies;
  changes_nothing_when_the_heap_fails<Roomy>(
      "append_token that copies a shared block into an idle one and fills the copy", make,
      [&](Roomy& w) { (void)w.m.append_token(2, 7, copies); },
      [&](Roomy& w) {
        EXPECT_EQ(w.m.num_cached_blocks(), 2) << "The filled copy must become findable.";
        EXPECT_EQ(w.m.stats().evictions, 0u) << "Blocks were idle: nothing may be evicted.";
      });
  changes_nothing_when_the_heap_fails<Roomy>(
      "admit of a prompt that hits one block and takes idle ones", make,
      [](Roomy& w) { (void)w.m.admit(3, tokens(13)); },
      [](Roomy& w) {
        EXPECT_EQ(w.m.stats().hit_tokens, 4u) << "The prompt must hit the first block.";
        EXPECT_EQ(w.m.num_cached_blocks(), 3) << "Its two new full blocks must become findable.";
      });  changes_nothing_when_the_heap_fails<Fresh>(
      "append_token that fills the first block a fresh manager caches", [] { return Fresh(); },
      [&](Fresh& w) { (void)w.m.append_token(1, 6, copies); },
      [](Fresh& w) { EXPECT_EQ(w.m.num_cached_blocks(), 1) << "The filled block must become findable."; });
}

}  // namespace stage3_prefix_caching
