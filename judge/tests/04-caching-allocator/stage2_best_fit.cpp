// Stage 2 — reuse: a request is served from the smallest free block of its pool that fits,
// the lowest address among equals, without a device call; the block is split only when what
// is left is worth keeping.
#include <cstddef>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "test_device.hpp"

namespace stage2_best_fit {

using alloclab::test::Allocator;
using alloclab::test::KiB;
using alloclab::test::MiB;
using alloclab::test::show;
using alloclab::test::TestDevice;

char* at(void* p, std::size_t offset) { return static_cast<char*>(p) + offset; }

TEST(CachingBestFit, TheNextSmallRequestIsACacheHit) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(512);
  void* b = alloc.allocate(1000);
  ASSERT_TRUE(a && b) << "allocate(512) then allocate(1000) must both succeed.";
  EXPECT_EQ(b, at(a, 512)) << "The second block must come right after the first in the same segment: the first "
                              "request split the segment, and the rest is the only free block.";
  EXPECT_EQ(device.mallocs(), 1u) << "The second request fits in the first segment: no second device call.";
  EXPECT_EQ(alloc.stats().cache_hits, 1u)
      << "A request served without a device call counts one cache hit; the first one was not: " << show(alloc.stats());
}

TEST(CachingBestFit, SmallBlocksAreSplitToTheRoundedSize) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(3000);
  ASSERT_NE(p, nullptr) << "allocate(3000) returned nullptr.";
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 1u) << "One segment expected:" << show(segments);
  ASSERT_EQ(segments[0].blocks.size(), 2u)
      << "3000 bytes round to 3072; the 2 MiB segment must be split into the 3072-byte block and a free rest, so "
         "that the rest serves later requests:" << show(segments);
  EXPECT_TRUE(segments[0].blocks[0].allocated && segments[0].blocks[0].size == 3072)
      << "The first block is the allocated 3072 bytes:" << show(segments);
  EXPECT_TRUE(!segments[0].blocks[1].allocated && segments[0].blocks[1].size == 2 * MiB - 3072)
      << "The second block is the free rest:" << show(segments);
  EXPECT_EQ(alloc.stats().allocated_bytes, 3072u)
      << "allocated_bytes counts the rounded block, 3072, not the 3000 asked: " << show(alloc.stats());
}

TEST(CachingBestFit, ASmallRemainderOf512IsKept) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(MiB);
  void* b = alloc.allocate(MiB - 512);
  ASSERT_TRUE(a && b) << "allocate(1 MiB) then allocate(1 MiB - 512) must both succeed in one 2 MiB segment.";
  EXPECT_EQ(alloc.stats().allocated_bytes, 2 * MiB - 512)
      << "The second block leaves 512 bytes: in the small pool a remainder of 512 bytes or more is split off, so "
         "only the rounded size counts as allocated: " << show(alloc.stats());
  void* c = alloc.allocate(1);
  ASSERT_NE(c, nullptr) << "allocate(1) returned nullptr.";
  EXPECT_EQ(c, at(a, 2 * MiB - 512))
      << "allocate(1) rounds up to 512 bytes, and the 512 bytes left at the end of the segment fit it exactly: "
         "best fit must take that block (an exact fit is the best fit there is):" << show(alloc.snapshot());
  EXPECT_EQ(device.mallocs(), 1u) << "All three requests fit in one segment.";
}

TEST(CachingBestFit, ALargeRemainderAboveOneMiBIsSplit) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(3 * MiB);
  ASSERT_NE(p, nullptr) << "allocate(3 MiB) returned nullptr.";
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 1u) << "One segment expected:" << show(segments);
  ASSERT_EQ(segments[0].blocks.size(), 2u)
      << "3 MiB from a 20 MiB segment leaves 17 MiB, more than 1 MiB: the block must be split:" << show(segments);
  EXPECT_EQ(alloc.stats().allocated_bytes, 3 * MiB) << show(alloc.stats());
  void* q = alloc.allocate(19 * MiB - 512 - 3 * MiB);  // leaves exactly 1 MiB + 512: still split
  ASSERT_NE(q, nullptr) << "A second large request that fits in the free rest returned nullptr.";
  EXPECT_EQ(q, at(p, 3 * MiB)) << "The second request must come from the free rest of the segment.";
  const auto after = alloc.snapshot();
  ASSERT_EQ(after.size(), 1u) << "Still one segment:" << show(after);
  EXPECT_EQ(after[0].blocks.size(), 3u)
      << "The rest of 17 MiB minus a 16 MiB - 512 block leaves 1 MiB + 512, more than 1 MiB: it is split off:"
      << show(after);
}

TEST(CachingBestFit, ALargeRemainderOfOneMiBOrLessIsHandedOutWithTheBlock) {
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* p = alloc.allocate(19 * MiB);  // a 20 MiB segment: 1 MiB would be left
    ASSERT_NE(p, nullptr) << "allocate(19 MiB) returned nullptr.";
    const auto segments = alloc.snapshot();
    ASSERT_EQ(segments.size(), 1u) << "One segment expected:" << show(segments);
    EXPECT_EQ(segments[0].blocks.size(), 1u)
        << "19 MiB from a 20 MiB segment leaves exactly 1 MiB; the large pool keeps only remainders above 1 MiB, "
           "so the whole segment is one allocated block. A large segment cut into small leftovers serves no "
           "large request later:" << show(segments);
    EXPECT_EQ(alloc.stats().allocated_bytes, 20 * MiB)
        << "allocated_bytes counts the whole block handed out, 20 MiB: " << show(alloc.stats());
  }
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* a = alloc.allocate(2 * MiB);  // 20 MiB segment: 2 MiB allocated, 18 MiB free
    ASSERT_NE(a, nullptr) << "allocate(2 MiB) returned nullptr.";
    void* b = alloc.allocate(17 * MiB + 512);  // fits the 18 MiB block, leaving 1 MiB - 512
    ASSERT_NE(b, nullptr) << "allocate(17 MiB + 512) returned nullptr.";
    EXPECT_EQ(device.mallocs(), 1u) << "The 18 MiB free block fits the request: no device call.";
    EXPECT_EQ(alloc.stats().allocated_bytes, 20 * MiB)
        << "The free block of 18 MiB leaves 1 MiB - 512 after the request: too little for the large pool to "
           "keep, so all 18 MiB are handed out and counted: " << show(alloc.stats());
  }
}

TEST(CachingBestFit, BestFitTakesTheSmallestBlockThatFits) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  // One segment laid out as [4 KiB][512][1 KiB][512][2 KiB][512][rest]; the 4, 1 and 2 KiB
  // blocks are then freed. Their allocated neighbours keep them apart.
  const std::size_t sizes[] = {4 * KiB, 512, KiB, 512, 2 * KiB, 512};
  void* p[6];
  for (int i = 0; i < 6; ++i) {
    p[i] = alloc.allocate(sizes[i]);
    ASSERT_NE(p[i], nullptr) << "allocate(" << sizes[i] << ") returned nullptr.";
  }
  alloc.deallocate(p[0]);
  alloc.deallocate(p[2]);
  alloc.deallocate(p[4]);
  void* one = alloc.allocate(1000);
  EXPECT_EQ(one, p[2]) << "Free blocks of 4 KiB, 1 KiB, 2 KiB and the rest: allocate(1000) (1 KiB rounded) must "
                          "take the 1 KiB block, the smallest that fits. The first fit, 4 KiB, wastes 3 KiB "
                          "that a later 4 KiB request will miss.";
  void* two = alloc.allocate(1500);
  EXPECT_EQ(two, p[4]) << "Free blocks of 4 KiB, 2 KiB and the rest: allocate(1500) (1536 rounded) must take the "
                          "2 KiB block, the smallest that fits.";
  void* four = alloc.allocate(4 * KiB);
  EXPECT_EQ(four, p[0]) << "allocate(4 KiB) must take the free 4 KiB block, an exact fit.";
  EXPECT_EQ(device.mallocs(), 1u) << "Every request fits in the one segment.";
}

TEST(CachingBestFit, TiesGoToTheLowestAddress) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p[4];
  for (auto& q : p) {
    q = alloc.allocate(KiB);
    ASSERT_NE(q, nullptr) << "allocate(1 KiB) returned nullptr.";
  }
  void* guard = alloc.allocate(512);
  ASSERT_NE(guard, nullptr) << "allocate(512) returned nullptr.";
  // Free blocks 1 KiB at p[2] and p[0], freed highest first; p[1] and p[3] keep them apart.
  alloc.deallocate(p[2]);
  alloc.deallocate(p[0]);
  EXPECT_EQ(alloc.allocate(KiB), p[0])
      << "Two free blocks of 1 KiB fit exactly: the tie goes to the lower address, whichever was freed last. "
         "Packing toward the start of a segment leaves its end free in one piece.";
  EXPECT_EQ(alloc.allocate(KiB), p[2]) << "The other 1 KiB block is next.";
}

TEST(CachingBestFit, BestFitSearchesEverySegmentOfThePool) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(MiB);  // segment 1: [1 MiB][1 MiB]
  void* b = alloc.allocate(MiB);
  ASSERT_TRUE(a && b) << "Two 1 MiB requests must fill one 2 MiB segment.";
  void* c = alloc.allocate(512 * KiB);  // segment 2: [512 KiB][512 KiB][rest]
  void* d = alloc.allocate(512 * KiB);
  ASSERT_TRUE(c && d) << "Two 512 KiB requests must succeed in a second segment.";
  ASSERT_EQ(device.mallocs(), 2u) << "Two small segments expected.";
  alloc.deallocate(a);  // 1 MiB free in segment 1
  alloc.deallocate(c);  // 512 KiB free in segment 2
  void* e = alloc.allocate(512 * KiB);
  EXPECT_EQ(e, c) << "The best fit for 512 KiB is the free 512 KiB block of the second segment, not the 1 MiB "
                     "block of the first: best fit looks at every free block of the pool, not segment by segment.";
}

TEST(CachingBestFit, CacheHitsCountRequestsServedWithoutTheDevice) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(100);       // device
  void* b = alloc.allocate(200);       // hit
  void* c = alloc.allocate(3 * MiB);   // device (large pool)
  void* d = alloc.allocate(2 * MiB);   // hit (the large segment's rest)
  void* e = alloc.allocate(5000);      // hit
  ASSERT_TRUE(a && b && c && d && e) << "Five requests on a roomy device must all succeed.";
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.cache_hits, 3u) << "Three of five requests came from the cache: " << show(stats);
  EXPECT_EQ(stats.device_mallocs, 2u) << "Two requests needed a new segment: " << show(stats);
}

}  // namespace stage2_best_fit
