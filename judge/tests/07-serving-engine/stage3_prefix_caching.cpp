// Stage 3 — prefix caching: a full block is found again by its whole prefix, never by its own
// tokens alone; the last prompt token is always computed; idle blocks go before cached ones,
// and the cached block unused longest goes first.
#include "kv_cache_manager.hpp"

#include <numeric>
#include <optional>
#include <vector>

#include "alloclab_test.hpp"

namespace stage3_prefix_caching {

using alloclab::BlockCopy;
using alloclab::KVCacheManager;

std::vector<int> tokens(int n, int first = 0) {
  std::vector<int> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), first);
  return out;
}

TEST(KVPrefixCaching, ASharedPrefixIsReused) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(10)).has_value());
  const auto computed = m.admit(2, tokens(10));
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 8) << "The two full blocks of the same 10-token prompt are cached: 8 tokens hit.";
  EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]) << "A hit reuses the very block, retained, not copied.";
  EXPECT_EQ(m.pool().refcount(m.block_table(1)[0]), 3) << "Two requests and the cache hold that block.";
}

TEST(KVPrefixCaching, TheLastPromptTokenIsAlwaysComputed) {
  KVCacheManager m(8, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value());
  const auto computed = m.admit(2, tokens(8));
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 4)
      << "Both blocks of an 8-token prompt are cached, but at most (8 - 1) / 4 = 1 may hit: the last token's "
         "logits give the first generated token, so its block is computed again.";
}

TEST(KVPrefixCaching, ABlockHitsOnlyWithEverythingBeforeIt) {
  KVCacheManager m(8, 4);
  std::vector<int> a = tokens(9);
  std::vector<int> b = tokens(9);
  b[0] = 1000;  // the second block's own tokens are the same, its prefix is not
  ASSERT_TRUE(m.admit(1, a).has_value());
  const auto computed = m.admit(2, b);
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 0) << "The KV of a token depends on every token before it: a block whose own tokens "
                             "match but whose prefix differs must not hit.";
}

TEST(KVPrefixCaching, ReleasedBlocksStayFindableAndCountAsFree) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(9)).has_value());
  m.release(1);
  EXPECT_EQ(m.num_free_blocks(), 4) << "Cached blocks no request uses count as free.";
  EXPECT_EQ(m.num_cached_blocks(), 2) << "The two full blocks stay findable after the release.";
  const auto computed = m.admit(2, tokens(9));
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 8);
}

TEST(KVPrefixCaching, IdleBlocksGoBeforeCachedOnes) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value());
  m.release(1);
  ASSERT_TRUE(m.admit(2, tokens(8, 100)).has_value());
  EXPECT_EQ(m.stats().evictions, 0u) << "Two blocks were idle: nothing cached may be evicted to admit 2 blocks.";
  EXPECT_EQ(m.num_cached_blocks(), 4);
}

TEST(KVPrefixCaching, TheBlockUnusedLongestIsEvictedFirst) {
  KVCacheManager m(2, 4);
  ASSERT_TRUE(m.admit(1, tokens(8)).has_value());
  m.release(1);  // the second block becomes unused first
  ASSERT_TRUE(m.admit(2, tokens(3, 100)).has_value());
  EXPECT_EQ(m.stats().evictions, 1u);
  const auto computed = m.admit(3, tokens(9));
  EXPECT_FALSE(computed.has_value()) << "One block is in use by request 2, so 3 blocks cannot be had.";
  m.release(2);
  const auto again = m.admit(4, tokens(5));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, 4) << "A release goes from the last block to the first, so the end of a prompt is evicted "
                          "before its beginning: the first block must still hit.";
}

TEST(KVPrefixCaching, AHitOnAnUnusedBlockIsNotFree) {
  KVCacheManager m(2, 4);
  ASSERT_TRUE(m.admit(1, tokens(5)).has_value());
  m.release(1);
  EXPECT_FALSE(m.admit(2, tokens(9)).has_value())
      << "9 tokens need 3 blocks and only 2 exist; the hit on the first does not make it free twice.";
  const auto computed = m.admit(3, tokens(5));
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 4);
}

TEST(KVPrefixCaching, BlocksFilledByDecodingAreCached) {
  KVCacheManager m(4, 4);
  ASSERT_TRUE(m.admit(1, tokens(3)).has_value());
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(m.append_token(1, 3, copies));
  EXPECT_EQ(m.num_cached_blocks(), 1) << "The token that fills a block makes the block findable.";
  m.release(1);
  const auto computed = m.admit(2, tokens(6));
  ASSERT_TRUE(computed.has_value());
  EXPECT_EQ(*computed, 4);
  EXPECT_EQ(m.stats().queried_tokens, 9u) << "Queried tokens count every prompt token of every successful admit.";
  EXPECT_EQ(m.stats().hit_tokens, 4u);
}

}  // namespace stage3_prefix_caching
