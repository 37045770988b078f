// Stage 4 — spilling upstream: requests that do not fit go to the upstream resource and leave
// the buffer as it was; release() gives every upstream block back as it was taken and rewinds;
// a null upstream throws; recording a block that throws leaks nothing.
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <new>
#include <string>

#include "aligned_test_support.hpp"
#include "arena_resource_under_test.hpp"

namespace stage4_spill {

using alloclab::test::address;
using alloclab::test::aligned::ArenaResource;
using alloclab::test::HeapLog;
using alloclab::test::aligned::inside;
using alloclab::test::aligned::TrackingResource;

// allocate(bytes, alignment), or nullptr after reporting what it threw: a request the arena
// must serve fails the test with a message instead of ending it with an exception.
void* must_allocate(std::pmr::memory_resource& r, std::size_t bytes, std::size_t alignment) {
  try {
    return r.allocate(bytes, alignment);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "allocate(" << bytes << ", " << alignment << ") threw " << e.what()
                  << ", but the arena (with its upstream) can serve it.";
  }
  return nullptr;
}

TEST(ArenaSpill, WhatDoesNotFitGoesUpstream) {
  alignas(64) std::byte buffer[256];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* p = must_allocate(arena, 1000, 16);
  EXPECT_FALSE(inside(p, 1, buffer, sizeof buffer)) << "1000 bytes cannot come from a 256-byte buffer";
  EXPECT_EQ(upstream.outstanding_blocks(), 1u) << "a request larger than the buffer must be passed to the upstream";
  EXPECT_EQ(arena.upstream_bytes(), upstream.outstanding_bytes())
      << "upstream_bytes() must be the bytes currently held from upstream: the upstream holds "
      << upstream.outstanding_bytes() << " for the arena.";
  EXPECT_GE(arena.upstream_bytes(), 1000u) << "the 1000 bytes spilled are held from upstream";
  EXPECT_EQ(arena.used(), 0u) << "used() counts the buffer only: nothing was taken from it.";
  EXPECT_EQ(upstream.problems(), "") << "the upstream was given blocks back wrongly";
}

TEST(ArenaSpill, ASpillLeavesTheBufferAsItWas) {
  alignas(64) std::byte buffer[256];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* a = must_allocate(arena, 100, 8);
  EXPECT_EQ(a, buffer) << "the first request that fits starts the buffer";
  void* big = must_allocate(arena, 200, 64);
  EXPECT_FALSE(inside(big, 1, buffer, sizeof buffer)) << "200 bytes at 64 do not fit in what is left";
  EXPECT_EQ(arena.used(), 100u)
      << "A request that went upstream must leave the buffer as it was (used() was 100, now " << arena.used()
      << "): neither its padding nor the rest of the buffer is lost, so a later small request still fits.";
  void* small = must_allocate(arena, 64, 8);
  EXPECT_EQ(small, buffer + 104)
      << "After a spill, allocate(64, 8) fits in the 156 bytes left and must come from the buffer, at "
         "buffer + 104. An arena that jumps to the upstream for good after one spill wastes its buffer.";
  EXPECT_EQ(arena.used(), 168u) << "used() after 100, 4 bytes of padding and 64 bytes must be 168";
}

TEST(ArenaSpill, ReleaseGivesEveryBlockBackAsItWasTaken) {
  alignas(64) std::byte buffer[128];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  const std::size_t sizes[] = {1000, 333, 4096, 129, 70000};
  const std::size_t aligns[] = {8, 64, 4096, 256, 16};
  for (int i = 0; i < 5; ++i) {
    void* p = must_allocate(arena, sizes[i], aligns[i]);
    EXPECT_EQ(address(p) % aligns[i], 0u) << "a block from upstream must be aligned as asked too";
  }
  EXPECT_EQ(upstream.outstanding_blocks(), 5u) << "five requests larger than the buffer, five upstream blocks";
  EXPECT_EQ(arena.upstream_bytes(), upstream.outstanding_bytes())
      << "upstream_bytes() must be the bytes held from upstream";
  arena.release();
  EXPECT_EQ(upstream.outstanding_blocks(), 0u)
      << "release() must give every upstream block back; " << upstream.outstanding_blocks() << " are still held.";
  EXPECT_EQ(upstream.problems(), "")
      << "release() must give each upstream block back with the size and alignment it was taken with: a "
         "resource may need both to find the block (a pool files it by size, the aligned heap by alignment).";
  EXPECT_EQ(arena.upstream_bytes(), 0u) << "after release() nothing is held from upstream";
}

TEST(ArenaSpill, ReleaseRewindsTheBuffer) {
  alignas(64) std::byte buffer[256];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* first = must_allocate(arena, 40, 8);
  (void)must_allocate(arena, 100, 8);
  arena.release();
  EXPECT_EQ(arena.used(), 0u) << "release() must rewind the buffer: used() is 0 again";
  void* again = must_allocate(arena, 40, 8);
  EXPECT_EQ(again, first) << "after release(), the first request must get the start of the buffer again: "
                             "the arena is reused step after step.";
  EXPECT_EQ(again, buffer) << "the start of the buffer";
}

TEST(ArenaSpill, DeallocateKeepsUpstreamBlocksUntilRelease) {
  alignas(64) std::byte buffer[64];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* p = must_allocate(arena, 500, 32);
  arena.deallocate(p, 500, 32);
  EXPECT_EQ(upstream.outstanding_blocks(), 1u)
      << "deallocate must do nothing, even for a block from upstream: release() gives it back later, and "
         "giving it back twice is a double free.";
  arena.release();
  EXPECT_EQ(upstream.outstanding_blocks(), 0u) << "release() gives the block back";
  EXPECT_EQ(upstream.problems(), "") << "each upstream block must be given back exactly once";
}

TEST(ArenaSpill, DestructorReleases) {
  alignas(64) std::byte buffer[64];
  TrackingResource upstream;
  {
    ArenaResource arena(buffer, sizeof buffer, &upstream);
    (void)must_allocate(arena, 300, 8);
    (void)must_allocate(arena, 3000, 128);
  }
  EXPECT_EQ(upstream.outstanding_blocks(), 0u)
      << "the destructor must call release(): an arena that is destroyed while it holds upstream blocks leaks "
         "them.";
  EXPECT_EQ(upstream.problems(), "") << "each upstream block must be given back exactly once, as it was taken";
}

TEST(ArenaSpill, NullUpstreamThrowsBadAlloc) {
  alignas(64) std::byte buffer[128];
  ArenaResource arena(buffer, sizeof buffer, std::pmr::null_memory_resource());
  (void)must_allocate(arena, 40, 8);
  EXPECT_THROW((void)arena.allocate(200, 8), std::bad_alloc)
      << "with null_memory_resource() upstream, a request that does not fit must throw std::bad_alloc: the "
         "caller chose a buffer that must suffice, and finding out is the point.";
  EXPECT_EQ(arena.used(), 40u) << "a failed request must change nothing";
  void* p = must_allocate(arena, 80, 8);
  EXPECT_EQ(p, buffer + 40) << "after a failed request, one that fits still comes from the buffer";
}

TEST(ArenaSpill, AHugeRequestDoesNotWrapAround) {
  alignas(64) std::byte buffer[256];
  TrackingResource upstream(1 << 20);  // refuses anything above 1 MiB, as a real heap would
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  (void)must_allocate(arena, 8, 8);
  // volatile: the compiler would refuse to compile a constant this large as an allocation size.
  volatile std::size_t huge = std::numeric_limits<std::size_t>::max() - 7;
  void* p = nullptr;
  EXPECT_THROW(p = arena.allocate(huge, 1), std::bad_alloc)
      << "allocate(SIZE_MAX - 7, 1) after 8 bytes must go upstream and fail with std::bad_alloc. A bounds "
         "check that adds, used + bytes > size, wraps around to 0 here and hands out the buffer for a request "
         "of 16 EiB. Compare bytes with what is left instead.";
  EXPECT_EQ(p, nullptr);
  // With 8 bytes of padding in front, padding + bytes wraps around to 4.
  volatile std::size_t almost_all = std::numeric_limits<std::size_t>::max() - 3;
  EXPECT_THROW(p = arena.allocate(almost_all, 16), std::bad_alloc)
      << "allocate(SIZE_MAX - 3, 16) after 8 bytes needs 8 bytes of padding: padding + bytes wraps around to "
         "4, which seems to fit. Check the padding and the size against what is left one at a time, never "
         "their sum.";
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(arena.used(), 8u) << "a failed request must change nothing";
  EXPECT_EQ(arena.upstream_bytes(), 0u) << "a refused upstream request holds nothing";
}

TEST(ArenaSpill, AnEmptyBufferSendsEverythingUpstream) {
  TrackingResource upstream;
  ArenaResource arena(nullptr, 0, &upstream);
  void* p = must_allocate(arena, 16, 8);
  EXPECT_NE(p, nullptr) << "an arena without a buffer serves every request from upstream";
  EXPECT_EQ(upstream.outstanding_blocks(), 1u) << "the 16 bytes must come from upstream: there is no buffer";
  EXPECT_EQ(arena.used(), 0u) << "nothing is taken from a buffer of size 0";
  arena.release();
  EXPECT_EQ(upstream.outstanding_blocks(), 0u) << "release() gives the block back";
}

// allocate() never returns the null pointer (libstdc++ declares it so), and a block from the
// buffer starts inside the buffer. A 0-byte request whose aligned address would be the end of
// the buffer therefore goes upstream: with no buffer that end is the null pointer, and past a
// full one it may be the address of the caller's next object.
TEST(ArenaSpill, AZeroByteRequestAtTheEndGoesUpstream) {
  {
    TrackingResource upstream;
    ArenaResource arena(nullptr, 0, &upstream);
    void* p = must_allocate(arena, 0, 8);
    EXPECT_NE(p, nullptr) << "allocate(0, 8) on an arena without a buffer returned the null pointer";
    EXPECT_EQ(upstream.allocations(), 1u)
        << "an arena without a buffer must send every request upstream, even one of 0 bytes: its buffer's "
           "end is the null pointer, which memory_resource::allocate must never return.";
  }
  {
    alignas(64) std::byte buffer[128];
    TrackingResource upstream;
    ArenaResource arena(buffer, sizeof buffer, &upstream);
    (void)must_allocate(arena, 128, 64);
    ASSERT_EQ(arena.used(), 128u) << "128 bytes fill a 128-byte buffer";
    void* p = must_allocate(arena, 0, 1);
    EXPECT_NE(p, buffer + sizeof buffer)
        << "allocate(0, 1) on a full buffer returned its end, buffer + 128: that address is not the arena's (the "
           "caller's next object may live there). A block from the buffer must start inside it.";
    EXPECT_EQ(upstream.allocations(), 1u) << "a request that cannot start inside the buffer, even of 0 bytes, goes "
                                             "upstream";
    EXPECT_EQ(arena.used(), 128u) << "a spill leaves the buffer as it was";
  }
  {
    alignas(128) std::byte buffer[128];
    TrackingResource upstream;
    ArenaResource arena(buffer, sizeof buffer, &upstream);
    (void)must_allocate(arena, 1, 1);
    void* p = must_allocate(arena, 0, 128);
    EXPECT_NE(p, buffer + sizeof buffer)
        << "allocate(0, 128) after 1 byte of a 128-aligned, 128-byte buffer needs 127 bytes of padding, which "
           "reach exactly its end: it returned buffer + 128, past the buffer. Padding that reaches the end leaves "
           "no room even for 0 bytes: the request goes upstream.";
    EXPECT_EQ(upstream.allocations(), 1u) << "allocate(0, 128) must go upstream";
    EXPECT_EQ(arena.used(), 1u) << "a spill leaves the buffer as it was";
  }
}

TEST(ArenaSpill, ExactFitUsesTheBuffer) {
  alignas(64) std::byte buffer[128];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  (void)must_allocate(arena, 64, 64);
  void* p = must_allocate(arena, 64, 64);
  EXPECT_EQ(p, buffer + 64) << "64 bytes fit exactly in the 64 bytes left: they come from the buffer";
  EXPECT_EQ(upstream.outstanding_blocks(), 0u) << "an exact fit must not go upstream";
}

// The padding is part of what a block takes: 1 byte used, then 64-aligned blocks need 63 bytes
// of padding from the 127 left, so 64 bytes fit exactly and 65 do not.
TEST(ArenaSpill, PaddingCountsAgainstWhatIsLeft) {
  alignas(64) std::byte buffer[128];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  (void)must_allocate(arena, 1, 1);
  void* too_big = must_allocate(arena, 65, 64);
  EXPECT_FALSE(inside(too_big, 65, buffer, sizeof buffer))
      << "allocate(65, 64) after 1 byte needs 63 bytes of padding and 65 bytes, 128 in all, but only 127 are left: "
         "it must go upstream. It was placed in the buffer at " << too_big << " (the buffer is " << buffer
      << " to " << buffer + sizeof buffer << "), running past its end. Compare bytes with left - padding.";
  EXPECT_EQ(arena.used(), 1u) << "a spill leaves the buffer as it was";
  void* exact = must_allocate(arena, 64, 64);
  EXPECT_EQ(exact, buffer + 64) << "allocate(64, 64) after 1 byte fits exactly: 63 bytes of padding and 64 bytes";
}

// release() gives every upstream block back, and forgets it: a second release(), or the
// destructor after it, must not give any block back again.
TEST(ArenaSpill, ASecondReleaseGivesNothingBackTwice) {
  alignas(64) std::byte buffer[64];
  TrackingResource upstream;
  {
    ArenaResource arena(buffer, sizeof buffer, &upstream);
    (void)must_allocate(arena, 300, 8);
    (void)must_allocate(arena, 3000, 128);
    arena.release();
    arena.release();
  }
  EXPECT_EQ(upstream.problems(), "")
      << "release(), release() again and the destructor must give each upstream block back once: release() must "
         "forget the blocks it gave back, or the next release() frees them a second time.";
  EXPECT_EQ(upstream.outstanding_blocks(), 0u) << "every upstream block is back";
}

TEST(ArenaSpill, AThrowingRecordLeaksNothing) {
  alignas(64) std::byte buffer[64];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  bool threw = false;
  {
    HeapLog log;
    log.fail_every_allocation();  // whatever the arena allocates to remember the block fails
    try {
      (void)arena.allocate(512, 16);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }
  if (threw) {
    EXPECT_EQ(upstream.outstanding_blocks(), 0u)
        << "allocate threw std::bad_alloc while recording a block it had already taken from upstream, and the "
           "block was not given back: nobody can free it now. Give it back before the exception leaves.";
    EXPECT_EQ(arena.upstream_bytes(), 0u) << "a request that threw must change nothing";
  } else {
    EXPECT_EQ(arena.upstream_bytes(), upstream.outstanding_bytes())
        << "the spilled block must be counted in upstream_bytes()";
  }
  EXPECT_EQ(arena.used(), 0u) << "a spill leaves the buffer as it was";
  void* p = must_allocate(arena, 512, 16);  // the heap works again
  EXPECT_FALSE(inside(p, 1, buffer, sizeof buffer));
  arena.release();
  EXPECT_EQ(upstream.outstanding_blocks(), 0u) << "release() gives every upstream block back";
  EXPECT_EQ(upstream.problems(), "") << "each upstream block must be given back exactly once, as it was taken";
}

}  // namespace stage4_spill
