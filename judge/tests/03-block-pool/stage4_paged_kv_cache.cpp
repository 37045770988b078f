// Stage 4 — the paged KV cache: sequences store their tokens in blocks of one buffer, forks
// share blocks, and only a shared, partly filled last block is ever copied.
#include "block_pool_under_test.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "block_pool_test_support.hpp"
#include "failing_new.hpp"

namespace stage4_paged_kv_cache {

using alloclab::test::block_pool::PagedKVCache;
using alloclab::test::address;
using alloclab::test::call_with_failing_new;
using alloclab::test::describe;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::make_token;
using alloclab::test::same_bytes;
using alloclab::test::show;

constexpr std::size_t kTokenBytes = 24;

// Appends tokens [from, to) written by `tag` to `s`; returns false at the first refusal.
bool append_tokens(PagedKVCache& cache, PagedKVCache::SeqId s, int tag, int from, int to) {
  for (int pos = from; pos < to; ++pos) {
    const auto t = make_token(tag, pos, kTokenBytes);
    if (!cache.append(s, t.data())) return false;
  }
  return true;
}

// The first position in [from, to) whose stored token is not the one `tag` wrote, or -1.
int first_wrong_token(const PagedKVCache& cache, PagedKVCache::SeqId s, int tag, int from, int to) {
  for (int pos = from; pos < to; ++pos)
    if (!same_bytes(cache.token(s, pos), make_token(tag, pos, kTokenBytes))) return pos;
  return -1;
}

TEST(PagedKVCache, RejectsSizesThatAreNotPositive) {
  EXPECT_THROW(PagedKVCache(0, 4, kTokenBytes), std::invalid_argument)
      << "PagedKVCache(num_blocks = 0, ...) must throw std::invalid_argument: a cache with no block can hold no token.";
  EXPECT_THROW(PagedKVCache(-3, 4, kTokenBytes), std::invalid_argument)
      << "PagedKVCache(num_blocks = -3, ...) must throw std::invalid_argument.";
  EXPECT_THROW(PagedKVCache(8, 0, kTokenBytes), std::invalid_argument)
      << "PagedKVCache(block_tokens = 0, ...) must throw std::invalid_argument: a block must hold at least one token.";
  EXPECT_THROW(PagedKVCache(8, -1, kTokenBytes), std::invalid_argument)
      << "PagedKVCache(block_tokens = -1, ...) must throw std::invalid_argument.";
  EXPECT_THROW(PagedKVCache(8, 4, 0), std::invalid_argument)
      << "PagedKVCache(token_bytes = 0) must throw std::invalid_argument: a token must have bytes to store.";
  EXPECT_NO_THROW(PagedKVCache(1, 1, 1)) << "PagedKVCache(1, 1, 1) is the smallest valid cache.";
}

TEST(PagedKVCache, CreateGivesDistinctEmptySequences) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto a = cache.create();
  const auto b = cache.create();
  EXPECT_NE(a, b) << "Two calls of create() must give two different sequence ids.";
  EXPECT_EQ(cache.length(a), 0) << "A new sequence holds no token: length() must be 0.";
  EXPECT_TRUE(cache.block_table(a).empty()) << "A new sequence holds no block: its block table must be empty.";
  EXPECT_EQ(cache.pool().num_free(), 8) << "create() must take no block: a block is taken by the first append().";
  EXPECT_EQ(cache.pool().num_blocks(), 8) << "pool().num_blocks() must be the num_blocks given to the cache.";
}

TEST(PagedKVCache, UnknownSequenceThrows) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto t = make_token(0, 0, kTokenBytes);
  const auto s = cache.create();
  ASSERT_TRUE(cache.append(s, t.data())) << "append() to a new sequence of an empty cache returned false.";
  const int bogus = s + 1000;
  EXPECT_THROW((void)cache.append(bogus, t.data()), std::invalid_argument)
      << "append() with an id that create() never gave must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.length(bogus), std::invalid_argument) << "length() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.token(bogus, 0), std::invalid_argument) << "token() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.block_table(bogus), std::invalid_argument)
      << "block_table() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.fork(bogus), std::invalid_argument) << "fork() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW(cache.free(bogus), std::invalid_argument) << "free() of an unknown id must throw std::invalid_argument.";

  cache.free(s);
  EXPECT_EQ(cache.pool().num_free(), 8) << "free() must give the sequence's block back.";
  EXPECT_THROW(cache.free(s), std::invalid_argument)
      << "free() of a sequence already freed must throw std::invalid_argument: a second free would drop "
         "references that belong to other sequences.";
  EXPECT_THROW((void)cache.append(s, t.data()), std::invalid_argument)
      << "append() to a freed sequence must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.length(s), std::invalid_argument) << "length() of a freed sequence must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.fork(s), std::invalid_argument) << "fork() of a freed sequence must throw std::invalid_argument.";
  EXPECT_EQ(cache.pool().num_free(), 8) << "Refused calls must take and free nothing.";
}

TEST(PagedKVCache, AppendStoresACopyOfTheToken) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto s = cache.create();
  auto t = make_token(5, 0, kTokenBytes);
  const auto original = t;
  ASSERT_TRUE(cache.append(s, t.data())) << "append() to a new sequence of an empty cache returned false.";
  EXPECT_EQ(cache.length(s), 1) << "After one append(), length() must be 1.";
  std::fill(t.begin(), t.end(), 0);  // the caller reuses its buffer for the next token
  const void* stored = cache.token(s, 0);
  ASSERT_NE(stored, nullptr) << "token(s, 0) returned nullptr after an append().";
  EXPECT_NE(stored, static_cast<const void*>(t.data()))
      << "token() must point into the cache, not at the caller's buffer.";
  EXPECT_TRUE(same_bytes(stored, original))
      << "token(s, 0) must hold the bytes given to append(), copied at the time of the call.";
}

TEST(PagedKVCache, AppendFillsBlocksInOrder) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto s = cache.create();
  ASSERT_TRUE(append_tokens(cache, s, 1, 0, 1)) << "The first append() to an empty cache returned false.";
  EXPECT_EQ(cache.block_table(s), (std::vector<int>{0}))
      << "The first token needs a block: the block table must be {0}, not " << show(cache.block_table(s)) << ".";
  ASSERT_TRUE(append_tokens(cache, s, 1, 1, 4)) << "append() returned false with 7 blocks free.";
  EXPECT_EQ(cache.block_table(s), (std::vector<int>{0}))
      << "Tokens 1..3 still fit in block 0 (4 tokens a block): no new block may be taken; got "
      << show(cache.block_table(s)) << ".";
  EXPECT_EQ(cache.pool().num_free(), 7) << "Four tokens of a 4-token block use one block.";
  ASSERT_TRUE(append_tokens(cache, s, 1, 4, 10)) << "append() returned false with blocks free.";
  EXPECT_EQ(cache.block_table(s), (std::vector<int>{0, 1, 2}))
      << "10 tokens of a 4-token block need blocks {0, 1, 2}; got " << show(cache.block_table(s)) << ".";
  EXPECT_EQ(cache.length(s), 10) << "After 10 appends, length() must be 10.";
  EXPECT_EQ(cache.pool().num_free(), 5) << "10 tokens in 4-token blocks take 3 blocks: num_free() must be 5.";
  EXPECT_EQ(first_wrong_token(cache, s, 1, 0, 10), -1)
      << "token(s, pos) must return the bytes of the pos-th append(); position "
      << first_wrong_token(cache, s, 1, 0, 10) << " is wrong.";
}

TEST(PagedKVCache, TokensLiveInTheirBlocksOfOneBuffer) {
  constexpr int kBlocks = 6, kBlockTokens = 4;
  PagedKVCache cache(kBlocks, kBlockTokens, kTokenBytes);
  const auto a = cache.create();
  const auto b = cache.create();
  // Interleave the two sequences, a block at a time, so their blocks alternate in the pool.
  for (int chunk = 0; chunk < 3; ++chunk) {
    ASSERT_TRUE(append_tokens(cache, a, 1, chunk * kBlockTokens, (chunk + 1) * kBlockTokens))
        << "append() to sequence a returned false with blocks free.";
    ASSERT_TRUE(append_tokens(cache, b, 2, chunk * kBlockTokens, (chunk + 1) * kBlockTokens))
        << "append() to sequence b returned false with blocks free.";
  }
  EXPECT_EQ(cache.block_table(a), (std::vector<int>{0, 2, 4})) << "Sequence a took blocks 0, 2 and 4.";
  EXPECT_EQ(cache.block_table(b), (std::vector<int>{1, 3, 5})) << "Sequence b took blocks 1, 3 and 5.";
  EXPECT_EQ(first_wrong_token(cache, a, 1, 0, 12), -1)
      << "Sequence a's tokens must survive appends to b: position " << first_wrong_token(cache, a, 1, 0, 12)
      << " is wrong. Token pos lives in block table[pos / block_tokens], at slot pos % block_tokens.";
  EXPECT_EQ(first_wrong_token(cache, b, 2, 0, 12), -1)
      << "Sequence b's tokens must survive appends to a: position " << first_wrong_token(cache, b, 2, 0, 12)
      << " is wrong.";

  std::vector<std::uintptr_t> where;
  for (auto s : {a, b})
    for (int pos = 0; pos < 12; ++pos) where.push_back(address(cache.token(s, pos)));
  std::sort(where.begin(), where.end());
  const std::uintptr_t span = kBlocks * kBlockTokens * kTokenBytes;
  EXPECT_LT(where.back() - where.front(), span)
      << "Every token must live in the cache's one buffer of num_blocks * block_tokens * token_bytes bytes.";
  for (std::size_t i = 1; i < where.size(); ++i)
    EXPECT_GE(where[i] - where[i - 1], kTokenBytes) << "Two stored tokens overlap: each needs token_bytes of its own.";
  for (auto s : {a, b}) {
    for (int pos = 1; pos < 12; ++pos) {
      if (pos % kBlockTokens == 0) continue;  // the first token of a block
      EXPECT_EQ(address(cache.token(s, pos)) - address(cache.token(s, pos - 1)), kTokenBytes)
          << "Tokens " << pos - 1 << " and " << pos << " share a block, so they must be stored side by side.";
    }
  }
}

TEST(PagedKVCache, TokenOutsideTheSequenceThrows) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto s = cache.create();
  EXPECT_THROW((void)cache.token(s, 0), std::out_of_range)
      << "token(s, 0) of an empty sequence must throw std::out_of_range.";
  ASSERT_TRUE(append_tokens(cache, s, 1, 0, 3)) << "append() returned false with blocks free.";
  EXPECT_THROW((void)cache.token(s, 3), std::out_of_range)
      << "token(s, 3) of a 3-token sequence must throw std::out_of_range: slot 3 of block 0 exists but holds no "
         "token of s.";
  EXPECT_THROW((void)cache.token(s, -1), std::out_of_range) << "token(s, -1) must throw std::out_of_range.";
  EXPECT_NO_THROW((void)cache.token(s, 2)) << "token(s, 2) of a 3-token sequence is its last token.";
}

TEST(PagedKVCache, ForkSharesEveryBlock) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 10)) << "append() returned false with blocks free.";
  const int free_before = cache.pool().num_free();
  const auto child = cache.fork(parent);
  EXPECT_NE(child, parent) << "fork() must return a new sequence id.";
  EXPECT_EQ(cache.length(child), 10) << "The child of a 10-token sequence starts with those 10 tokens.";
  EXPECT_EQ(cache.block_table(child), cache.block_table(parent))
      << "fork() shares the parent's blocks: the child's block table must equal the parent's.";
  EXPECT_EQ(cache.pool().num_free(), free_before) << "fork() copies nothing: it must take no block.";
  for (int b : cache.block_table(parent))
    EXPECT_EQ(cache.pool().refcount(b), 2)
        << "After fork(), block " << b << " has two owners: its refcount must be 2. A fork that does not "
        << "retain lets the first free() give the block away while the other sequence still reads it.";
  for (int pos = 0; pos < 10; ++pos)
    EXPECT_EQ(cache.token(child, pos), cache.token(parent, pos))
        << "The child's token " << pos << " must be the parent's stored bytes, not a copy.";
}

TEST(PagedKVCache, FreeingTheParentKeepsTheChildsTokens) {
  PagedKVCache cache(6, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 8)) << "append() returned false with blocks free.";
  const auto child = cache.fork(parent);
  cache.free(parent);
  EXPECT_EQ(cache.pool().num_free(), 4)
      << "Freeing the parent must not free the blocks the child still holds: num_free() must stay 4.";
  // Fill every free block with other data: a block given away by mistake gets overwritten.
  const auto other = cache.create();
  ASSERT_TRUE(append_tokens(cache, other, 9, 0, 16)) << "append() returned false with 4 blocks free.";
  EXPECT_EQ(first_wrong_token(cache, child, 1, 0, 8), -1)
      << "The child's token " << first_wrong_token(cache, child, 1, 0, 8)
      << " changed after its parent was freed: the parent's free() handed out a block the child still uses.";
}

TEST(PagedKVCache, AppendAfterForkCopiesOnlyTheLastPartlyFilledBlock) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 10)) << "append() returned false with blocks free.";
  const auto child = cache.fork(parent);  // blocks {0, 1, 2}; block 2 holds 2 tokens
  ASSERT_TRUE(append_tokens(cache, child, 2, 10, 11)) << "append() to a forked sequence returned false with 5 blocks free.";
  EXPECT_EQ(cache.block_table(parent), (std::vector<int>{0, 1, 2}))
      << "Writing to the child must not change the parent's block table.";
  EXPECT_EQ(cache.block_table(child), (std::vector<int>{0, 1, 3}))
      << "The child wrote into the shared, partly filled block 2, so it must get its own copy (block 3, the "
         "top of the free stack), and keep sharing the full blocks 0 and 1; got "
      << show(cache.block_table(child)) << ".";
  EXPECT_EQ(cache.pool().num_free(), 4) << "Copy-on-write takes exactly one block: num_free() must be 4.";
  EXPECT_EQ(cache.pool().refcount(0), 2) << "Full block 0 stays shared by both sequences.";
  EXPECT_EQ(cache.pool().refcount(1), 2) << "Full block 1 stays shared by both sequences.";
  EXPECT_EQ(cache.pool().refcount(2), 1) << "Block 2 now belongs to the parent alone.";
  EXPECT_EQ(cache.length(parent), 10) << "The parent's length must not change when the child appends.";
  EXPECT_EQ(cache.length(child), 11) << "The child's length must be 11.";
}

TEST(PagedKVCache, CopyOnWriteKeepsTheTokensAlreadyWritten) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 10)) << "append() returned false with blocks free.";
  const auto child = cache.fork(parent);
  ASSERT_TRUE(append_tokens(cache, child, 2, 10, 12)) << "append() to a forked sequence returned false.";
  EXPECT_EQ(first_wrong_token(cache, child, 1, 0, 10), -1)
      << "After copy-on-write, the child's token " << first_wrong_token(cache, child, 1, 0, 10)
      << " is wrong: the new block must start with a copy of the tokens already in the shared block (here "
         "tokens 8 and 9), or the child forgets part of its prompt.";
  EXPECT_EQ(first_wrong_token(cache, child, 2, 10, 12), -1) << "The child's own tokens 10 and 11 must be stored.";
  EXPECT_EQ(first_wrong_token(cache, parent, 1, 0, 10), -1) << "The parent's tokens must be untouched.";
}

TEST(PagedKVCache, AppendNeverWritesIntoASharedBlock) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 6)) << "append() returned false with blocks free.";
  const auto child = cache.fork(parent);
  ASSERT_TRUE(append_tokens(cache, parent, 3, 6, 7)) << "append() to the parent after fork() returned false.";
  ASSERT_TRUE(append_tokens(cache, child, 4, 6, 7)) << "append() to the child after fork() returned false.";
  EXPECT_TRUE(same_bytes(cache.token(parent, 6), make_token(3, 6, kTokenBytes)))
      << "Parent and child each appended a different token 6 into what was one shared block. The parent's "
         "token 6 was overwritten by the child's: append() must make a shared block writable before writing.";
  EXPECT_TRUE(same_bytes(cache.token(child, 6), make_token(4, 6, kTokenBytes)))
      << "The child's token 6 must be the one the child appended.";
  EXPECT_NE(cache.block_table(parent).back(), cache.block_table(child).back())
      << "After both wrote into it, the last block can no longer be shared.";
  EXPECT_EQ(cache.pool().num_free(), 5)
      << "Only the first writer copies; the second is then alone in the old block: 2 + 1 blocks in use.";
  EXPECT_EQ(first_wrong_token(cache, parent, 1, 0, 6), -1)
      << "The parent's token " << first_wrong_token(cache, parent, 1, 0, 6) << " is wrong after its append() "
      << "copied the shared block that held its tokens 4 and 5: the copy must start with those tokens.";
  EXPECT_EQ(first_wrong_token(cache, child, 1, 0, 6), -1)
      << "The child's token " << first_wrong_token(cache, child, 1, 0, 6) << " is wrong: the first 6 tokens of "
      << "a fork are its parent's, and nothing may overwrite them.";
}

TEST(PagedKVCache, FullSharedBlocksStayShared) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 8)) << "append() returned false with blocks free.";
  const auto child = cache.fork(parent);  // two full blocks, both shared
  ASSERT_TRUE(append_tokens(cache, child, 2, 8, 9)) << "append() to a forked sequence returned false.";
  EXPECT_EQ(cache.block_table(child), (std::vector<int>{0, 1, 2}))
      << "The child's last block was full, so its next token starts a new block; the full blocks, never "
         "written again, stay shared. The table must be {0, 1, 2}, not "
      << show(cache.block_table(child)) << ".";
  EXPECT_EQ(cache.pool().num_free(), 5)
      << "Appending after a full shared block takes exactly one new block: copying a full block wastes one.";
  EXPECT_EQ(cache.pool().refcount(1), 2) << "Full block 1 must stay shared by both sequences.";
}

TEST(PagedKVCache, ForkOfAnEmptySequence) {
  PagedKVCache cache(4, 4, kTokenBytes);
  const auto a = cache.create();
  const auto b = cache.fork(a);
  EXPECT_EQ(cache.length(b), 0) << "The fork of an empty sequence is empty.";
  ASSERT_TRUE(append_tokens(cache, a, 1, 0, 2)) << "append() returned false with blocks free.";
  ASSERT_TRUE(append_tokens(cache, b, 2, 0, 2)) << "append() returned false with blocks free.";
  EXPECT_NE(cache.block_table(a), cache.block_table(b)) << "Two sequences that shared nothing get different blocks.";
  EXPECT_EQ(first_wrong_token(cache, a, 1, 0, 2), -1) << "Sequence a's tokens must be its own.";
  EXPECT_EQ(first_wrong_token(cache, b, 2, 0, 2), -1) << "Sequence b's tokens must be its own.";
}

TEST(PagedKVCache, FreeReturnsEveryBlock) {
  PagedKVCache cache(8, 4, kTokenBytes);
  const auto a = cache.create();
  ASSERT_TRUE(append_tokens(cache, a, 1, 0, 10)) << "append() returned false with blocks free.";
  const auto b = cache.fork(a);
  ASSERT_TRUE(append_tokens(cache, b, 2, 10, 13)) << "append() returned false with blocks free.";
  const auto c = cache.create();
  ASSERT_TRUE(append_tokens(cache, c, 3, 0, 5)) << "append() returned false with blocks free.";
  cache.free(b);
  EXPECT_EQ(cache.pool().num_free(), 3)
      << "Freeing b gives back only its private block: a still holds blocks 0-2, c holds 2 blocks.";
  cache.free(a);
  cache.free(c);
  EXPECT_EQ(cache.pool().num_free(), 8)
      << "When every sequence is freed, every block must be free again; num_free() is " << cache.pool().num_free()
      << ", so blocks leak.";
  for (int blk = 0; blk < 8; ++blk)
    EXPECT_EQ(cache.pool().refcount(blk), 0) << "After every sequence is freed, block " << blk << " must have no reference.";
}

TEST(PagedKVCache, OutOfBlocksAppendChangesNothing) {
  PagedKVCache cache(2, 2, kTokenBytes);
  const auto s = cache.create();
  ASSERT_TRUE(append_tokens(cache, s, 1, 0, 4)) << "4 tokens must fit in 2 blocks of 2 tokens.";
  const auto t = make_token(1, 4, kTokenBytes);
  EXPECT_FALSE(cache.append(s, t.data())) << "append() that needs a block when none is free must return false.";
  EXPECT_EQ(cache.length(s), 4) << "A refused append() must not change length().";
  EXPECT_EQ(cache.block_table(s), (std::vector<int>{0, 1}))
      << "A refused append() must not change the block table; got " << show(cache.block_table(s)) << ".";
  const auto e = cache.create();
  EXPECT_FALSE(cache.append(e, t.data())) << "The first append() to a new sequence needs a block: with none free it "
                                             "must return false.";
  ASSERT_EQ(cache.length(e), 0) << "A refused append() must leave the new sequence empty.";
  ASSERT_TRUE(cache.block_table(e).empty()) << "A refused append() must leave the new sequence with no block.";
  cache.free(s);
  EXPECT_EQ(cache.pool().num_free(), 2) << "Refused appends must leave nothing behind: freeing s frees every block.";
  EXPECT_TRUE(cache.append(e, t.data())) << "Once blocks are free again, append() must succeed.";
}

TEST(PagedKVCache, CopyOnWriteWithoutAFreeBlockChangesNothing) {
  PagedKVCache cache(3, 2, kTokenBytes);
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 1, 0, 3)) << "3 tokens must fit in 2 blocks of 2 tokens.";
  const auto child = cache.fork(parent);  // shares block 0 (full) and block 1 (1 token)
  const auto other = cache.create();
  ASSERT_TRUE(append_tokens(cache, other, 9, 0, 1)) << "append() returned false with 1 block free.";
  const auto t = make_token(2, 3, kTokenBytes);
  EXPECT_FALSE(cache.append(child, t.data()))
      << "The child's last block is shared and partly filled: appending needs a copy, and with no block free "
         "append() must return false.";
  EXPECT_EQ(cache.length(child), 3) << "A refused append() must not change length().";
  EXPECT_EQ(cache.block_table(child), (std::vector<int>{0, 1})) << "A refused append() must not change the block table.";
  EXPECT_EQ(cache.pool().refcount(1), 2)
      << "A refused copy-on-write must keep the child's reference to block 1: refcount(1) must stay 2.";
  cache.free(other);
  ASSERT_TRUE(cache.append(child, t.data())) << "Once a block is free again, the copy-on-write append() must succeed.";
  EXPECT_EQ(first_wrong_token(cache, child, 1, 0, 3), -1) << "The child's first 3 tokens must survive the retry.";
  EXPECT_TRUE(same_bytes(cache.token(child, 3), t)) << "The child's token 3 must be the one appended.";
  EXPECT_EQ(first_wrong_token(cache, parent, 1, 0, 3), -1) << "The parent's tokens must be untouched.";
}

// Beam search in miniature: random appends, forks and frees, checked after every step
// against plain copies of every sequence and against the reference counts the block
// tables imply.
TEST(PagedKVCache, AgreesWithPlainCopiesOverARandomBeamSearch) {
  constexpr int kBlocks = 48, kBlockTokens = 4;
  PagedKVCache cache(kBlocks, kBlockTokens, kTokenBytes);
  std::map<int, std::vector<std::vector<unsigned char>>> model;  // id -> tokens
  std::mt19937 rng(11);
  const auto root = cache.create();
  model[root] = {};
  int tag = 0;
  for (int step = 0; step < 400; ++step) {
    std::vector<int> ids;
    for (const auto& [id, tokens] : model) ids.push_back(id);
    const int s = ids[rng() % ids.size()];
    const unsigned op = rng() % 10;
    if (op < 6) {
      auto t = make_token(++tag, static_cast<int>(model[s].size()), kTokenBytes);
      if (cache.append(s, t.data())) model[s].push_back(t);
    } else if (op < 8 && model.size() < 8) {
      const auto child = cache.fork(s);
      ASSERT_EQ(model.count(child), 0u) << "Step " << step << ": fork() returned the id of a live sequence.";
      model[child] = model[s];
    } else if (model.size() > 1) {
      cache.free(s);
      model.erase(s);
    }
    std::map<int, int> refs;
    for (const auto& [id, tokens] : model) {
      ASSERT_EQ(cache.length(id), static_cast<int>(tokens.size())) << "Step " << step << ": length of sequence " << id;
      for (std::size_t pos = 0; pos < tokens.size(); ++pos)
        ASSERT_TRUE(same_bytes(cache.token(id, static_cast<int>(pos)), tokens[pos]))
            << "Step " << step << ": token " << pos << " of sequence " << id
            << " is not what was appended: a shared block was written, or a copy missed tokens.";
      const auto table = cache.block_table(id);
      ASSERT_EQ(static_cast<int>(table.size()), (static_cast<int>(tokens.size()) + kBlockTokens - 1) / kBlockTokens)
          << "Step " << step << ": a sequence of " << tokens.size() << " tokens needs exactly ceil(length / "
          << "block_tokens) blocks; sequence " << id << " holds " << show(table) << ".";
      for (int b : table) ++refs[b];
    }
    for (int b = 0; b < kBlocks; ++b)
      ASSERT_EQ(cache.pool().refcount(b), refs.count(b) ? refs[b] : 0)
          << "Step " << step << ": block " << b << " appears in " << (refs.count(b) ? refs[b] : 0)
          << " block tables, so that must be its refcount.";
    ASSERT_EQ(cache.pool().num_free(), kBlocks - static_cast<int>(refs.size()))
        << "Step " << step << ": every block in no table must be free.";
  }
}

TEST(PagedKVCache, ABufferSizeThatOverflowsThrowsBadAlloc) {
  const std::size_t quarter = SIZE_MAX / 4 + 1;  // 2^62 on a 64-bit machine
  EXPECT_THROW(PagedKVCache(4, 1, quarter), std::bad_alloc)
      << "PagedKVCache(4, 1, SIZE_MAX / 4 + 1) must throw std::bad_alloc: its buffer of num_blocks * block_tokens * "
         "token_bytes bytes does not fit in a std::size_t. Multiplied unchecked, the size wraps around to 0, and "
         "every token would be written outside a buffer of nothing.";
  EXPECT_THROW(PagedKVCache(2, 2, quarter), std::bad_alloc)
      << "PagedKVCache(2, 2, SIZE_MAX / 4 + 1) must throw std::bad_alloc: block_tokens * token_bytes fits, but "
         "num_blocks times that does not. Check each product before you make it.";
  EXPECT_THROW(PagedKVCache(INT_MAX, INT_MAX, SIZE_MAX / 3), std::bad_alloc)
      << "PagedKVCache(INT_MAX, INT_MAX, SIZE_MAX / 3) must throw std::bad_alloc: its buffer size overflows.";
}

TEST(PagedKVCache, CopyOnWriteIntoBlockZeroSucceeds) {
  PagedKVCache cache(4, 4, kTokenBytes);
  const auto first = cache.create();
  ASSERT_TRUE(append_tokens(cache, first, 1, 0, 1)) << "append() to a new sequence of an empty cache returned false.";
  const auto parent = cache.create();
  ASSERT_TRUE(append_tokens(cache, parent, 2, 0, 2)) << "append() returned false with 3 blocks free.";
  const auto child = cache.fork(parent);  // shares block 1, which holds 2 tokens
  cache.free(first);                      // block 0 goes back on top of the free stack
  ASSERT_TRUE(append_tokens(cache, child, 3, 2, 3))
      << "append() to the child copies its shared, half-full block 1 into the block on top of the free stack, "
         "block 0, and must succeed: block 0 is a block like any other, not a failure (a check such as "
         "`new_block <= 0` mistakes it for one).";
  EXPECT_EQ(cache.block_table(child), (std::vector<int>{0}))
      << "The child's copy of block 1 must be block 0, the most recently freed; got " << show(cache.block_table(child))
      << ".";
  EXPECT_EQ(first_wrong_token(cache, child, 2, 0, 2), -1) << "The copy in block 0 must hold the parent's 2 tokens.";
  EXPECT_TRUE(same_bytes(cache.token(child, 2), make_token(3, 2, kTokenBytes)))
      << "The child's token 2 must be the one it appended.";
}

// Four sequences in a cache of 8 blocks of 4 tokens: a parent of 6 tokens (blocks 0 and 1,
// block 1 half full), its fork, which shares both, another of 4 tokens (block 2, full), and
// a longer one of 16 (blocks 3 to 6, all full), which leaves one block free.
struct Family {
  PagedKVCache cache{8, 4, kTokenBytes};
  PagedKVCache::SeqId parent = cache.create();
  bool filled = append_tokens(cache, parent, 1, 0, 6);
  PagedKVCache::SeqId child = cache.fork(parent);
  PagedKVCache::SeqId other = cache.create();
  bool filled_other = append_tokens(cache, other, 2, 0, 4);
  PagedKVCache::SeqId longer = cache.create();
  bool filled_longer = append_tokens(cache, longer, 4, 0, 16);

  std::vector<int> ids() const { return {parent, child, other, longer}; }
  std::string state() const { return describe(cache, ids(), kTokenBytes); }
  // The blocks a new sequence gets until the cache is full: the order of the free stack.
  std::vector<int> drain() {
    const auto s = cache.create();
    append_tokens(cache, s, 3, 0, 8 * 4);
    return cache.block_table(s);
  }
};

// Makes each heap allocation inside `member` fail in turn, on a fresh Family and its twin
// (which sees the same calls but the failing one), and checks that every call that throws
// std::bad_alloc leaves the cache as its twin. `after` checks the call that got through.
template <class Member, class After>
void changes_nothing_when_the_heap_fails(const std::string& what, Member member, After after) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  for_each_failing_allocation([&](long n) {
    Family family, twin;
    if (!family.filled || !family.filled_other || !family.filled_longer) {
      ADD_FAILURE() << "append() returned false with blocks free, before " << what << " was called.";
      return false;
    }
    const auto outcome = call_with_failing_new(n, [&] { member(family); });
    if (outcome.fired && outcome.threw) {
      EXPECT_EQ(family.state(), twin.state())
          << what << " threw std::bad_alloc when heap allocation " << n << " inside it failed; a call that throws "
          << "must change nothing. Make room in your tables first, then take blocks or references: those steps "
          << "cannot be undone once the next one throws.";
      EXPECT_EQ(family.drain(), twin.drain())
          << "After " << what << " threw std::bad_alloc at heap allocation " << n
          << ", the free blocks must come out in their old order.";
    } else if (!outcome.fired) {
      after(family);
    }
    return outcome.fired;
  });
}

TEST(PagedKVCache, ForkChangesNothingWhenTheHeapFails) {
  PagedKVCache::SeqId forked = -1;
  changes_nothing_when_the_heap_fails(
      "fork(parent)", [&](Family& f) { forked = f.cache.fork(f.parent); },
      [&](Family& f) {
        EXPECT_EQ(f.cache.block_table(forked), f.cache.block_table(f.parent))
            << "fork(parent) must share the parent's blocks.";
        EXPECT_EQ(f.cache.pool().refcount(0), 3) << "After a second fork, block 0 has three owners.";
      });
}

TEST(PagedKVCache, AppendChangesNothingWhenTheHeapFails) {
  const auto t = make_token(7, 6, kTokenBytes);
  bool ok = false;
  changes_nothing_when_the_heap_fails(
      "append(other, ...) into a new block", [&](Family& f) { ok = f.cache.append(f.other, t.data()); },
      [&](Family& f) {
        EXPECT_TRUE(ok && f.cache.block_table(f.other).size() == 2)
            << "append() to a sequence whose only block is full must take a second block; the table is "
            << show(f.cache.block_table(f.other)) << ".";
      });
  changes_nothing_when_the_heap_fails(
      "append(child, ...) into a shared, half-full block", [&](Family& f) { ok = f.cache.append(f.child, t.data()); },
      [&](Family& f) {
        EXPECT_TRUE(ok && f.cache.length(f.child) == 7) << "append() to the child must store its 7th token.";
      });
  changes_nothing_when_the_heap_fails(
      "append(longer, ...) into a fifth block", [&](Family& f) { ok = f.cache.append(f.longer, t.data()); },
      [&](Family& f) {
        EXPECT_TRUE(ok && f.cache.block_table(f.longer).size() == 5)
            << "append() of token 16 to a sequence of 4 full blocks must take a fifth; the table is "
            << show(f.cache.block_table(f.longer)) << ".";
      });
  changes_nothing_when_the_heap_fails(
      "append() to a new sequence",
      [&](Family& f) {
        const auto s = f.cache.create();
        ok = f.cache.append(s, t.data());
      },
      [&](Family&) { EXPECT_TRUE(ok) << "append() to a new sequence must succeed with blocks free."; });
}

TEST(PagedKVCache, CreateAndFreeChangeNothingWhenTheHeapFails) {
  changes_nothing_when_the_heap_fails(
      "create()", [](Family& f) { (void)f.cache.create(); }, [](Family&) {});
  changes_nothing_when_the_heap_fails(
      "free(child)", [](Family& f) { f.cache.free(f.child); },
      [](Family& f) {
        EXPECT_EQ(f.cache.pool().refcount(1), 1) << "free(child) must drop the child's reference to block 1.";
      });
}

}  // namespace stage4_paged_kv_cache
