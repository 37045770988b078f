// Stage 4 — out of memory, stats and snapshot: a refusal empties the cache and retries once,
// a final refusal throws a readable OutOfMemoryError and loses nothing, the stats count
// everything, and a long random run keeps every invariant after every step.
#include "caching_allocator.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "test_device.hpp"

namespace stage4_out_of_memory {

using alloclab::OutOfMemoryError;
using alloclab::test::Allocator;
using alloclab::test::KiB;
using alloclab::test::MiB;
using alloclab::test::show;
using alloclab::test::TestDevice;

TEST(CachingOomAndSnapshot, ARefusalEmptiesTheCacheAndRetriesOnce) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* small = alloc.allocate(4 * KiB);
  ASSERT_NE(small, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.deallocate(small);  // its 2 MiB segment stays cached
  device.set_limit(21 * MiB);  // a 20 MiB segment fits only once the cached 2 MiB are returned
  void* large = nullptr;
  EXPECT_NO_THROW(large = alloc.allocate(4 * MiB))
      << "When the device refuses a segment, the allocator must empty its cache (the free 2 MiB segment) and "
         "ask once more, which succeeds here. Cached memory that nobody uses must never cause an out of memory.";
  EXPECT_NE(large, nullptr) << "allocate(4 MiB) must succeed after the retry.";
  EXPECT_EQ(device.malloc_calls(), 3u) << "Device calls: the small segment, the refused 20 MiB, the retry.";
  EXPECT_EQ(device.refusals(), 1u) << "Exactly one refusal.";
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.oom_retries, 1u) << "oom_retries counts the retries after a refusal: " << show(stats);
  EXPECT_EQ(stats.device_frees, 1u) << "The cached small segment was returned: " << show(stats);
  EXPECT_EQ(stats.reserved_bytes, 20 * MiB) << show(stats);
  EXPECT_EQ(stats.device_mallocs, 2u) << "device_mallocs counts successful calls only: " << show(stats);
}

TEST(CachingOomAndSnapshot, ASecondRefusalThrowsOutOfMemoryError) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* small = alloc.allocate(4 * KiB);
  ASSERT_NE(small, nullptr) << "allocate(4 KiB) returned nullptr.";
  device.set_limit(21 * MiB);
  const std::size_t calls = device.malloc_calls();
  EXPECT_THROW((void)alloc.allocate(4 * MiB), OutOfMemoryError)
      << "The small segment holds an allocated block, so emptying the cache frees nothing and the retry is "
         "refused too: allocate must throw alloclab::OutOfMemoryError, not return nullptr (a caller that forgets "
         "to check would write to address 0).";
  EXPECT_EQ(device.malloc_calls() - calls, 2u)
      << "The device must be asked exactly twice: once, and once more after empty_cache. Retrying in a loop "
         "only wastes time: nothing frees memory in between.";
  EXPECT_EQ(alloc.stats().oom_retries, 1u) << show(alloc.stats());
}

TEST(CachingOomAndSnapshot, TheMessageSaysWhatWasAskedAllocatedAndReserved) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(300'000);  // 300,032 bytes allocated of a 2 MiB segment
  ASSERT_NE(a, nullptr) << "allocate(300000) returned nullptr.";
  device.set_limit(10 * MiB);
  const std::size_t requested = 20 * MiB + 12'345;
  try {
    (void)alloc.allocate(requested);
    ADD_FAILURE() << "allocate(" << requested << ") must throw OutOfMemoryError: the device refuses it twice.";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(dynamic_cast<const OutOfMemoryError*>(&e), nullptr)
        << "The exception must be an alloclab::OutOfMemoryError (a std::bad_alloc).";
    const std::string what = e.what();
    for (const std::string& number : {std::to_string(requested), std::string("300032"), std::string("2097152")})
      EXPECT_TRUE(what.find(number) != std::string::npos)
          << "what() must give the requested bytes (" << requested << "), the allocated bytes (300032) and the "
          << "reserved bytes (2097152), in decimal; it says: \"" << what << "\". Those three numbers are how "
          << "anyone tells a real shortage from fragmentation.";
  }
}

TEST(CachingOomAndSnapshot, OutOfMemoryLosesNothing) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(8 * KiB);
  void* c = alloc.allocate(3 * MiB);
  ASSERT_TRUE(a && b && c) << "Three requests on a roomy device must succeed.";
  alloc.deallocate(a);  // a free block inside a segment that stays
  device.set_limit(device.in_use());
  const auto segments = alloc.snapshot();
  const auto stats = alloc.stats();
  EXPECT_THROW((void)alloc.allocate(40 * MiB), OutOfMemoryError) << "The device is full: 40 MiB cannot fit.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments))
      << "A failed allocate must leave every segment and block as it was (no segment here was wholly free, so "
         "empty_cache returned none):" << show(alloc.snapshot());
  const auto after = alloc.stats();
  EXPECT_EQ(after.allocated_bytes, stats.allocated_bytes) << show(after);
  EXPECT_EQ(after.reserved_bytes, stats.reserved_bytes) << show(after);
  EXPECT_EQ(after.device_mallocs, stats.device_mallocs) << show(after);
  EXPECT_EQ(after.cache_hits, stats.cache_hits) << "A failed request is no cache hit: " << show(after);
  void* d = alloc.allocate(4 * KiB);
  EXPECT_EQ(d, a) << "After the failure, the cached free block still serves a request that fits it.";
  alloc.deallocate(b);
  alloc.deallocate(c);
  alloc.deallocate(d);
  EXPECT_EQ(alloc.stats().allocated_bytes, 0u) << "Every block could be freed after the failure.";
}

TEST(CachingOomAndSnapshot, RequestsTooLargeToRoundThrowWithoutADeviceCall) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(512);
  ASSERT_NE(a, nullptr) << "allocate(512) returned nullptr.";
  const auto stats = alloc.stats();
  for (std::size_t n : {SIZE_MAX, SIZE_MAX - 510, SIZE_MAX - MiB}) {
    const std::size_t calls = device.malloc_calls();
    try {
      (void)alloc.allocate(n);
      ADD_FAILURE() << "allocate(" << n << ") must throw OutOfMemoryError: rounding it up to 512 bytes, or its "
                    << "segment's size up to 2 MiB, overflows a std::size_t. Check both before you round.";
    } catch (const OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(n)), std::string::npos)
          << "what() must give the requested " << n << " bytes: \"" << e.what() << "\"";
    } catch (...) {
      ADD_FAILURE() << "allocate(" << n << ") must throw alloclab::OutOfMemoryError, nothing else.";
    }
    EXPECT_EQ(device.malloc_calls(), calls)
        << "allocate(" << n << ") must not call the device: rounding " << n << " up to 512 bytes, or its segment "
        << "up to 2 MiB, wraps around to a tiny size, and the device would hand out a tiny segment for it.";
  }
  EXPECT_TRUE(alloclab::test::same(alloc.stats(), stats))
      << "A refused request changes no statistic: " << show(alloc.stats());
}

TEST(CachingOomAndSnapshot, StatsCountEverything) {
  TestDevice device(128 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(1000);        // device: small 2 MiB; 1024 allocated
  void* b = alloc.allocate(3 * MiB);     // device: large 20 MiB; 3 MiB allocated
  void* c = alloc.allocate(19 * MiB);    // device: large 20 MiB, unsplit
  void* d = alloc.allocate(4 * MiB);     // hit, from b's segment
  ASSERT_TRUE(a && b && c && d) << "Four requests on a roomy device must succeed.";
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 1024 + 3 * MiB + 20 * MiB + 4 * MiB) << show(s);
  EXPECT_EQ(s.reserved_bytes, 42 * MiB) << show(s);
  EXPECT_EQ(s.device_mallocs, 3u) << show(s);
  EXPECT_EQ(s.cache_hits, 1u) << show(s);
  alloc.deallocate(c);
  alloc.deallocate(b);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 1024 + 4 * MiB) << "Freeing takes each block's whole size off: " << show(s);
  EXPECT_EQ(s.peak_allocated_bytes, 1024 + 27 * MiB) << "The peak keeps the highest allocated_bytes: " << show(s);
  alloc.empty_cache();
  s = alloc.stats();
  EXPECT_EQ(s.reserved_bytes, 22 * MiB) << "The unsplit 20 MiB segment was wholly free: " << show(s);
  EXPECT_EQ(s.peak_reserved_bytes, 42 * MiB) << "The peak keeps the highest reserved_bytes: " << show(s);
  EXPECT_EQ(s.device_frees, 1u) << show(s);
  EXPECT_EQ(s.oom_retries, 0u) << "No request was refused: " << show(s);
  EXPECT_EQ(alloclab::test::broken_invariant(alloc.snapshot(), s, device), "");
}

TEST(CachingOomAndSnapshot, SnapshotListsSegmentsByAddressAndTheirBlocksInOrder) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* first = alloc.allocate(4 * KiB);  // a small segment at the device's start
  void* large = alloc.allocate(3 * MiB);  // a large segment after it
  ASSERT_TRUE(first && large) << "Two requests on a roomy device must succeed.";
  alloc.deallocate(first);
  alloc.empty_cache();                    // the device's start is free again
  void* a = alloc.allocate(2 * KiB);      // a new small segment, at a lower address than the large one
  void* b = alloc.allocate(512);
  ASSERT_TRUE(a && b) << "Two small requests must succeed.";
  alloc.deallocate(a);
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 2u) << show(segments);
  EXPECT_TRUE(segments[0].small_pool && !segments[1].small_pool && segments[0].base < segments[1].base)
      << "snapshot() lists segments by base address, not in the order they were created: the newer small "
         "segment sits below the large one in memory:" << show(segments);
  EXPECT_EQ(segments[0].base, alloclab::test::address(a)) << "The small segment's base is its first block's address.";
  const std::vector<alloclab::BlockInfo> expected{{0, 2 * KiB, false}, {2 * KiB, 512, true},
                                                  {2 * KiB + 512, 2 * MiB - 2 * KiB - 512, false}};
  ASSERT_EQ(segments[0].blocks.size(), expected.size()) << show(segments);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& got = segments[0].blocks[i];
    EXPECT_TRUE(got.offset == expected[i].offset && got.size == expected[i].size &&
                got.allocated == expected[i].allocated)
        << "Block " << i << " of the small segment: offsets count from the segment's base, blocks come in "
        << "address order and tile the segment:" << show(segments);
  }
  EXPECT_EQ(segments[1].blocks.size(), 2u) << show(segments);
}

// A long random run of requests and frees, with now and then an empty_cache, on a device
// small enough to refuse. After every step the snapshot must keep every invariant, and a
// request must land where the policy says: the smallest free block of its pool that fits,
// lowest address first, or a new segment when none fits.
TEST(CachingOomAndSnapshot, ARandomRunKeepsEveryInvariant) {
  TestDevice device(96 * MiB);
  Allocator alloc(device);
  struct Live {
    void* p;
    std::size_t n;
    unsigned char tag;
  };
  std::vector<Live> live;
  std::mt19937_64 rng(4);
  alloclab::CacheStats previous{};
  auto size_for = [&rng]() -> std::size_t {
    switch (rng() % 8) {
      case 0: return 1 + rng() % (4 * MiB);            // large, under 10 MiB
      case 1: return 10 * MiB + rng() % (8 * MiB);     // large, its own segment
      case 2: return 256 * KiB + rng() % (768 * KiB);  // small, big
      default: return 1 + rng() % (16 * KiB);          // small
    }
  };
  for (int step = 0; step < 1500; ++step) {
    const auto before = alloc.snapshot();
    const unsigned action = static_cast<unsigned>(rng() % 100);
    std::string what;
    if (action < 55 || live.empty()) {
      const std::size_t n = size_for();
      const std::size_t size = Allocator::round_size(n);
      const bool small = size <= MiB;
      // The model's choice: the best fit in the snapshot taken before the call.
      std::uintptr_t best = 0;
      std::size_t best_size = SIZE_MAX;
      for (const auto& seg : before)
        if (seg.small_pool == small)
          for (const auto& b : seg.blocks)
            if (!b.allocated && b.size >= size &&
                (b.size < best_size || (b.size == best_size && seg.base + b.offset < best))) {
              best = seg.base + b.offset;
              best_size = b.size;
            }
      const std::size_t hits = alloc.stats().cache_hits;
      what = "allocate(" + std::to_string(n) + ")";
      void* p = nullptr;
      try {
        p = alloc.allocate(n);
        ASSERT_NE(p, nullptr) << "Step " << step << ": " << what << " returned nullptr: a request that "
                              << "cannot be met throws OutOfMemoryError, and any other returns a block.";
      } catch (const OutOfMemoryError&) {
        ASSERT_EQ(best, 0u) << "Step " << step << ": " << what << " threw although a free block of "
                            << best_size << " bytes fits it:" << show(before);
      }
      if (p != nullptr) {
        if (best != 0) {
          ASSERT_EQ(alloclab::test::address(p), best)
              << "Step " << step << ": " << what << " must take the smallest free block of its pool that fits, "
              << "the lowest address among equals, at " << best << ":" << show(before);
          ASSERT_EQ(alloc.stats().cache_hits, hits + 1) << "Step " << step << ": a cache hit must be counted.";
        } else {
          ASSERT_EQ(alloc.stats().cache_hits, hits) << "Step " << step << ": " << what
                                                    << " needed a new segment, so it is no cache hit.";
        }
        const auto tag = static_cast<unsigned char>(step);
        std::fill_n(static_cast<unsigned char*>(p), std::min<std::size_t>(n, 64), tag);
        static_cast<unsigned char*>(p)[n - 1] = tag;
        live.push_back({p, n, tag});
      }
    } else if (action < 97) {
      const std::size_t i = rng() % live.size();
      const Live gone = live[i];
      what = "deallocate of a block of " + std::to_string(gone.n) + " bytes";
      const auto* bytes = static_cast<const unsigned char*>(gone.p);
      ASSERT_TRUE(bytes[0] == gone.tag && bytes[gone.n - 1] == gone.tag)
          << "Step " << step << ": a live block's first or last byte was overwritten: two live blocks overlap.";
      alloc.deallocate(gone.p);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      what = "empty_cache()";
      alloc.empty_cache();
    }
    const auto segments = alloc.snapshot();
    const auto stats = alloc.stats();
    const std::string broken = alloclab::test::broken_invariant(segments, stats, device);
    ASSERT_EQ(broken, "") << "Step " << step << ", after " << what << ": " << broken << show(segments);
    for (const Live& l : live) {
      const auto* b = alloclab::test::block_at(segments, l.p);
      ASSERT_TRUE(b != nullptr && b->allocated && b->size >= Allocator::round_size(l.n))
          << "Step " << step << ", after " << what << ": every live allocation must be an allocated block of at "
          << "least its rounded size, starting at the address handed out:" << show(segments);
    }
    std::size_t allocated_blocks = 0;
    for (const auto& seg : segments)
      for (const auto& b : seg.blocks) allocated_blocks += b.allocated;
    ASSERT_EQ(allocated_blocks, live.size())
        << "Step " << step << ", after " << what << ": there must be one allocated block per live allocation.";
    ASSERT_TRUE(stats.peak_allocated_bytes >= previous.peak_allocated_bytes &&
                stats.peak_reserved_bytes >= previous.peak_reserved_bytes)
        << "Step " << step << ": a peak never goes down: " << show(stats);
    previous = stats;
  }
  for (const Live& l : live) alloc.deallocate(l.p);
  alloc.empty_cache();
  EXPECT_EQ(device.live_allocations(), 0u) << "After every block is freed, empty_cache returns every segment.";
}

}  // namespace stage4_out_of_memory
