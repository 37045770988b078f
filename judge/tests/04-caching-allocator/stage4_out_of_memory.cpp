// Stage 4 — out of memory, stats and snapshot: a refusal empties the cache and retries once,
// a final refusal throws a readable OutOfMemoryError and loses nothing, the stats count
// everything, and a long random run keeps every invariant after every step.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "failing_new.hpp"
#include "test_device.hpp"

namespace stage4_out_of_memory {

using alloclab::test::caching::OutOfMemoryError;
using alloclab::test::Allocator;
using alloclab::test::KiB;
using alloclab::test::MiB;
using alloclab::test::show;
using alloclab::test::TestDevice;
using alloclab::test::call_with_failing_new;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::news_in_use;

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

// SIZE_MAX rounded down to 2 MiB is the largest request whose rounding, to 512 bytes and then to
// a 2 MiB segment, is representable: it goes to the device like any other (which refuses it),
// and one byte more is refused before any rounding.
TEST(CachingOomAndSnapshot, TheLargestRoundableRequestGoesToTheDevice) {
  constexpr std::size_t largest = SIZE_MAX & ~(2 * MiB - 1);
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  for (std::size_t n : {largest - 2 * MiB + 1, largest - 1, largest}) {
    const std::size_t calls = device.malloc_calls();
    EXPECT_THROW((void)alloc.allocate(n), OutOfMemoryError)
        << "allocate(" << n << ") must throw OutOfMemoryError: the device cannot hold it.";
    EXPECT_EQ(device.malloc_calls() - calls, 2u)
        << "allocate(" << n << ") rounds to a segment of " << largest << " bytes without overflow, so it must go "
        << "to the device, once and once more after empty_cache, like any request the device may refuse. Only "
        << "requests above " << largest << " (SIZE_MAX rounded down to 2 MiB) are refused without a device call.";
  }
  const std::size_t calls = device.malloc_calls();
  EXPECT_THROW((void)alloc.allocate(largest + 1), OutOfMemoryError)
      << "allocate(" << largest + 1 << ") must throw OutOfMemoryError: its segment would be " << largest
      << " + 2 MiB, which wraps around.";
  EXPECT_EQ(device.malloc_calls(), calls)
      << "allocate(" << largest + 1 << ") must not call the device: rounding it up to 2 MiB wraps around to a "
      << "tiny segment size.";
}

// OutOfMemoryError's figures are taken when it is thrown, after the retry's empty_cache: here that
// empty_cache returns a wholly free 20 MiB segment, and the message must no longer count it.
TEST(CachingOomAndSnapshot, TheMessageGivesTheFiguresAfterTheRetry) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* kept = alloc.allocate(300'000);  // 300,032 bytes of a 2 MiB segment that stays
  void* gone = alloc.allocate(3 * MiB);  // a 20 MiB segment, wholly free once it is freed
  ASSERT_TRUE(kept && gone) << "Two requests on a roomy device must succeed.";
  alloc.deallocate(gone);
  device.set_limit(device.in_use() + 10 * MiB);  // 32 MiB: 40 MiB never fits, before or after the retry
  const std::size_t requested = 40 * MiB;
  try {
    (void)alloc.allocate(requested);
    ADD_FAILURE() << "allocate(40 MiB) must throw OutOfMemoryError: the device refuses it twice.";
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    const std::string before = std::to_string(22 * MiB), after = std::to_string(2 * MiB);
    EXPECT_TRUE(what.find(after) != std::string::npos && what.find(before) == std::string::npos)
        << "what() must give reserved_bytes as it is when the error is thrown: " << after << " bytes, after the "
        << "retry's empty_cache returned the wholly free 20 MiB segment, not the " << before << " reserved "
        << "before it. A figure from before the retry counts memory the process no longer holds, and the gap "
        << "between reserved and allocated, which tells fragmentation from a real shortage, then lies. It says: \""
        << what << "\"";
    const std::size_t at_request = what.find(std::to_string(requested));
    const std::size_t at_allocated = what.find("300032");
    const std::size_t at_reserved = what.find(after);
    EXPECT_TRUE(at_request < at_allocated && at_allocated < at_reserved && at_reserved != std::string::npos)
        << "what() gives the request (" << requested << "), then allocated_bytes (300032), then reserved_bytes ("
        << after << "), in that order, so that whoever reads it knows which number is which: \"" << what << "\"";
  } catch (...) {
    ADD_FAILURE() << "allocate(40 MiB) must throw alloclab::OutOfMemoryError, nothing else.";
  }
  EXPECT_EQ(alloc.stats().reserved_bytes, 2 * MiB) << show(alloc.stats());
}

// Both roundings, the request's to 512 bytes and its segment's to 2 MiB, are checked before the
// device is asked, and a request that fails them is no refusal of the device: nothing is retried,
// and the cache keeps its free segment.
TEST(CachingOomAndSnapshot, ARequestTooLargeToRoundNeitherRetriesNorEmptiesTheCache) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  ASSERT_NE(a, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.deallocate(a);  // a wholly free 2 MiB segment, cached
  const std::pair<std::size_t, const char*> requests[] = {
      {SIZE_MAX - 511, "is a multiple of 512, so its own rounding fits, but its segment's rounding up to a multiple "
                       "of 2 MiB overflows"},
      {SIZE_MAX, "overflows already when it is rounded up to a multiple of 512"},
  };
  for (const auto& [n, why] : requests) {
    const std::size_t malloc_calls = device.malloc_calls(), free_calls = device.free_calls();
    EXPECT_THROW((void)alloc.allocate(n), OutOfMemoryError) << "allocate(" << n << ") " << why << ".";
    EXPECT_EQ(device.malloc_calls(), malloc_calls)
        << "allocate(" << n << ") " << why << ": both roundings are checked before the device is asked, so the "
        << "device must not be called at all.";
    EXPECT_EQ(device.free_calls(), free_calls)
        << "allocate(" << n << ") " << why << ": it is refused at once, and no retry could help, so the cache must "
        << "not be emptied: the free segment stays for the next request that fits it.";
    EXPECT_EQ(alloc.stats().oom_retries, 0u)
        << "allocate(" << n << ") is no refusal of the device, so no retry is made or counted: " << show(alloc.stats());
  }
  EXPECT_EQ(alloc.stats().reserved_bytes, 2 * MiB) << "The cached segment is still there: " << show(alloc.stats());
}

// A call that throws keeps none of the heap memory it took for the request, whatever made it fail:
// the device, an overflow, or the caller's pointer. (A heap that fails is tested below.)
TEST(CachingOomAndSnapshot, AFailingCallKeepsNoHeapMemory) {
  ASSERT_TRUE(failing_new_works()) << "This test binary does not count the heap's blocks, so the test would prove "
                                      "nothing.";
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  void* b = alloc.allocate(3 * MiB);
  ASSERT_TRUE(a && b) << "Two requests on a roomy device must succeed.";
  device.set_limit(device.in_use());  // every new segment is refused, before and after the retry
  int local = 0;
  struct Case {
    const char* call;
    const char* why;
    std::function<void()> run;
  };
  const Case cases[] = {
      {"allocate(40 MiB)", "throws OutOfMemoryError after the device refused it twice",
       [&] { (void)alloc.allocate(40 * MiB); }},
      {"allocate(SIZE_MAX)", "throws OutOfMemoryError without asking the device", [&] { (void)alloc.allocate(SIZE_MAX); }},
      {"deallocate of an interior pointer", "throws std::invalid_argument",
       [&] { alloc.deallocate(static_cast<char*>(a) + 512); }},
      {"deallocate of a pointer from elsewhere", "throws std::invalid_argument", [&] { alloc.deallocate(&local); }},
  };
  for (const Case& c : cases) {
    const long before = news_in_use();
    try {
      c.run();
    } catch (...) {
    }
    const long kept = news_in_use() - before;
    EXPECT_EQ(kept, 0) << c.call << " " << c.why << ", and kept " << kept << " heap block(s) it took: a failing call "
                       << "keeps no heap memory. A block record made before the device call, or a key or an entry "
                       << "made for the request, goes back before the exception leaves the call; otherwise every "
                       << "out of memory leaks host memory, and a server that retries smaller requests after one "
                       << "leaks with each.";
  }
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
  const std::vector<alloclab::test::caching::BlockInfo> expected{{0, 2 * KiB, false}, {2 * KiB, 512, true},
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
  alloclab::test::caching::CacheStats previous{};
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

// ---- a heap that fails inside allocate and deallocate ---------------------------------------
//
// The allocator's own bookkeeping (its Block nodes, the free sets, the map of allocated blocks,
// the segment map) takes memory from the heap, and the heap can refuse. Each test below sets up
// an allocator, then refuses each heap allocation of one call in turn: a call that throws
// std::bad_alloc must leave everything as it was, give back any device segment it took, lose no
// block from a pool, and the same call made again must then do what it would have done had
// nothing failed, as on a twin allocator that went through the same calls without a failure.
// The test device itself allocates inside malloc: a refusal there is a device refusal, which the
// allocator answers with its retry, and the call then succeeds.

// What a caller can observe, with addresses counted from the device's start, so that two
// allocators on two devices that went through the same calls describe alike.
std::string describe(const Allocator& alloc, const TestDevice& device) {
  std::string s = show(alloc.stats());
  for (const auto& seg : alloc.snapshot()) {
    s += std::string(seg.small_pool ? "\n  small" : "\n  large") + " segment at device offset " +
         std::to_string(device.offset_of(seg.base)) + ", " + std::to_string(seg.size) + " bytes:";
    for (const auto& b : seg.blocks)
      s += " [" + std::to_string(b.offset) + "+" + std::to_string(b.size) + (b.allocated ? " allocated]" : " free]");
  }
  return s + "\n  device: " + std::to_string(device.in_use()) + " bytes in use in " +
         std::to_string(device.live_allocations()) + " allocations";
}

// One state to start from: `setup` makes it with a few calls and returns the block that the
// call under test frees, if it frees one.
struct Scenario {
  const char* what;
  std::size_t budget;   // the device's
  std::size_t request;  // what the call under test asks for, when it allocates
  std::function<void*(Allocator&)> setup;
};

// A call that succeeded although one heap allocation inside it failed (a device refusal and
// its retry): its block must be real, and the allocator still consistent. The device may have
// served other allocators before: `mallocs_before` is its count of mallocs when this one began.
void expect_served(Allocator& alloc, const TestDevice& device, std::size_t mallocs_before, void* p,
                   const std::string& call, long n) {
  ASSERT_NE(p, nullptr) << call << " returned nullptr when heap allocation " << n << " inside it failed: it "
                        << "must throw std::bad_alloc or serve the request.";
  const auto segments = alloc.snapshot();
  const auto* block = alloclab::test::block_at(segments, p);
  EXPECT_TRUE(block != nullptr && block->allocated)
      << call << " returned a pointer that is no allocated block after heap allocation " << n
      << " inside it failed:" << show(segments);
  const auto stats = alloc.stats();
  std::size_t reserved = 0;
  for (const auto& seg : segments) reserved += seg.size;
  EXPECT_TRUE(reserved == stats.reserved_bytes && reserved == device.in_use() &&
              segments.size() == device.live_allocations() &&
              stats.device_mallocs == device.mallocs() - mallocs_before)
      << call << " succeeded after heap allocation " << n << " inside it failed, but the segments, the stats "
      << "and the device disagree: reserved_bytes and device_mallocs must count exactly the segments the "
      << "device holds for the allocator. " << show(stats) << show(segments);
  EXPECT_NO_THROW(alloc.deallocate(p)) << "The block " << call << " returned after heap allocation " << n
                                       << " inside it failed must be one that deallocate accepts: it must be "
                                          "recorded as handed out.";
}

// Refuses each heap allocation of allocate(request) in turn, on a fresh allocator set up by
// the scenario each time.
void check_allocate_under_failing_heap(const Scenario& scenario, bool from_the_cache) {
  const std::string call = "allocate(" + std::to_string(scenario.request) + ") on " + scenario.what;
  // The twin: the same calls, nothing failing.
  std::size_t expected_offset = 0;
  std::string expected_after;
  {
    TestDevice twin_device(scenario.budget);
    Allocator twin(twin_device);
    (void)scenario.setup(twin);
    void* expected = twin.allocate(scenario.request);
    ASSERT_NE(expected, nullptr) << call << " returned nullptr.";
    expected_offset = twin_device.offset_of(expected);
    expected_after = describe(twin, twin_device);
  }
  // One device for every round: each allocator gives all its segments back when it goes, so the
  // next one finds the device as empty as a new one.
  TestDevice device(scenario.budget);
  for_each_failing_allocation([&](long n) {
    const std::size_t mallocs_before = device.mallocs();
    Allocator alloc(device);
    (void)scenario.setup(alloc);
    const std::string before = describe(alloc, device);
    const std::size_t malloc_calls = device.malloc_calls(), free_calls = device.free_calls();
    const long in_use = news_in_use();
    void* p = nullptr;
    const auto outcome = call_with_failing_new(n, [&] { p = alloc.allocate(scenario.request); });
    const long leaked = news_in_use() - in_use;
    if (!outcome.fired) return false;
    if (!outcome.threw) {
      expect_served(alloc, device, mallocs_before, p, call, n);
      return !::testing::Test::HasFailure();
    }
    const std::string after = describe(alloc, device);
    if (after != before) {
      ADD_FAILURE() << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, and it "
                    << "changed the allocator on the way out: a call that throws must change nothing. A segment "
                    << "taken from the device goes back to it, a block stays in its pool, the stats stay as they "
                    << "were.\n  before:" << before << "\n  after:" << after;
      return false;
    }
    if (from_the_cache && (device.malloc_calls() != malloc_calls || device.free_calls() != free_calls)) {
      ADD_FAILURE() << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, and it "
                    << "called the device although a cached block fits: a request served from the cache never "
                    << "goes to the device.";
      return false;
    }
    if (leaked != 0) {
      ADD_FAILURE() << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, and "
                    << (leaked > 0 ? "kept " + std::to_string(leaked) + " heap block(s) it took during the call: "
                                     "a Block, or a key or entry naming one, was left behind"
                                   : "gave back " + std::to_string(-leaked) + " heap block(s) it held before the "
                                     "call: an entry of a free set or a map was erased on the way out, so a free "
                                     "block left its pool or a record was lost")
                    << ". Undo what the call made before it failed, and change nothing else until every step "
                    << "that may fail is done.";
      return false;
    }
    void* again = alloc.allocate(scenario.request);
    EXPECT_TRUE(again != nullptr && device.offset_of(again) == expected_offset)
        << "After " << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, the "
        << "same request must land where it lands when nothing failed, at device offset " << expected_offset
        << ": a block that left its pool on the way out can never be handed out again.\n  after the failure:"
        << describe(alloc, device);
    EXPECT_EQ(describe(alloc, device), expected_after)
        << "After " << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, "
        << "and the same request was made again, the allocator must be as if nothing had failed.";
    return !::testing::Test::HasFailure();
  });
}

// A request served from a cached block: the split's new Block and its key, and the entry in the
// map of allocated blocks, are made before anything changes.
TEST(CachingOomAndSnapshot, AllocateFromTheCacheChangesNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  const Scenario scenarios[] = {
      {"a small segment with a free rest (a split)", 4 * MiB, 8 * KiB, [](Allocator& a) { return a.allocate(4 * KiB); }},
      {"a free 4 KiB block between two allocated ones (an exact fit)", 4 * MiB, 4 * KiB,
       [](Allocator& a) {
         void* first = a.allocate(4 * KiB);
         (void)a.allocate(4 * KiB);
         a.deallocate(first);
         return nullptr;
       }},
      {"a large segment with a free rest of 17 MiB (a split)", 20 * MiB, 4 * MiB, [](Allocator& a) { return a.allocate(3 * MiB); }},
      {"a large segment with a free rest of 17 MiB (taken whole)", 20 * MiB, 16 * MiB + 512 * KiB,
       [](Allocator& a) { return a.allocate(3 * MiB); }},
  };
  for (const Scenario& scenario : scenarios) {
    check_allocate_under_failing_heap(scenario, true);
    if (HasFailure()) return;
  }
}

// A request that needs a new segment: its Block, its entry in the segment map, its key and the
// split all need the heap; when one of them fails after the device gave the segment, the segment
// goes back to the device and, as far as the stats go, never came.
TEST(CachingOomAndSnapshot, ANewSegmentChangesNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  const Scenario scenarios[] = {
      {"an empty allocator (a small segment, split)", 4 * MiB, 4 * KiB, [](Allocator&) -> void* { return nullptr; }},
      {"a full small segment (a second small segment, split)", 8 * MiB, 4 * KiB,
       [](Allocator& a) {
         (void)a.allocate(MiB);
         return a.allocate(MiB);
       }},
      {"a full 12 MiB large segment (a 20 MiB segment, split)", 32 * MiB, 3 * MiB,
       [](Allocator& a) { return a.allocate(11 * MiB); }},
      {"a full 12 MiB large segment (a 10 MiB segment, taken whole)", 22 * MiB, 10 * MiB,
       [](Allocator& a) { return a.allocate(11 * MiB); }},
  };
  for (const Scenario& scenario : scenarios) {
    check_allocate_under_failing_heap(scenario, false);
    if (HasFailure()) return;
  }
}

// deallocate inserts the merged block's key, the one step that needs the heap, before it
// unlinks or merges anything: when that insertion fails, the block is still allocated, its
// neighbours still free and in their pool, and freeing it again then works.
TEST(CachingOomAndSnapshot, DeallocateChangesNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  const Scenario scenarios[] = {
      {"a block between two allocated ones", 4 * MiB, 0,
       [](Allocator& a) {
         (void)a.allocate(4 * KiB);
         void* p = a.allocate(4 * KiB);
         (void)a.allocate(4 * KiB);
         return p;
       }},
      {"a block after a free one", 4 * MiB, 0,
       [](Allocator& a) {
         void* first = a.allocate(4 * KiB);
         void* p = a.allocate(4 * KiB);
         (void)a.allocate(4 * KiB);
         a.deallocate(first);
         return p;
       }},
      {"a block before the segment's free rest", 4 * MiB, 0,
       [](Allocator& a) {
         (void)a.allocate(4 * KiB);
         return a.allocate(4 * KiB);
       }},
      {"a block between two free ones", 4 * MiB, 0,
       [](Allocator& a) {
         void* first = a.allocate(4 * KiB);
         void* p = a.allocate(4 * KiB);
         void* third = a.allocate(4 * KiB);
         (void)a.allocate(4 * KiB);
         a.deallocate(first);
         a.deallocate(third);
         return p;
       }},
      {"a large block between a free one and the segment's free rest", 20 * MiB, 0,
       [](Allocator& a) {
         void* first = a.allocate(3 * MiB);
         void* p = a.allocate(4 * MiB);
         a.deallocate(first);
         return p;
       }},
  };
  for (const Scenario& scenario : scenarios) {
    const std::string call = std::string("deallocate of ") + scenario.what;
    TestDevice device(scenario.budget), twin_device(scenario.budget);  // as empty again after each round
    for_each_failing_allocation([&](long n) {
      Allocator alloc(device), twin(twin_device);
      void* p = scenario.setup(alloc);
      void* twin_p = scenario.setup(twin);
      if (p == nullptr || twin_p == nullptr) {
        ADD_FAILURE() << "To set up " << scenario.what << ", this test allocates blocks of 4 KiB or a few MiB, and "
                      << "allocate returned nullptr.";
        return false;
      }
      const std::string before = describe(alloc, device);
      const std::size_t malloc_calls = device.malloc_calls(), free_calls = device.free_calls();
      const long in_use = news_in_use();
      const auto outcome = call_with_failing_new(n, [&] { alloc.deallocate(p); });
      const long leaked = news_in_use() - in_use;
      if (!outcome.fired) return false;
      if (device.malloc_calls() != malloc_calls || device.free_calls() != free_calls) {
        ADD_FAILURE() << call << " called the device: a freed block stays in the cache.";
        return false;
      }
      if (!outcome.threw) {
        twin.deallocate(twin_p);
        EXPECT_EQ(describe(alloc, device), describe(twin, twin_device))
            << call << " succeeded although heap allocation " << n << " inside it failed; it must then have "
            << "freed the block as it does when nothing fails.";
        return !HasFailure();
      }
      const std::string after = describe(alloc, device);
      if (after != before) {
        ADD_FAILURE() << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, and "
                      << "it changed the allocator on the way out: a call that throws must change nothing. The "
                      << "block stays allocated and its free neighbours stay as they were, in their pool. Insert "
                      << "the merged block's key first: nothing that follows it can fail.\n  before:" << before
                      << "\n  after:" << after;
        return false;
      }
      if (leaked != 0) {
        ADD_FAILURE() << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed, and "
                      << (leaked > 0 ? "kept " : "gave back ") << (leaked > 0 ? leaked : -leaked)
                      << " more heap block(s) than it had: a free neighbour's key or the block's own entry was "
                      << "lost or left behind.";
        return false;
      }
      EXPECT_NO_THROW(alloc.deallocate(p))
          << "After " << call << " threw std::bad_alloc, the block is still allocated: freeing it again must work.";
      twin.deallocate(twin_p);
      EXPECT_EQ(describe(alloc, device), describe(twin, twin_device))
          << "After " << call << " threw std::bad_alloc when heap allocation " << n << " inside it failed and "
          << "the block was freed again, the allocator must be as if nothing had failed.";
      void* reuse = alloc.allocate(4 * KiB);
      void* twin_reuse = twin.allocate(4 * KiB);
      EXPECT_TRUE(reuse != nullptr && device.offset_of(reuse) == twin_device.offset_of(twin_reuse))
          << "After " << call << " threw and the block was freed again, allocate(4 KiB) must take the same "
          << "free block as when nothing failed: every free block must still be in its pool.";
      return !HasFailure();
    });
    if (HasFailure()) return;
  }
}

}  // namespace stage4_out_of_memory
