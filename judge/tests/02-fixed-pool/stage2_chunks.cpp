// Stage 2 — chunks and limits: growth, max_chunks, the stride's rounding and alignment, owns().
#include "pool_under_test.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "alloclab_test.hpp"
#include "failing_new.hpp"
#include "pool_test_support.hpp"

#ifdef ALLOCLAB_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace stage2_chunks {

using alloclab::test::pool::FixedPool;
using alloclab::test::address;
using alloclab::test::call_with_failing_new;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::news_in_use;
using namespace alloclab::test::pool;

const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(PoolChunks, RejectsZeroMaxChunks) {
  EXPECT_THROW(FixedPool(64, 8, 0), std::invalid_argument)
      << "FixedPool(64, 8, 0) must throw std::invalid_argument: the constructor itself needs one chunk, so a "
         "limit of 0 chunks can never be kept.";
}

TEST(PoolChunks, TinyBlocksCanHoldALink) {
  for (std::size_t n : {sizeof(void*), std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{7}}) {
    FixedPool pool(n, 8);
    ASSERT_GE(pool.block_size(), sizeof(void*))
        << "FixedPool(" << n << ").block_size() is " << pool.block_size() << ": a free block stores the address "
        << "of the next free block, so every block needs at least sizeof(void*) = " << sizeof(void*)
        << " bytes, or the links of neighbouring blocks overwrite each other.";
    EXPECT_EQ(pool.block_size(), expected_stride(n))
        << "FixedPool(" << n << ").block_size() must be " << expected_stride(n)
        << ": the size raised to sizeof(void*), then rounded up to alignof(std::max_align_t).";
    std::vector<void*> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(pool.allocate());
    ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
    for (int i = 0; i < 8; ++i) fill(blocks[i], pool.block_size(), i);
    for (int i = 0; i < 8; ++i)
      EXPECT_TRUE(holds(blocks[i], pool.block_size(), i))
          << "With FixedPool(" << n << "), block " << i << " was overwritten by another live block.";
    for (void* p : blocks) pool.deallocate(p);
    std::vector<void*> again;
    for (int i = 0; i < 8; ++i) again.push_back(pool.allocate());
    EXPECT_TRUE(all_distinct(again)) << "With FixedPool(" << n << "), the free list came back broken: blocks of "
                                        "that size could not hold their links.";
    EXPECT_EQ(pool.chunk_count(), 1u) << "With FixedPool(" << n << "), reusing 8 freed blocks must not add a chunk.";
    for (void* p : again) pool.deallocate(p);
  }
}

TEST(PoolChunks, StrideIsRoundedUpToMaxAlign) {
  for (std::size_t n : {24, 40, 17, 100, 1000}) {
    FixedPool pool(n, 4);
    EXPECT_EQ(pool.block_size(), expected_stride(n))
        << "FixedPool(" << n << ").block_size() must be " << expected_stride(n) << ", " << n
        << " rounded up to a multiple of alignof(std::max_align_t) = " << kAlign
        << ". Blocks sit one stride apart, so a stride that is not a multiple of the alignment puts every "
           "other block on a misaligned address.";
  }
}

TEST(PoolChunks, ExactMultiplesKeepTheirSize) {
  for (std::size_t n : {kAlign, 2 * kAlign, std::size_t{64}, std::size_t{1024}}) {
    FixedPool pool(n, 4);
    EXPECT_EQ(pool.block_size(), n) << "FixedPool(" << n << ").block_size() must be " << n
                                    << ": it is already a multiple of " << kAlign
                                    << ", and rounding it up further wastes memory in every block.";
  }
}

TEST(PoolChunks, EveryBlockIsMaxAligned) {
  for (std::size_t n : {1, 8, 24, 40, 100, 1000}) {
    FixedPool pool(n, 4);
    std::vector<void*> blocks;
    for (int i = 0; i < 10; ++i) {
      void* p = pool.allocate();
      ASSERT_NE(p, nullptr) << "allocate() returned nullptr.";
      EXPECT_EQ(address(p) % kAlign, 0u)
          << "Block " << i << " of FixedPool(" << n << ") is at an address that is not a multiple of "
          << kAlign << ": an object with alignof(std::max_align_t) (a long double, a SIMD vector) placed there "
             "is misaligned, which is undefined behaviour and a crash on some CPUs.";
      blocks.push_back(p);
    }
    for (void* p : blocks) pool.deallocate(p);
  }
}

TEST(PoolChunks, GrowsByOneChunkWhenTheListIsEmpty) {
  FixedPool pool(64, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate());
  EXPECT_EQ(pool.chunk_count(), 1u) << "Four blocks fit in the first chunk of four: no growth yet.";
  blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  EXPECT_EQ(pool.chunk_count(), 2u) << "The fifth allocate() on a pool of chunks of four must add exactly one chunk.";
  EXPECT_EQ(pool.capacity(), 8u) << "Two chunks of four blocks: capacity() must be 8.";
  EXPECT_EQ(pool.free_blocks(), 3u) << "The new chunk's four blocks, minus the one just handed out: free_blocks() must be 3.";
  EXPECT_EQ(pool.blocks_per_chunk(), 4u) << "Growth never changes blocks_per_chunk().";
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), 8u) << "After every block is back, free_blocks() must equal capacity().";
}

TEST(PoolChunks, BlocksOfNewChunksAreUsable) {
  FixedPool pool(64, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 40; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << ".";
    fill(p, pool.block_size(), i);
    blocks.push_back(p);
  }
  EXPECT_EQ(pool.chunk_count(), 10u) << "Forty blocks in chunks of four need exactly ten chunks.";
  for (int i = 0; i < 40; ++i)
    EXPECT_TRUE(holds(blocks[i], pool.block_size(), i))
        << "Block " << i << " was overwritten: blocks of different chunks, or of one chunk, overlap.";
  EXPECT_TRUE(all_distinct(blocks)) << "A block was handed out twice.";
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), 40u) << "All forty blocks are back: free_blocks() must be 40.";
  EXPECT_EQ(pool.capacity(), 40u) << "capacity() must be 10 chunks x 4 blocks = 40.";
}

TEST(PoolChunks, MaxChunksIsAHardLimit) {
  FixedPool pool(64, 4, 2);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << " of the 8 that two chunks hold.";
    blocks.push_back(p);
  }
  EXPECT_THROW((void)pool.allocate(), std::bad_alloc)
      << "With max_chunks = 2 and both chunks handed out, allocate() must throw std::bad_alloc: the limit is "
         "how an engine caps the memory one kind of object may take.";
  EXPECT_EQ(pool.chunk_count(), 2u) << "The pool must never hold more than max_chunks chunks.";
  pool.deallocate(blocks[5]);
  void* p = nullptr;
  EXPECT_NO_THROW(p = pool.allocate()) << "A block given back at the limit must be usable again.";
  EXPECT_EQ(p, blocks[5]) << "At the limit, allocate() must hand out the block just freed.";
  for (void* b : blocks) pool.deallocate(b);
}

// max_chunks counts chunks, and every limit above 0 is one the contract accepts: a limit turned
// into blocks, max_chunks * blocks_per_chunk, wraps around past SIZE_MAX to a small number.
TEST(PoolChunks, AHugeChunkLimitIsCountedInChunks) {
  EXPECT_NO_THROW(FixedPool(64, 2, SIZE_MAX / 2 + 1))
      << "FixedPool(64, 2, SIZE_MAX / 2 + 1) must build: max_chunks counts chunks, and the first one is far "
         "within that limit. Compare chunk_count() with max_chunks; max_chunks * blocks_per_chunk wraps around to "
         "0 here.";
  FixedPool pool(64, 3, SIZE_MAX / 3 + 1);
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) {
    void* p = nullptr;
    EXPECT_NO_THROW(p = pool.allocate())
        << "FixedPool(64, 3, SIZE_MAX / 3 + 1) threw std::bad_alloc at block " << i + 1
        << " of 6, though it may add far more than two chunks: max_chunks counts chunks. Compare chunk_count() "
           "with max_chunks; max_chunks * blocks_per_chunk wraps around to 2 here.";
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i + 1 << " of 6.";
    blocks.push_back(p);
  }
  EXPECT_EQ(pool.chunk_count(), 2u) << "Six blocks in chunks of three take two chunks.";
  for (void* b : blocks) pool.deallocate(b);
}

TEST(PoolChunks, FailedAllocateChangesNothing) {
  FixedPool pool(64, 4, 2);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  for (int attempt = 0; attempt < 3; ++attempt) {
    EXPECT_THROW((void)pool.allocate(), std::bad_alloc) << "allocate() at the limit must throw every time.";
    EXPECT_EQ(pool.chunk_count(), 2u) << "A failed allocate() must not change chunk_count().";
    EXPECT_EQ(pool.capacity(), 8u) << "A failed allocate() must not change capacity().";
    EXPECT_EQ(pool.free_blocks(), 0u) << "A failed allocate() must not change free_blocks(): no block was taken.";
  }
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), 8u) << "After the failed calls, giving back all eight blocks must leave eight free.";
}

// A growth allocates the chunk and, at some chunk counts, room in the pool's own bookkeeping.
// Each of those allocations is refused once, in turn, at every chunk count up to 17: when
// allocate() throws, the pool must be as it was, and no chunk may be lost on the way out.
TEST(PoolChunks, AGrowthThatFailsChangesNothing) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  for (std::size_t chunks = 1; chunks <= 17 && !HasFailure(); ++chunks) {
    for_each_failing_allocation([&](long n) {
      FixedPool pool(64, 1);
      std::vector<void*> held;
      held.reserve(chunks + 1);  // before the count: the test's own vector never allocates below
      for (std::size_t i = 0; i < chunks; ++i) held.push_back(pool.allocate());
      const long in_use = news_in_use();
      void* got = nullptr;
      const auto outcome = call_with_failing_new(n, [&] { got = pool.allocate(); });
      const long leaked = news_in_use() - in_use;
      if (got != nullptr) held.push_back(got);
      const std::size_t chunk_count = pool.chunk_count(), free_blocks = pool.free_blocks();
      for (void* p : held) pool.deallocate(p);
      if (!outcome.fired) return false;
      if (!outcome.threw) {
        if (got == nullptr) {
          ADD_FAILURE() << "allocate() on a full pool of " << chunks << " chunk(s) returned nullptr when heap "
                        << "allocation " << n << " inside it failed: it must throw std::bad_alloc.";
        }
        return !HasFailure();
      }
      if (chunk_count != chunks || free_blocks != 0) {
        ADD_FAILURE() << "allocate() on a full pool of " << chunks << " chunk(s) threw std::bad_alloc when heap "
                      << "allocation " << n << " inside it failed, yet chunk_count() went from " << chunks << " to "
                      << chunk_count << " and free_blocks() from 0 to " << free_blocks << ": a growth that fails "
                      << "must change nothing. Make room in the bookkeeping before you take the chunk.";
        return false;
      }
      if (leaked != 0) {
        ADD_FAILURE() << "allocate() on a full pool of " << chunks << " chunk(s) threw std::bad_alloc when heap "
                      << "allocation " << n << " inside it failed, and " << leaked << " block(s) taken from the "
                      << "heap during the call were never given back: the new chunk is lost. Reserve room in the "
                      << "bookkeeping (every vector you push to) before you take the chunk, so that nothing can "
                      << "throw once you hold it.";
        return false;
      }
      return true;
    });
  }
}

TEST(PoolChunks, MaxChunksOfOneNeverGrows) {
  FixedPool pool(64, 4, 1);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  EXPECT_THROW((void)pool.allocate(), std::bad_alloc)
      << "max_chunks = 1 means the first chunk is all there is: the fifth allocate() must throw std::bad_alloc.";
  EXPECT_EQ(pool.chunk_count(), 1u) << "With max_chunks = 1, chunk_count() must stay 1.";
  for (void* p : blocks) pool.deallocate(p);
}

TEST(PoolChunks, OwnsEveryBlockOfEveryChunk) {
  FixedPool pool(64, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  for (int i = 0; i < 12; ++i)
    EXPECT_TRUE(pool.owns(blocks[i])) << "owns() must be true for block " << i << " (chunk " << i / 4
                                      << " of 3): every chunk counts, not only the first or the last.";
  for (int i = 0; i < 12; i += 2) pool.deallocate(blocks[i]);
  for (int i = 0; i < 12; ++i)
    EXPECT_TRUE(pool.owns(blocks[i])) << "owns() must stay true for block " << i
                                      << " whether it is free or handed out: the pool still owns its memory.";
  for (int i = 1; i < 12; i += 2) pool.deallocate(blocks[i]);
}

TEST(PoolChunks, OwnsRejectsInteriorPointers) {
  FixedPool pool(64, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  const std::size_t stride = pool.block_size();
  for (void* p : blocks) {
    for (std::size_t offset : {std::size_t{1}, sizeof(void*), stride / 2, stride - 1}) {
      EXPECT_FALSE(pool.owns(at(address(p) + offset)))
          << "owns() must be false for a pointer " << offset << " bytes into a block: only the start of a block "
          << "is a block. A pool that accepts interior pointers would take them back in deallocate() and hand "
             "out overlapping memory.";
    }
  }
  for (void* p : blocks) pool.deallocate(p);
}

TEST(PoolChunks, OwnsRejectsMemoryItNeverHandedOut) {
  FixedPool pool(64, 4, 1);
  FixedPool other(64, 4, 1);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate());
  void* foreign = other.allocate();
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  ASSERT_NE(foreign, nullptr) << "allocate() returned nullptr.";
  EXPECT_FALSE(pool.owns(foreign)) << "owns() must be false for a block of another pool.";
  EXPECT_FALSE(pool.owns(nullptr)) << "owns(nullptr) must be false.";
  int on_the_stack = 0;
  EXPECT_FALSE(pool.owns(&on_the_stack)) << "owns() must be false for a variable on the stack.";
  auto on_the_heap = std::make_unique<std::max_align_t>();
  EXPECT_FALSE(pool.owns(on_the_heap.get())) << "owns() must be false for memory from operator new.";
  std::uintptr_t lowest = UINTPTR_MAX, highest = 0;
  for (void* p : blocks) {
    lowest = std::min(lowest, address(p));
    highest = std::max(highest, address(p));
  }
  const std::size_t stride = pool.block_size();
  EXPECT_FALSE(pool.owns(at(highest + stride)))
      << "owns() must be false one stride past the last block of the only chunk: that address is the chunk's "
         "end, outside it. Compare with `<`, not `<=`.";
  EXPECT_FALSE(pool.owns(at(lowest - stride))) << "owns() must be false one stride before the chunk's first block.";
  other.deallocate(foreign);
  for (void* p : blocks) pool.deallocate(p);
}

TEST(PoolChunks, RefusesAChunkSizeThatOverflows) {
  // Every size within one alignment of SIZE_MAX: rounding any of them up wraps around, and a
  // guard that is off by one lets exactly one of them through.
  for (std::size_t below = 0; below < kAlign; ++below) {
    EXPECT_THROW(FixedPool(SIZE_MAX - below, 2), std::bad_alloc)
        << "FixedPool(SIZE_MAX - " << below << ", 2) must throw std::bad_alloc: rounding the block size up to a "
        << "multiple of " << kAlign << " wraps around to a tiny stride (or two strides do not fit in a "
        << "std::size_t), and a pool built on it hands out overlapping blocks. Compare with SIZE_MAX - " << kAlign - 1
        << " before you add.";
  }
  EXPECT_THROW(FixedPool(SIZE_MAX / 2, 4), std::bad_alloc)
      << "FixedPool(SIZE_MAX / 2, 4) must throw std::bad_alloc: the chunk's size, 4 x the stride, wraps around to "
         "a tiny number. Check before you multiply.";
}

#ifdef ALLOCLAB_TEST_ASAN
// Builds a pool of three chunks and destroys it. It runs on a thread of its own, so that once
// the thread has ended no stale copy of a chunk's address stays in a register or on a stack
// where LeakSanitizer looks for pointers.
void build_and_drop_three_chunks() {
  auto pool = std::make_unique<FixedPool>(256, 4);
  auto blocks = std::make_unique<std::vector<void*>>();
  for (int i = 0; i < 12; ++i) blocks->push_back(pool->allocate());
  for (std::size_t i = 0; i < blocks->size(); ++i) pool->deallocate((*blocks)[i]);
}
#endif

TEST(PoolChunks, DestructorReturnsEveryChunk) {
  ALLOCLAB_REQUIRE_ASAN();
#ifdef ALLOCLAB_TEST_ASAN
  std::thread(build_and_drop_three_chunks).join();
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0)
      << "LeakSanitizer found memory that nothing points to after a pool of three chunks was destroyed (its "
         "report is above): the destructor must give every chunk back to the heap, not only the first.";
#endif
}

}  // namespace stage2_chunks
