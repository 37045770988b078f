// Stage 3 — freeing: a freed block merges with its free neighbours in its own segment, a bad
// free is refused without harm, and empty_cache gives wholly free segments back.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "test_device.hpp"

namespace stage3_coalescing {

using alloclab::test::caching::BlockInfo;
using alloclab::test::Allocator;
using alloclab::test::KiB;
using alloclab::test::MiB;
using alloclab::test::show;
using alloclab::test::TestDevice;

// The blocks of the only segment, as (size, allocated) pairs.
std::vector<std::pair<std::size_t, bool>> layout(const Allocator& alloc) {
  std::vector<std::pair<std::size_t, bool>> out;
  const auto segments = alloc.snapshot();
  if (segments.size() == 1)
    for (const BlockInfo& b : segments[0].blocks) out.emplace_back(b.size, b.allocated);
  return out;
}

using Layout = std::vector<std::pair<std::size_t, bool>>;

TEST(CachingCoalescing, FreeMergesWithTheFreeBlockAfterIt) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(4 * KiB);
  ASSERT_TRUE(a && b) << "Two 4 KiB requests must succeed.";
  alloc.deallocate(b);
  EXPECT_EQ(layout(alloc), (Layout{{4 * KiB, true}, {2 * MiB - 4 * KiB, false}}))
      << "Freeing the block before the free rest must merge the two into one free block; left apart, they could "
         "never serve a request larger than either:" << show(alloc.snapshot());
  EXPECT_EQ(alloc.stats().allocated_bytes, 4 * KiB) << "Freeing 4 KiB takes it off allocated_bytes.";
}

TEST(CachingCoalescing, FreeMergesWithTheFreeBlockBeforeIt) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(4 * KiB);
  void* c = alloc.allocate(4 * KiB);
  ASSERT_TRUE(a && b && c) << "Three 4 KiB requests must succeed.";
  alloc.deallocate(a);
  alloc.deallocate(b);
  EXPECT_EQ(layout(alloc), (Layout{{8 * KiB, false}, {4 * KiB, true}, {2 * MiB - 12 * KiB, false}}))
      << "Freeing the block after a free one must merge it into that block:" << show(alloc.snapshot());
}

TEST(CachingCoalescing, FreeMergesOnBothSides) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(4 * KiB);
  void* c = alloc.allocate(4 * KiB);
  void* d = alloc.allocate(4 * KiB);
  ASSERT_TRUE(a && b && c && d) << "Four 4 KiB requests must succeed.";
  alloc.deallocate(a);
  alloc.deallocate(c);
  alloc.deallocate(b);
  EXPECT_EQ(layout(alloc), (Layout{{12 * KiB, false}, {4 * KiB, true}, {2 * MiB - 16 * KiB, false}}))
      << "Freeing a block between two free ones must merge all three:" << show(alloc.snapshot());
  alloc.deallocate(d);
  EXPECT_EQ(layout(alloc), (Layout{{2 * MiB, false}}))
      << "With every block freed, the segment is one free block again:" << show(alloc.snapshot());
  EXPECT_EQ(alloc.stats().allocated_bytes, 0u) << show(alloc.stats());
}

TEST(CachingCoalescing, AMergedBlockServesALargerRequest) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(MiB);
  void* b = alloc.allocate(MiB);
  ASSERT_TRUE(a && b) << "Two 1 MiB requests must fill one segment.";
  alloc.deallocate(b);
  alloc.deallocate(a);
  void* c = alloc.allocate(MiB);
  void* d = alloc.allocate(MiB);
  EXPECT_EQ(c, a) << "After both blocks are freed and merged, the segment serves 1 MiB again from its start.";
  EXPECT_EQ(d, b) << "And the next 1 MiB after it.";
  EXPECT_EQ(device.mallocs(), 1u) << "The merged segment serves both requests: no device call.";
}

// The first block of each segment that runs past the segment's end, described, or "".
std::string block_past_its_segment(const std::vector<alloclab::test::caching::SegmentInfo>& segments) {
  for (const auto& seg : segments)
    for (const auto& b : seg.blocks)
      if (b.offset + b.size > seg.size)
        return "the block at offset " + std::to_string(b.offset) + " of the segment at " + std::to_string(seg.base) +
               " is " + std::to_string(b.size) + " bytes long: it runs " + std::to_string(b.offset + b.size - seg.size) +
               " bytes past the end of its " + std::to_string(seg.size) + "-byte segment";
  return "";
}

// Two small segments side by side in the device's memory, [a][b] and [c][d]: b ends where c
// starts. Freed, b and c touch, yet they belong to two device allocations.
TEST(CachingCoalescing, NeverMergesAcrossSegments) {
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* a = alloc.allocate(MiB);
    void* b = alloc.allocate(MiB);
    void* c = alloc.allocate(MiB);
    void* d = alloc.allocate(MiB);
    ASSERT_TRUE(a && b && c && d) << "Four 1 MiB requests must fill two small segments.";
    ASSERT_EQ(static_cast<char*>(c), static_cast<char*>(a) + 2 * MiB)
        << "This test expects the device to place the second segment right after the first.";
    alloc.deallocate(b);  // the end of segment 1
    alloc.deallocate(c);  // the start of segment 2, at the next address
    alloc.deallocate(a);  // segment 1 holds no allocated block any more
    alloc.empty_cache();
    ASSERT_EQ(device.live_allocations(), 1u)
        << "With a and b freed, the first segment holds no allocated block: its blocks must merge into one free "
           "block exactly as long as the segment, which empty_cache gives back to the device. The segment was "
           "kept: a block merged across the segment's end with the free start of the next segment (at the very "
           "next address, but another device allocation), so the merged block runs past its own segment's end, "
           "and neither segment can ever be given back. A freed block merges only with its neighbours in its "
           "own segment.";
    EXPECT_TRUE(device.size_of(a) == 0 && device.size_of(c) == 2 * MiB)
        << "The segment given back must be the first one, [a][b], and the second, [c][d], must stay.";
    const auto segments = alloc.snapshot();
    EXPECT_EQ(block_past_its_segment(segments), "")
        << "A block never runs past the end of its segment:" << show(segments);
    EXPECT_EQ(segments.size(), 1u) << "Only the second segment, [c][d], is left:" << show(segments);
  }
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* a = alloc.allocate(MiB);
    void* b = alloc.allocate(MiB);
    void* c = alloc.allocate(MiB);
    void* d = alloc.allocate(MiB);
    ASSERT_TRUE(a && b && c && d) << "Four 1 MiB requests must fill two small segments.";
    alloc.deallocate(c);  // the start of segment 2
    alloc.deallocate(b);  // the end of segment 1, just below it
    const auto segments = alloc.snapshot();
    const std::string past = block_past_its_segment(segments);
    EXPECT_EQ(past, "") << "After freeing the end of one segment and the free start of the next, which touch in "
                           "memory, " << past << ": it merged with a block of another segment. A segment is one "
                           "device allocation, given back whole or not at all; a block that spans two could "
                           "never be returned, and each segment's size would change under it:" << show(segments);
    ASSERT_EQ(segments.size(), 2u) << "Both segments stay, each holding an allocated block:" << show(segments);
    for (const auto& seg : segments)
      EXPECT_TRUE(seg.size == 2 * MiB && seg.blocks.size() == 2u)
          << "Each segment is still two 1 MiB blocks, one free and one allocated: the free ones touch in memory "
             "but must stay apart:" << show(segments);
  }
}

TEST(CachingCoalescing, FreeingNullptrDoesNothing) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(512);
  ASSERT_NE(a, nullptr) << "allocate(512) returned nullptr.";
  const auto before = alloc.snapshot();
  EXPECT_NO_THROW(alloc.deallocate(nullptr)) << "deallocate(nullptr) is a no-op, as free(NULL) is.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), before)) << "deallocate(nullptr) must change nothing.";
}

// Every bad free must throw std::invalid_argument and leave the allocator as it was.
void expect_refused(Allocator& alloc, const TestDevice& device, void* p, const char* what) {
  const auto segments = alloc.snapshot();
  const auto stats = alloc.stats();
  const std::size_t device_frees = device.free_calls();
  EXPECT_THROW(alloc.deallocate(p), std::invalid_argument)
      << "deallocate of " << what << " must throw std::invalid_argument: accepting it would put memory "
         "someone else uses on the free list, and the next request would hand it out twice.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments))
      << "A refused deallocate of " << what << " must change nothing:" << show(alloc.snapshot());
  EXPECT_TRUE(alloclab::test::same(alloc.stats(), stats)) << "A refused deallocate of " << what
                                                          << " must change no statistic: " << show(alloc.stats());
  EXPECT_EQ(device.free_calls(), device_frees) << "A refused deallocate must not call the device.";
}

TEST(CachingCoalescing, APointerFromElsewhereIsRefused) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  ASSERT_NE(a, nullptr) << "allocate(4 KiB) returned nullptr.";
  int local = 0;
  expect_refused(alloc, device, &local, "a pointer this allocator never handed out");
}

TEST(CachingCoalescing, AnInteriorPointerIsRefused) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(4 * KiB);
  ASSERT_TRUE(a && b) << "Two 4 KiB requests must succeed.";
  expect_refused(alloc, device, static_cast<char*>(a) + 512, "a pointer into the middle of an allocated block");
  expect_refused(alloc, device, static_cast<char*>(b) + 4 * KiB, "the start of the segment's free rest");
}

TEST(CachingCoalescing, ADoubleFreeIsRefused) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(4 * KiB);
  ASSERT_TRUE(a && b) << "Two 4 KiB requests must succeed.";
  alloc.deallocate(b);
  expect_refused(alloc, device, b, "a block already freed (and merged with the free rest)");
  alloc.deallocate(a);
  expect_refused(alloc, device, a, "a block already freed");
}

TEST(CachingCoalescing, EmptyCacheFreesOnlyWhollyFreeSegments) {
  TestDevice device(128 * MiB);
  Allocator alloc(device);
  void* small = alloc.allocate(4 * KiB);   // a small segment, freed below
  void* large = alloc.allocate(12 * MiB);  // a 12 MiB large segment, freed below
  void* other = alloc.allocate(5 * MiB);   // a 20 MiB large segment: its first block, freed below,
  void* kept = alloc.allocate(3 * MiB);    // and its second, which keeps the segment
  ASSERT_TRUE(small && kept && large && other) << "Four requests on a roomy device must succeed.";
  ASSERT_EQ(device.mallocs(), 3u) << "Three segments expected: small 2 MiB, large 20 MiB, large 12 MiB.";
  alloc.deallocate(small);
  alloc.deallocate(large);
  alloc.deallocate(other);
  alloc.empty_cache();
  const auto segments = alloc.snapshot();
  EXPECT_EQ(device.live_allocations(), 1u)
      << "empty_cache must give back the two wholly free segments and keep the one that still holds an "
         "allocated block, even though that segment starts with a free block:" << show(segments);
  EXPECT_EQ(device.size_of(other), 20 * MiB)
      << "The 20 MiB segment that starts with the freed block and holds the allocated one must stay.";
  EXPECT_NE(alloclab::test::block_at(segments, kept), nullptr) << "The allocated block must still be listed.";
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.reserved_bytes, 20 * MiB) << "reserved_bytes drops by the segments returned: " << show(stats);
  EXPECT_EQ(stats.device_frees, 2u) << "device_frees counts the two segments returned: " << show(stats);
  EXPECT_EQ(stats.peak_reserved_bytes, 34 * MiB) << "The peak remembers what was reserved: " << show(stats);
  EXPECT_EQ(device.bad_frees(), 0u) << "empty_cache gave the device a pointer it never handed out.";
}

TEST(CachingCoalescing, AfterEmptyCacheTheDeviceIsAskedAgain) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  ASSERT_NE(a, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.deallocate(a);
  alloc.empty_cache();
  ASSERT_EQ(device.live_allocations(), 0u) << "empty_cache must return the wholly free segment.";
  void* b = alloc.allocate(4 * KiB);
  ASSERT_NE(b, nullptr) << "allocate(4 KiB) after empty_cache returned nullptr.";
  EXPECT_EQ(device.mallocs(), 2u) << "The returned segment is gone: the next request needs the device again.";
  EXPECT_EQ(device.live_allocations(), 1u) << "One segment is live again.";
}

TEST(CachingCoalescing, AFreedBlockGoesBackToItsOwnPool) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* large = alloc.allocate(3 * MiB);
  ASSERT_NE(large, nullptr) << "allocate(3 MiB) returned nullptr.";
  alloc.deallocate(large);
  void* small = alloc.allocate(4 * KiB);
  ASSERT_NE(small, nullptr) << "allocate(4 KiB) returned nullptr.";
  EXPECT_EQ(device.mallocs(), 2u)
      << "A free 20 MiB block of the large pool must not serve a 4 KiB request: it needs a small segment.";
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 2u) << show(segments);
  for (const auto& seg : segments) {
    if (!seg.small_pool) {
      EXPECT_EQ(seg.blocks.size(), 1u) << "The large segment is still one free block:" << show(segments);
    }
  }
}

}  // namespace stage3_coalescing
