// Stage 1 — rounding, pools and segment sizes: every request is rounded to 512 bytes, goes to
// the small or the large pool, and a pool with no room asks the device for one segment of
// the size PyTorch's policy gives it.
#include <cstddef>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "test_device.hpp"

namespace stage1_rounding {

using alloclab::test::Allocator;
using alloclab::test::MiB;
using alloclab::test::show;
using alloclab::test::TestDevice;

TEST(CachingRounding, RoundSizeRoundsUpToMultiplesOf512) {
  const std::size_t cases[][2] = {{1, 512},       {511, 512},           {512, 512},          {513, 1024},
                                  {1000, 1024},   {4096, 4096},         {4097, 4608},        {MiB, MiB},
                                  {MiB + 1, MiB + 512}, {20 * MiB - 1, 20 * MiB}};
  std::string wrong;
  for (const auto& c : cases)
    if (Allocator::round_size(c[0]) != c[1])
      wrong += "\n  round_size(" + std::to_string(c[0]) + ") is " + std::to_string(Allocator::round_size(c[0])) +
               ", not " + std::to_string(c[1]);
  EXPECT_TRUE(wrong.empty()) << "round_size(n) rounds n up to a multiple of 512: every block is a multiple of 512 "
                                "bytes, so that what is left of a split block is a usable block and every block "
                                "stays 512-byte aligned." << wrong;
  EXPECT_EQ(Allocator::round_size(0), 512u)
      << "round_size(0) must be 512: the smallest block is 512 bytes, whatever is asked.";
}

TEST(CachingRounding, ZeroBytesGiveNullptrAndChangeNothing) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  EXPECT_EQ(alloc.allocate(0), nullptr)
      << "allocate(0) on an empty allocator must return nullptr: there is nothing to hand out, and a block for "
         "0 bytes would hold 512 bytes for nothing.";
  EXPECT_EQ(device.malloc_calls(), 0u) << "allocate(0) on an empty allocator must not call the device: a segment "
                                          "taken for 0 bytes is device memory held for nothing.";
  EXPECT_TRUE(alloclab::test::same(alloc.stats(), alloclab::test::caching::CacheStats{}))
      << "allocate(0) on an empty allocator must change no statistic (it is neither a cache hit nor an "
         "allocation): " << show(alloc.stats());
  // The same with a segment in the cache, whose free rest could serve a block.
  void* p = alloc.allocate(100);
  ASSERT_NE(p, nullptr) << "To check allocate(0) beside a cached segment, this test first allocates 100 bytes, "
                           "and allocate(100) returned nullptr: it must take a segment from the device and hand "
                           "out its start.";
  const auto before = alloc.stats();
  const auto segments = alloc.snapshot();
  const std::size_t calls = device.malloc_calls();
  EXPECT_EQ(alloc.allocate(0), nullptr)
      << "allocate(0) must return nullptr even when a cached free block could serve it.";
  EXPECT_EQ(device.malloc_calls(), calls) << "allocate(0) beside a cached segment must not call the device.";
  EXPECT_TRUE(alloclab::test::same(alloc.stats(), before))
      << "allocate(0) beside a cached segment must change no statistic: before " << show(before) << ", after "
      << show(alloc.stats());
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments))
      << "allocate(0) beside a cached segment must split no block and hand out none:" << show(alloc.snapshot());
}

TEST(CachingRounding, ASmallRequestGetsATwoMiBSegment) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(100);
  ASSERT_NE(p, nullptr) << "allocate(100) on an empty allocator returned nullptr.";
  EXPECT_EQ(device.mallocs(), 1u) << "The first request must cost exactly one device call.";
  EXPECT_EQ(device.size_of(p), 2 * MiB)
      << "A request of 100 bytes rounds to 512, which belongs to the small pool, whose segments are 2 MiB: the "
         "first block of a new segment starts at the segment's base, and the device says that allocation is "
      << device.size_of(p) << " bytes. Asking the device for just 512 bytes would make every small request a "
         "device call.";
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.reserved_bytes, 2 * MiB) << "reserved_bytes is the sum of the segments' sizes: " << show(stats);
  EXPECT_EQ(stats.device_mallocs, 1u) << "device_mallocs counts successful device calls: " << show(stats);
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 1u) << "snapshot() must list the one segment:" << show(segments);
  EXPECT_TRUE(segments[0].small_pool) << "A 512-byte block lives in the small pool:" << show(segments);
  EXPECT_EQ(segments[0].size, 2 * MiB) << "The segment is 2 MiB:" << show(segments);
  EXPECT_EQ(segments[0].base, alloclab::test::address(p)) << "The segment's base is the device's pointer.";
}

TEST(CachingRounding, OneMiBIsTheLargestSmallRequest) {
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* p = alloc.allocate(MiB);
    ASSERT_NE(p, nullptr) << "allocate(1 MiB) returned nullptr.";
    EXPECT_EQ(device.size_of(p), 2 * MiB)
        << "A request of exactly 1 MiB still belongs to the small pool (sizes up to and including 1 MiB), so "
           "its segment is 2 MiB, not " << device.size_of(p) << ".";
    const auto segments = alloc.snapshot();
    EXPECT_TRUE(segments.size() == 1 && segments[0].small_pool)
        << "allocate(1 MiB) must create one small pool segment:" << show(segments);
  }
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* p = alloc.allocate(MiB + 1);
    ASSERT_NE(p, nullptr) << "allocate(1 MiB + 1) returned nullptr.";
    EXPECT_EQ(device.size_of(p), 20 * MiB)
        << "1 MiB + 1 rounds to 1 MiB + 512, above 1 MiB: the large pool, whose segment for a request under "
           "10 MiB is 20 MiB, not " << device.size_of(p) << ".";
    const auto segments = alloc.snapshot();
    EXPECT_TRUE(segments.size() == 1 && !segments[0].small_pool)
        << "allocate(1 MiB + 1) must create one large pool segment:" << show(segments);
  }
}

TEST(CachingRounding, LargeSegmentSizes) {
  // {request, segment}: a rounded size under 10 MiB gets one 20 MiB segment that later requests
  // can share; from 10 MiB on, a segment of the rounded size rounded up to 2 MiB. The rounded
  // size decides: 10 MiB - 1 rounds to 10 MiB.
  const std::size_t cases[][2] = {{2 * MiB, 20 * MiB},       {5 * MiB + 7, 20 * MiB},
                                  {10 * MiB - 512, 20 * MiB}, {10 * MiB - 1, 10 * MiB},
                                  {10 * MiB, 10 * MiB},       {10 * MiB + 1, 12 * MiB},
                                  {11 * MiB, 12 * MiB},       {33 * MiB + 512, 34 * MiB},
                                  {64 * MiB, 64 * MiB}};
  for (const auto& c : cases) {
    TestDevice device(128 * MiB);
    Allocator alloc(device);
    void* p = alloc.allocate(c[0]);
    ASSERT_NE(p, nullptr) << "allocate(" << c[0] << ") returned nullptr on a device with 128 MiB free.";
    EXPECT_EQ(device.size_of(p), c[1])
        << "allocate(" << c[0] << ") must get a segment of " << c[1] << " bytes, not " << device.size_of(p)
        << ": a large request whose rounded size is under 10 MiB gets 20 MiB (room for more like it), a "
           "larger one its rounded size rounded up to a multiple of 2 MiB.";
    EXPECT_EQ(alloc.stats().reserved_bytes, c[1]) << "reserved_bytes must be the segment's size after allocate("
                                                  << c[0] << "): " << show(alloc.stats());
  }
}

TEST(CachingRounding, APoolNeverUsesTheOtherPoolsSegments) {
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* large = alloc.allocate(MiB + 512);  // 20 MiB segment, most of it left free
    ASSERT_NE(large, nullptr) << "allocate(1 MiB + 512) returned nullptr.";
    void* small = alloc.allocate(512);
    ASSERT_NE(small, nullptr) << "allocate(512) returned nullptr.";
    EXPECT_EQ(device.mallocs(), 2u)
        << "A small request must not be cut from the large pool's free space: it needs a small segment of its "
           "own, so two device calls in all. Mixing pools fills large segments with small blocks that pin them.";
    EXPECT_EQ(device.size_of(small), 2 * MiB) << "The small request's block starts a 2 MiB small segment.";
  }
  {
    TestDevice device(64 * MiB);
    Allocator alloc(device);
    void* small = alloc.allocate(512);  // 2 MiB small segment, most of it free
    ASSERT_NE(small, nullptr) << "allocate(512) returned nullptr.";
    void* large = alloc.allocate(MiB + 512);
    ASSERT_NE(large, nullptr) << "allocate(1 MiB + 512) returned nullptr.";
    EXPECT_EQ(device.mallocs(), 2u) << "A large request must not be cut from the small pool's free space, even "
                                       "when it would fit: two device calls in all.";
    EXPECT_EQ(device.size_of(large), 20 * MiB) << "The large request's block starts a 20 MiB large segment.";
    const auto segments = alloc.snapshot();
    ASSERT_EQ(segments.size(), 2u) << "Two segments, one per pool:" << show(segments);
    EXPECT_NE(segments[0].small_pool, segments[1].small_pool) << "One segment per pool:" << show(segments);
  }
}

TEST(CachingRounding, TheDestructorReturnsEverySegment) {
  TestDevice device(64 * MiB);
  {
    Allocator alloc(device);
    ASSERT_NE(alloc.allocate(100), nullptr) << "allocate(100) returned nullptr.";
    ASSERT_NE(alloc.allocate(3 * MiB), nullptr) << "allocate(3 MiB) returned nullptr.";
    ASSERT_EQ(device.live_allocations(), 2u) << "Two requests, one per pool, take two device segments.";
  }
  EXPECT_EQ(device.live_allocations(), 0u)
      << "The destructor must give every segment back to the device, blocks still allocated or not: otherwise "
         "the device memory is lost for the rest of the process.";
  EXPECT_EQ(device.bad_frees(), 0u) << "The destructor gave the device a pointer it never handed out.";
}

TEST(CachingRounding, AnAllocatorCannotBeCopied) {
  const alloclab::test::Copyability yours = alloclab::test::caching::traits_of_the_allocator();
  EXPECT_FALSE(yours.copy_constructible)
      << "CachingAllocator must not be copy-constructible (the contract deletes its copy constructor): a copy "
         "would hold the same segments, and the two destructors would give each segment back to the device "
         "twice.";
  EXPECT_FALSE(yours.copy_assignable)
      << "CachingAllocator must not be copy-assignable either, for the same reason.";
}

}  // namespace stage1_rounding
