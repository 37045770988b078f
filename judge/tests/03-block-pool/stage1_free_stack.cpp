// Stage 1 — the free stack: blocks come out in a known order, go back on top when released,
// and a request that cannot be met in full takes nothing.
#include "block_pool_under_test.hpp"

#include <cstddef>
#include <new>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"
#include "block_pool_test_support.hpp"
#include "failing_new.hpp"

namespace stage1_free_stack {

using alloclab::test::block_pool::BlockPool;
using alloclab::test::call_with_failing_new;
using alloclab::test::describe;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::show;

TEST(BlockPoolFreeStack, RejectsANegativeSize) {
  EXPECT_THROW(BlockPool{-1}, std::invalid_argument)
      << "BlockPool(-1) must throw std::invalid_argument: a pool cannot hold a negative number of blocks, "
         "and the mistake belongs to whoever built it.";
  EXPECT_NO_THROW(BlockPool{0}) << "BlockPool(0) is an empty pool, not an error: it must not throw.";
}

TEST(BlockPoolFreeStack, ANewPoolIsAllFree) {
  BlockPool pool(8);
  EXPECT_EQ(pool.num_blocks(), 8) << "num_blocks() must return the size given to the constructor.";
  EXPECT_EQ(pool.num_free(), 8) << "In a new pool every block is free: num_free() must equal num_blocks().";
}

TEST(BlockPoolFreeStack, FirstAllocationsAscend) {
  BlockPool pool(8);
  const auto first = pool.allocate(3);
  ASSERT_TRUE(first.has_value()) << "allocate(3) on a new pool of 8 blocks returned std::nullopt.";
  EXPECT_EQ(*first, (std::vector<int>{0, 1, 2}))
      << "A new pool hands out its blocks in ascending order, so allocate(3) must return {0, 1, 2}, not "
      << show(first) << ". Build the free stack so that 0 is on top.";
  const auto second = pool.allocate(2);
  ASSERT_TRUE(second.has_value()) << "allocate(2) with 5 blocks free returned std::nullopt.";
  EXPECT_EQ(*second, (std::vector<int>{3, 4}))
      << "The next allocate(2) must continue the ascending order with {3, 4}, not " << show(second) << ".";
  EXPECT_EQ(pool.num_free(), 3) << "After taking 5 of 8 blocks, num_free() must be 3.";
}

TEST(BlockPoolFreeStack, AllocatingEveryBlockSucceeds) {
  BlockPool pool(8);
  const auto all = pool.allocate(8);
  ASSERT_TRUE(all.has_value())
      << "allocate(8) on a pool of 8 free blocks must succeed: a request of exactly what is free fits "
         "(an off-by-one such as `n >= num_free` refuses it).";
  EXPECT_EQ(*all, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}))
      << "allocate(8) on a new pool must return every block, in ascending order; got " << show(all) << ".";
  EXPECT_EQ(pool.num_free(), 0) << "After every block is taken, num_free() must be 0.";
  EXPECT_FALSE(pool.allocate(1).has_value()) << "With no block free, allocate(1) must return std::nullopt.";
}

TEST(BlockPoolFreeStack, AllocateZeroGivesAnEmptyVector) {
  BlockPool pool(4);
  const auto none = pool.allocate(0);
  ASSERT_TRUE(none.has_value()) << "allocate(0) must succeed with an empty vector, not std::nullopt: "
                                   "asking for nothing cannot fail.";
  EXPECT_TRUE(none->empty()) << "allocate(0) must return an empty vector, not " << show(none) << ".";
  EXPECT_EQ(pool.num_free(), 4) << "allocate(0) must not take any block.";

  BlockPool empty(0);
  EXPECT_EQ(empty.num_blocks(), 0) << "BlockPool(0) manages no block.";
  const auto from_empty = empty.allocate(0);
  EXPECT_TRUE(from_empty.has_value() && from_empty->empty())
      << "allocate(0) succeeds even on an empty pool; got " << show(from_empty) << ".";
  EXPECT_FALSE(empty.allocate(1).has_value()) << "allocate(1) on an empty pool must return std::nullopt.";
}

TEST(BlockPoolFreeStack, NegativeCountThrows) {
  BlockPool pool(4);
  EXPECT_THROW((void)pool.allocate(-1), std::invalid_argument)
      << "allocate(-1) must throw std::invalid_argument: a negative count is a bug in the caller, not a "
         "shortage of blocks, so it must not look like one (std::nullopt).";
  EXPECT_EQ(pool.num_free(), 4) << "allocate(-1) must not take any block.";
}

TEST(BlockPoolFreeStack, FailedAllocateChangesNothing) {
  BlockPool pool(8);
  ASSERT_TRUE(pool.allocate(5).has_value()) << "allocate(5) on a new pool of 8 blocks returned std::nullopt.";
  const auto too_many = pool.allocate(4);
  EXPECT_FALSE(too_many.has_value())
      << "allocate(4) with 3 blocks free must return std::nullopt (all or nothing), not " << show(too_many) << ".";
  EXPECT_EQ(pool.num_free(), 3)
      << "A failed allocate must take nothing: num_free() went from 3 to " << pool.num_free()
      << ". Check that enough blocks are free before popping any, or the blocks taken are lost for good.";
  const auto rest = pool.allocate(3);
  ASSERT_TRUE(rest.has_value()) << "After a failed allocate(4), the 3 blocks still free must be available.";
  EXPECT_EQ(*rest, (std::vector<int>{5, 6, 7}))
      << "After a failed allocate(4), allocate(3) must return the untouched blocks {5, 6, 7}, not " << show(rest)
      << ": a failed request must not even reorder the free stack.";
}

TEST(BlockPoolFreeStack, ReleaseFreesABlock) {
  BlockPool pool(4);
  const auto blocks = pool.allocate(2);
  ASSERT_TRUE(blocks.has_value() && blocks->size() == 2)
      << "allocate(2) on a new pool of 4 blocks must return 2 blocks, not " << show(blocks) << ".";
  const int first = blocks->at(0), second = blocks->at(1);
  pool.release(second);
  EXPECT_EQ(pool.num_free(), 3) << "allocate(2) handed out " << show(blocks) << "; release(" << second
                                << ") of a block with one reference must free it: num_free() must go from 2 "
                                << "to 3, not to " << pool.num_free() << ".";
  pool.release(first);
  EXPECT_EQ(pool.num_free(), 4) << "allocate(2) handed out " << show(blocks) << "; after release(" << second
                                << ") and release(" << first << "), every block is free again, so num_free() "
                                << "must be 4, not " << pool.num_free() << ".";
}

TEST(BlockPoolFreeStack, MostRecentlyFreedComesOutFirst) {
  BlockPool pool(8);
  ASSERT_TRUE(pool.allocate(8).has_value()) << "allocate(8) on a new pool of 8 blocks returned std::nullopt.";
  pool.release(3);
  pool.release(6);
  pool.release(1);
  const auto a = pool.allocate(1);
  const auto b = pool.allocate(1);
  const auto c = pool.allocate(1);
  ASSERT_TRUE(a && b && c) << "After releasing 3 blocks, three allocate(1) calls must succeed.";
  EXPECT_EQ((std::vector<int>{a->at(0), b->at(0), c->at(0)}), (std::vector<int>{1, 6, 3}))
      << "Released 3, then 6, then 1: the free blocks form a stack, so they come out as 1, 6, 3 (the most "
         "recently freed first, the one most likely to be warm in cache), not "
      << show(std::vector<int>{a->at(0), b->at(0), c->at(0)}) << ".";

  pool.release(2);
  pool.release(5);
  const auto two = pool.allocate(2);
  ASSERT_TRUE(two.has_value()) << "After releasing 2 blocks, allocate(2) must succeed.";
  EXPECT_EQ(*two, (std::vector<int>{5, 2}))
      << "Released 2, then 5: one allocate(2) pops the stack twice and must return {5, 2}, not " << show(two) << ".";
}

TEST(BlockPoolFreeStack, ReleasedBlocksGoOnTopOfTheUntouchedOnes) {
  BlockPool pool(6);
  ASSERT_TRUE(pool.allocate(2).has_value()) << "allocate(2) on a new pool of 6 blocks returned std::nullopt.";
  pool.release(0);
  const auto next = pool.allocate(3);
  ASSERT_TRUE(next.has_value()) << "allocate(3) with 5 blocks free returned std::nullopt.";
  EXPECT_EQ(*next, (std::vector<int>{0, 2, 3}))
      << "Block 0 was released on top of the never-used blocks 2..5, so allocate(3) must return {0, 2, 3}, "
         "not "
      << show(next) << ": the released block comes first, then the stack continues in ascending order.";
}

// allocate() needs memory of its own (the vector it returns, and whatever the free stack
// needs). Each allocation it makes is refused once, in turn: when that throws std::bad_alloc,
// every block must be where it was, or the blocks already popped are lost for good.
TEST(BlockPoolFreeStack, AllocateChangesNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  for_each_failing_allocation([](long n) {
    BlockPool pool(8), twin(8);  // the twin sees the same calls, except the one that fails
    for (BlockPool* p : {&pool, &twin}) {
      (void)p->allocate(3);
      p->release(1);
    }
    std::optional<std::vector<int>> got;
    const auto outcome = call_with_failing_new(n, [&] { got = pool.allocate(4); });
    if (outcome.fired && outcome.threw) {
      EXPECT_EQ(describe(pool), describe(twin))
          << "allocate(4) threw std::bad_alloc when heap allocation " << n << " inside it failed; a call that "
          << "throws must change nothing. Reserve the memory you need before you pop a block.";
      EXPECT_EQ(show(pool.allocate(pool.num_free())), show(twin.allocate(twin.num_free())))
          << "After allocate(4) threw std::bad_alloc at heap allocation " << n << ", the free stack must be in "
          << "its old order.";
    } else if (!outcome.fired) {
      EXPECT_EQ(show(got), "{1, 3, 4, 5}") << "allocate(4) with blocks 1 (released last), 3, 4, 5, ... on the free stack.";
    }
    return outcome.fired;
  });
}

// Replays a long random mix of allocate and release against a model (a plain stack) and
// compares every result: catches any free-list order or bookkeeping that drifts over time.
TEST(BlockPoolFreeStack, MatchesAStackOverAThousandOperations) {
  constexpr int kBlocks = 32;
  BlockPool pool(kBlocks);
  std::vector<int> model_free;  // top = back
  for (int b = kBlocks - 1; b >= 0; --b) model_free.push_back(b);
  std::vector<int> in_use;
  std::mt19937 rng(3);
  for (int step = 0; step < 1000; ++step) {
    if (in_use.empty() || rng() % 2 == 0) {
      const int n = static_cast<int>(rng() % 6);
      const auto got = pool.allocate(n);
      if (n > static_cast<int>(model_free.size())) {
        ASSERT_FALSE(got.has_value()) << "Step " << step << ": allocate(" << n << ") with only " << model_free.size()
                                      << " blocks free must return std::nullopt, but returned " << show(got) << ".";
      } else {
        std::vector<int> expected;
        for (int i = 0; i < n; ++i) {
          expected.push_back(model_free.back());
          model_free.pop_back();
        }
        ASSERT_TRUE(got.has_value()) << "Step " << step << ": allocate(" << n << ") with " << model_free.size() + n
                                     << " blocks free returned std::nullopt.";
        ASSERT_EQ(*got, expected) << "Step " << step << ": allocate(" << n << ") must pop the free stack and return "
                                  << show(expected) << ", not " << show(got) << ".";
        in_use.insert(in_use.end(), expected.begin(), expected.end());
      }
    } else {
      const std::size_t i = rng() % in_use.size();
      const int b = in_use[i];
      in_use.erase(in_use.begin() + static_cast<std::ptrdiff_t>(i));
      pool.release(b);
      model_free.push_back(b);
    }
    ASSERT_EQ(pool.num_free(), static_cast<int>(model_free.size()))
        << "Step " << step << ": num_free() must count the free blocks exactly.";
  }
}

}  // namespace stage1_free_stack
