// Stage 3 — copy-on-write: make_writable() swaps a shared block for a private one, keeps an
// exclusive block as it is, and changes nothing when it cannot succeed.
#include "block_pool_under_test.hpp"

#include <climits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "block_pool_test_support.hpp"
#include "failing_new.hpp"

namespace stage3_copy_on_write {

using alloclab::test::block_pool::BlockPool;
using alloclab::test::call_with_failing_new;
using alloclab::test::describe;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::show;
using alloclab::test::takes_the_first_blocks;

TEST(BlockPoolCopyOnWrite, ExclusiveBlockIsReturnedAsIs) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 2));
  EXPECT_EQ(pool.make_writable(1), 1)
      << "make_writable(1) on a block with one reference must return 1 itself: its only owner may write "
         "in place, and a copy would waste a block and a memcpy.";
  EXPECT_EQ(pool.refcount(1), 1) << "make_writable() of an exclusive block must leave its count at 1.";
  EXPECT_EQ(pool.num_free(), 2) << "make_writable() of an exclusive block must take no block.";
}

TEST(BlockPoolCopyOnWrite, SharedBlockIsSwappedForANewOne) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 2));
  pool.retain(0);
  const int fresh = pool.make_writable(0);
  EXPECT_EQ(fresh, 2) << "make_writable(0) on a shared block must return a new block, taken from the top of "
                         "the free stack like any allocation: here block 2, not "
                      << fresh << ".";
  ASSERT_GE(fresh, 0) << "make_writable() failed with 2 blocks free.";
  ASSERT_LT(fresh, 4) << "make_writable() returned a number outside the pool.";
  EXPECT_EQ(pool.refcount(fresh), 1) << "The new block belongs to the writer alone: its refcount must be 1.";
  EXPECT_EQ(pool.refcount(0), 1)
      << "The writer gives up its reference to the shared block: refcount(0) must drop from 2 to 1, or block 0 "
         "is never freed (a leak).";
  EXPECT_EQ(pool.num_free(), 1) << "Copy-on-write takes exactly one block: num_free() must go from 2 to 1.";
}

TEST(BlockPoolCopyOnWrite, TheNewBlockIsTheMostRecentlyFreed) {
  BlockPool pool(8);
  ASSERT_TRUE(takes_the_first_blocks(pool, 4));
  pool.release(2);
  pool.retain(1);
  EXPECT_EQ(pool.make_writable(1), 2)
      << "Block 2 was just released, so it is on top of the free stack: make_writable() of a shared block "
         "must take it, like allocate(1) would.";
}

TEST(BlockPoolCopyOnWrite, TheLastOwnerKeepsTheOriginal) {
  BlockPool pool(8);
  ASSERT_TRUE(takes_the_first_blocks(pool, 1));
  pool.retain(0);
  pool.retain(0);  // three owners
  const int a = pool.make_writable(0);
  const int b = pool.make_writable(0);
  const int c = pool.make_writable(0);
  EXPECT_EQ(a, 1) << "The first of three owners gets a new block (1).";
  EXPECT_EQ(b, 2) << "The second of three owners gets another new block (2).";
  EXPECT_EQ(c, 0) << "After two owners moved away, the third is alone with block 0: make_writable(0) must "
                     "return 0 itself, not copy it.";
  EXPECT_EQ(pool.refcount(0), 1) << "Block 0 keeps exactly its last owner.";
  EXPECT_EQ(pool.num_free(), 5) << "Three owners, three blocks: num_free() must be 8 - 3 = 5.";
}

TEST(BlockPoolCopyOnWrite, NoFreeBlockChangesNothing) {
  BlockPool pool(2);
  ASSERT_TRUE(takes_the_first_blocks(pool, 2));
  pool.retain(0);
  EXPECT_EQ(pool.make_writable(0), -1)
      << "make_writable() of a shared block with no block free must return -1.";
  EXPECT_EQ(pool.refcount(0), 2)
      << "A failed make_writable() must change nothing: refcount(0) must still be 2. Dropping the reference "
         "before the new block is secured leaves the caller holding a block it no longer owns.";
  EXPECT_EQ(pool.num_free(), 0) << "A failed make_writable() must not free or take any block.";

  pool.release(1);
  const int fresh = pool.make_writable(0);
  EXPECT_EQ(fresh, 1) << "Once block 1 is free again, make_writable(0) must succeed with it.";
  EXPECT_EQ(pool.refcount(0), 1) << "After the successful retry, block 0 keeps one reference.";
}

TEST(BlockPoolCopyOnWrite, ExclusiveBlockNeedsNoFreeBlock) {
  BlockPool pool(1);
  ASSERT_TRUE(takes_the_first_blocks(pool, 1));
  EXPECT_EQ(pool.make_writable(0), 0)
      << "make_writable(0) on an exclusive block must return 0 even when no block is free: it needs none.";
}

TEST(BlockPoolCopyOnWrite, FreeOrOutOfRangeBlockThrows) {
  BlockPool pool(4);
  ASSERT_TRUE(takes_the_first_blocks(pool, 2));
  EXPECT_THROW((void)pool.make_writable(3), std::logic_error)
      << "make_writable(3) on a free block must throw a std::logic_error: nobody owns it, so nobody may write it.";
  EXPECT_EQ(pool.num_free(), 2) << "A refused make_writable() must take no block.";
  EXPECT_EQ(pool.refcount(3), 0) << "A refused make_writable() must leave the free block free.";
  for (int b : {-1, 4, INT_MAX, INT_MIN})
    EXPECT_THROW((void)pool.make_writable(b), std::logic_error)
        << "make_writable(" << b << ") must throw a std::logic_error: the number is outside the pool.";
  EXPECT_EQ(pool.num_free(), 2) << "Refused make_writable() calls must take no block.";
  const auto next = pool.allocate(2);
  ASSERT_TRUE(next.has_value()) << "After refused calls, the 2 free blocks must still be available.";
  EXPECT_EQ(*next, (std::vector<int>{2, 3})) << "Refused calls must leave the free stack as it was; got " << show(next);
}

// Whatever make_writable() allocates, a refused allocation must leave the shared block
// with all its owners and the free stack as it was: the caller still holds its reference.
TEST(BlockPoolCopyOnWrite, MakeWritableChangesNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  for_each_failing_allocation([](long n) {
    BlockPool pool(4);
    (void)pool.allocate(2);
    pool.retain(0);
    const std::string before = describe(pool);
    int fresh = -2;
    const auto outcome = call_with_failing_new(n, [&] { fresh = pool.make_writable(0); });
    if (outcome.fired && outcome.threw) {
      EXPECT_EQ(describe(pool), before) << "make_writable(0) threw std::bad_alloc when heap allocation " << n
                                        << " inside it failed; a call that throws must change nothing.";
    } else if (!outcome.fired) {
      EXPECT_EQ(fresh, 2) << "make_writable(0) of a shared block with blocks 2 and 3 free must return 2.";
    }
    return outcome.fired;
  });
}

}  // namespace stage3_copy_on_write
