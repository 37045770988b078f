// Stage 1 — basics: allocate, used, capacity, and a failed request that leaves no trace.
#include "arena_under_test.hpp"

#include <climits>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>

#include "alloclab_test.hpp"

namespace stage1_basics {

using alloclab::test::arena::Arena;
using alloclab::test::address;

TEST(ArenaBasics, RejectsZeroCapacity) {
  EXPECT_THROW(Arena{0}, std::invalid_argument)
      << "Arena(0) must throw std::invalid_argument: an arena with no room can never serve a request, "
         "so the mistake belongs to whoever built it, and they should hear of it at once.";
}

TEST(ArenaBasics, IsNotCopyable) {
  const auto traits = alloclab::test::arena::traits_of_the_arena();
  EXPECT_FALSE(traits.copy_constructible)
      << "Arena must not be copy-constructible: two copies would own, and free, the same buffer.";
  EXPECT_FALSE(traits.copy_assignable)
      << "Arena must not be copy-assignable: two arenas would own, and free, the same buffer.";
}

TEST(ArenaBasics, ReportsItsCapacity) {
  Arena arena(4096);
  EXPECT_EQ(arena.capacity(), 4096u) << "capacity() must return the size given to the constructor.";
  EXPECT_EQ(arena.used(), 0u) << "A new arena has handed out nothing: used() must be 0.";
}

TEST(ArenaBasics, CapacityDoesNotChange) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1000, 1), nullptr) << "allocate(1000, 1) returned nullptr.";
  EXPECT_EQ(arena.capacity(), 4096u) << "capacity() is the size of the buffer, given to the constructor; "
                                        "it must not shrink as the arena fills (what is left is "
                                        "capacity() - used()).";
}

TEST(ArenaBasics, AllocateReturnsWritableMemory) {
  Arena arena(4096);
  void* p = arena.allocate(100);
  ASSERT_NE(p, nullptr) << "allocate(100) returned nullptr: it must return the start of 100 usable bytes.";
  std::memset(p, 0xAB, 100);  // every byte must be ours to write
  EXPECT_EQ(static_cast<unsigned char*>(p)[99], 0xAB);
}

TEST(ArenaBasics, UsedCountsEveryByteHandedOut) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  EXPECT_EQ(arena.used(), 100u) << "After allocate(100, 1) on a new arena, used() must be 100.";
  ASSERT_NE(arena.allocate(28, 1), nullptr);
  EXPECT_EQ(arena.used(), 128u) << "After allocate(100, 1) and allocate(28, 1), used() must be 128: "
                                   "used() is the end of the last allocation.";
}

TEST(ArenaBasics, AllocationsAreConsecutiveAndDisjoint) {
  Arena arena(4096);
  auto* a = static_cast<unsigned char*>(arena.allocate(10, 1));
  auto* b = static_cast<unsigned char*>(arena.allocate(10, 1));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b, a + 10) << "With align 1 there is no padding: the second block must start right where "
                          "the first ends. A bump allocator wastes nothing between blocks.";
  std::memset(a, 1, 10);
  std::memset(b, 2, 10);
  EXPECT_EQ(a[9], 1) << "Writing the second block changed the first: allocations must not overlap.";
}

TEST(ArenaBasics, ExactFitSucceeds) {
  Arena arena(4096);
  EXPECT_NO_THROW((void)arena.allocate(4096, 1))
      << "A request of exactly capacity() bytes fits in a new arena; an off-by-one in the bounds "
         "check (>= instead of >) rejects it.";
  EXPECT_EQ(arena.used(), 4096u);
  EXPECT_NO_THROW((void)arena.allocate(0, 1)) << "allocate(0, 1) needs no room, so it fits even in a full arena.";
}

TEST(ArenaBasics, ZeroBytesGivesAValidPointer) {
  Arena arena(4096);
  void* p = arena.allocate(0);
  EXPECT_NE(p, nullptr) << "allocate(0) must return a valid, non-null pointer (as operator new does): "
                           "callers compare pointers and treat nullptr as failure.";
  EXPECT_EQ(address(p) % alignof(std::max_align_t), 0u) << "allocate(0) must still honour the alignment.";
}

TEST(ArenaBasics, TooLargeRequestThrowsBadAlloc) {
  Arena arena(4096);
  EXPECT_THROW((void)arena.allocate(4097, 1), std::bad_alloc)
      << "allocate(4097) on a 4096-byte arena must throw std::bad_alloc: the arena never grows.";
  ASSERT_EQ(arena.used(), 0u) << "allocate(4097) threw, yet used() is " << arena.used()
                              << ": a request that throws must leave the cursor where it was, so check "
                                 "that it fits before moving the cursor.";
  ASSERT_NE(arena.allocate(4000, 1), nullptr);
  EXPECT_THROW((void)arena.allocate(97, 1), std::bad_alloc)
      << "With 96 bytes left, allocate(97) must throw std::bad_alloc.";
}

TEST(ArenaBasics, HugeRequestDoesNotWrapAround) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(16, 1), nullptr);
  EXPECT_THROW((void)arena.allocate(SIZE_MAX, 1), std::bad_alloc)
      << "allocate(SIZE_MAX) must throw std::bad_alloc. A bounds check written as "
         "`used + n > capacity` wraps around to a small number and lets it through.";
  EXPECT_THROW((void)arena.allocate(SIZE_MAX - 8, 1), std::bad_alloc)
      << "allocate(SIZE_MAX - 8) must throw std::bad_alloc: compare n with what is left, "
         "`capacity - used`, which cannot overflow.";
  EXPECT_EQ(arena.used(), 16u) << "A failed request must leave used() as it was.";
}

TEST(ArenaBasics, FailedRequestLeavesNoTrace) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1000, 1), nullptr);
  const std::size_t before = arena.used();
  EXPECT_THROW((void)arena.allocate(5000, 1), std::bad_alloc);
  EXPECT_EQ(arena.used(), before) << "A request that throws must not move the cursor: used() changed "
                                     "from " << before << " to " << arena.used() << ".";
  auto* next = static_cast<unsigned char*>(arena.allocate(1, 1));
  EXPECT_EQ(arena.used(), before + 1) << "After a failed request, the next allocation must continue "
                                         "from where the last successful one ended.";
  EXPECT_NO_THROW((void)arena.allocate(4096 - before - 1, 1))
      << "After a failed request the whole rest of the buffer must still be available.";
  (void)next;
}

}  // namespace stage1_basics
