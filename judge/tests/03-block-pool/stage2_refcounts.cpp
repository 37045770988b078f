// Stage 2 — reference counts: a block shared by several owners stays in use until the last
// one lets go, and every misuse throws and leaves the pool as it was.
#include "block_pool_under_test.hpp"

#include <climits>
#include <cstddef>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "block_pool_test_support.hpp"
#include "failing_new.hpp"

namespace stage2_refcounts {

using alloclab::test::block_pool::BlockPool;
using alloclab::test::call_with_failing_new;
using alloclab::test::describe;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::show;
using alloclab::test::takes_the_first_blocks;

TEST(BlockPoolRefcounts, AllocatedBlocksHaveOneReference) {
  BlockPool pool(4);
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(pool.refcount(b), 0) << "refcount(" << b << ") of a block in a new pool must be 0: it is free.";
  const auto blocks = pool.allocate(2);
  ASSERT_TRUE(blocks.has_value()) << "allocate(2) on a new pool of 4 blocks returned std::nullopt.";
  ASSERT_EQ(blocks->size(), 2u) << "allocate(2) must return 2 blocks.";
  for (int b : *blocks)
    EXPECT_EQ(pool.refcount(b), 1) << "A block fresh from allocate() has exactly one owner: refcount(" << b
                                   << ") must be 1.";
  EXPECT_EQ(pool.refcount(2), 0) << "Block 2 was not handed out: its refcount must stay 0.";
}

TEST(BlockPoolRefcounts, RetainAddsAReference) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 1));
  pool.retain(0);
  EXPECT_EQ(pool.refcount(0), 2) << "After one retain(), block 0 has two owners: refcount(0) must be 2.";
  pool.retain(0);
  EXPECT_EQ(pool.refcount(0), 3) << "After two retain() calls, refcount(0) must be 3.";
  EXPECT_EQ(pool.num_free(), 3) << "retain() takes no block: num_free() must stay 3.";
}

TEST(BlockPoolRefcounts, SharedBlockStaysInUseUntilTheLastRelease) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 1));
  pool.retain(0);
  pool.retain(0);
  pool.release(0);
  EXPECT_EQ(pool.refcount(0), 2) << "Three references minus one release: refcount(0) must be 2.";
  EXPECT_EQ(pool.num_free(), 3)
      << "A block that still has owners must not go back to the free stack: num_free() must stay 3, or the "
         "block would be handed to a new owner while the old ones still read it.";
  pool.release(0);
  EXPECT_EQ(pool.num_free(), 3) << "After two of three releases, block 0 still has one owner.";
  const auto other = pool.allocate(1);
  ASSERT_TRUE(other.has_value()) << "allocate(1) with 3 blocks free returned std::nullopt.";
  EXPECT_NE(other->at(0), 0) << "Block 0 still has an owner, so allocate() must not hand it out again.";
  pool.release(0);
  EXPECT_EQ(pool.refcount(0), 0) << "After the last release, refcount(0) must be 0.";
  EXPECT_EQ(pool.num_free(), 3) << "The last release frees block 0: num_free() must go from 2 to 3.";
  const auto again = pool.allocate(1);
  ASSERT_TRUE(again.has_value()) << "allocate(1) with 3 blocks free returned std::nullopt.";
  EXPECT_EQ(again->at(0), 0) << "The last release put block 0 on top of the free stack: it must be the next "
                                "block handed out.";
}

TEST(BlockPoolRefcounts, ReleasingAFreeBlockThrows) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 2));
  pool.release(0);
  EXPECT_THROW(pool.release(0), std::logic_error)
      << "release(0) on a block already freed (a double free) must throw a std::logic_error: it means two "
         "owners each believe they hold the last reference.";
  EXPECT_THROW(pool.release(3), std::logic_error)
      << "release(3) on a block never handed out must throw a std::logic_error.";
  EXPECT_EQ(pool.refcount(0), 0) << "A refused release() must leave refcount(0) at 0, not below.";
  EXPECT_EQ(pool.num_free(), 3) << "A refused release() must not put the block on the free stack a second time.";
  const auto rest = pool.allocate(3);
  ASSERT_TRUE(rest.has_value()) << "allocate(3) with 3 blocks free returned std::nullopt.";
  EXPECT_EQ(*rest, (std::vector<int>{0, 2, 3}))
      << "After the refused releases, the free stack must be exactly 0, 2, 3, with no block twice; got "
      << show(rest) << ".";
}

TEST(BlockPoolRefcounts, RetainingAFreeBlockThrows) {
  BlockPool pool(4);
  EXPECT_THROW(pool.retain(2), std::logic_error)
      << "retain(2) on a free block must throw a std::logic_error: a free block has no owner to share it "
         "with, and reviving it would let allocate() hand it out while it is in use.";
  EXPECT_EQ(pool.refcount(2), 0) << "A refused retain() must leave refcount(2) at 0.";
  EXPECT_EQ(pool.num_free(), 4) << "A refused retain() must not change num_free().";
  const auto all = pool.allocate(4);
  ASSERT_TRUE(all.has_value()) << "After a refused retain(), all 4 blocks must still be free.";
  EXPECT_EQ(*all, (std::vector<int>{0, 1, 2, 3})) << "After a refused retain(), the free stack must be untouched.";
}

TEST(BlockPoolRefcounts, NumbersOutsideThePoolThrow) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 4));
  for (int b : {-1, 4, 5, INT_MIN, INT_MAX}) {
    EXPECT_THROW(pool.retain(b), std::logic_error)
        << "retain(" << b << ") must throw a std::logic_error (std::out_of_range is one): block numbers run "
        << "from 0 to num_blocks()-1, and an unchecked index corrupts memory next to the counts.";
    EXPECT_THROW(pool.release(b), std::logic_error) << "release(" << b << ") must throw a std::logic_error.";
    EXPECT_THROW((void)pool.refcount(b), std::logic_error) << "refcount(" << b << ") must throw a std::logic_error.";
  }
  for (int b = 0; b < 4; ++b)
    EXPECT_EQ(pool.refcount(b), 1) << "Refused calls must leave every count as it was.";
  EXPECT_EQ(pool.num_free(), 0) << "Refused calls must not free anything.";
}

// retain() and release() need no memory in the reference, but a free stack that grows as
// blocks come back does: whatever they allocate, a refused allocation must leave every count
// and the free stack as they were.
TEST(BlockPoolRefcounts, RetainAndReleaseChangeNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  struct Call {
    const char* what;
    void (*member)(BlockPool&);
  };
  const Call calls[] = {{"retain(0)", [](BlockPool& p) { p.retain(0); }},
                        {"release(0)", [](BlockPool& p) { p.release(0); }},
                        {"release(2)", [](BlockPool& p) { p.release(2); }}};
  for (const Call& call : calls) {
    for_each_failing_allocation([&](long n) {
      BlockPool pool(6), twin(6);  // block 0 has one reference, block 2 two
      for (BlockPool* p : {&pool, &twin}) {
        (void)p->allocate(4);
        p->retain(2);
        p->release(1);
      }
      const std::string before = describe(pool);
      const auto outcome = call_with_failing_new(n, [&] { call.member(pool); });
      if (outcome.fired && outcome.threw) {
        EXPECT_EQ(describe(pool), before)
            << call.what << " threw std::bad_alloc when heap allocation " << n << " inside it failed; a call "
            << "that throws must change nothing. Make room on the free stack before you change a count.";
        EXPECT_EQ(show(pool.allocate(pool.num_free())), show(twin.allocate(twin.num_free())))
            << "After " << call.what << " threw std::bad_alloc, the free stack must be in its old order.";
      }
      return outcome.fired;
    });
  }
}

// A random mix of allocate, retain and release against a model of counts and a stack.
TEST(BlockPoolRefcounts, MatchesAModelOverAThousandOperations) {
  constexpr int kBlocks = 16;
  BlockPool pool(kBlocks);
  std::vector<int> counts(kBlocks, 0);
  std::vector<int> model_free;
  for (int b = kBlocks - 1; b >= 0; --b) model_free.push_back(b);
  std::vector<int> refs;  // one entry per reference held
  std::mt19937 rng(7);
  for (int step = 0; step < 1000; ++step) {
    const unsigned op = rng() % 3;
    if (op == 0 || refs.empty()) {
      const int n = static_cast<int>(rng() % 3);
      const auto got = pool.allocate(n);
      if (n > static_cast<int>(model_free.size())) {
        ASSERT_FALSE(got.has_value()) << "Step " << step << ": allocate(" << n << ") with " << model_free.size()
                                      << " blocks free must return std::nullopt.";
        continue;
      }
      ASSERT_TRUE(got.has_value()) << "Step " << step << ": allocate(" << n << ") with " << model_free.size()
                                   << " blocks free returned std::nullopt.";
      ASSERT_EQ(static_cast<int>(got->size()), n) << "Step " << step << ": allocate(" << n << ") returned " << show(got);
      for (int b : *got) {
        ASSERT_EQ(b, model_free.back()) << "Step " << step << ": allocate() must pop the free stack.";
        model_free.pop_back();
        counts[static_cast<std::size_t>(b)] = 1;
        refs.push_back(b);
      }
    } else if (op == 1) {
      const int b = refs[rng() % refs.size()];
      pool.retain(b);
      ++counts[static_cast<std::size_t>(b)];
      refs.push_back(b);
    } else {
      const std::size_t i = rng() % refs.size();
      const int b = refs[i];
      refs.erase(refs.begin() + static_cast<std::ptrdiff_t>(i));
      pool.release(b);
      if (--counts[static_cast<std::size_t>(b)] == 0) model_free.push_back(b);
    }
    for (int b = 0; b < kBlocks; ++b)
      ASSERT_EQ(pool.refcount(b), counts[static_cast<std::size_t>(b)])
          << "Step " << step << ": refcount(" << b << ") must count the references held.";
    ASSERT_EQ(pool.num_free(), static_cast<int>(model_free.size()))
        << "Step " << step << ": num_free() must count the blocks with no reference.";
  }
}

}  // namespace stage2_refcounts
