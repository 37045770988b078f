// Stage 1 — placement, alignment and capacity, on one thread and within the first lap.
#include "ring_under_test.hpp"

#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>

#include "alloclab_test.hpp"
#include "ring_test_support.hpp"

namespace stage1_placement {

using alloclab::test::ring::RingBumpAllocator;
using alloclab::test::ring::expect_bad_alignments_refused;
using alloclab::test::address;
using alloclab::test::ring::fill;
using alloclab::test::ring::first_changed;
using alloclab::test::ring::kPage;

TEST(RingPlacement, RejectsZeroCapacity) {
  EXPECT_THROW(RingBumpAllocator{0}, std::invalid_argument)
      << "RingBumpAllocator(0) must throw std::invalid_argument: a ring with no room can never serve a "
         "request, and the mistake belongs to whoever built it.";
}

TEST(RingPlacement, ThrowsBadAllocForACapacityThatCannotBeMapped) {
  for (std::size_t capacity : {SIZE_MAX, SIZE_MAX - 4094, std::size_t{1} << 60}) {
    EXPECT_THROW(RingBumpAllocator{capacity}, std::bad_alloc)
        << "RingBumpAllocator(" << capacity << ") must throw std::bad_alloc: that many bytes rounded up to whole "
           "pages either cannot be represented in a size_t or cannot be mapped (no address space is that "
           "large). Check what mmap returns: on failure it is MAP_FAILED, not nullptr, and a ring built on it "
           "would hand out addresses that are not memory.";
  }
}

TEST(RingPlacement, IsNotCopyable) {
  const auto traits = alloclab::test::ring::traits_of_the_ring();
  EXPECT_FALSE(traits.copy_constructible)
      << "RingBumpAllocator must not be copy-constructible: two copies would unmap the same buffer.";
  EXPECT_FALSE(traits.copy_assignable)
      << "RingBumpAllocator must not be copy-assignable: two rings would unmap the same buffer.";
}

TEST(RingPlacement, CapacityIsRoundedUpToWholePages) {
  const struct {
    std::size_t asked, expected;
  } cases[] = {{1, 4096}, {4095, 4096}, {4096, 4096}, {4097, 8192}, {100000, 102400}, {1 << 20, 1 << 20}};
  for (const auto& c : cases) {
    RingBumpAllocator ring(c.asked);
    EXPECT_EQ(ring.capacity(), c.expected)
        << "RingBumpAllocator(" << c.asked << ").capacity() must be " << c.expected
        << ": the buffer is mapped in whole pages of 4096 bytes, and capacity() is its real size, so "
           "the bytes the rounding adds are usable too.";
  }
}

TEST(RingPlacement, ANewRingHoldsNothing) {
  RingBumpAllocator ring(8192);
  EXPECT_EQ(ring.in_use(), 0u) << "A new ring has handed out nothing: in_use() must be 0.";
  EXPECT_EQ(ring.checkpoint(), 0u) << "Positions count bytes since construction: a new ring's checkpoint() is 0.";
}

TEST(RingPlacement, TheBufferIsPageAligned) {
  for (std::size_t capacity : {std::size_t{100}, std::size_t{4096}, std::size_t{3 * 4096 + 5}}) {
    RingBumpAllocator ring(capacity);
    void* first = ring.allocate(1, 1);
    ASSERT_NE(first, nullptr) << "allocate(1, 1) on a new ring returned nullptr.";
    EXPECT_EQ(address(first) % kPage, 0u)
        << "The first allocation of a new ring, at offset 0, is the buffer's start, and its address "
        << address(first) << " is not a multiple of 4096. Map the buffer with mmap: it comes in whole, "
           "page-aligned pages, so that any alignment up to 4096 can be met at offset 0 after a wrap.";
  }
}

TEST(RingPlacement, TheBufferIsAMappingGivenBackWithMunmap) {
  // The test binary's munmap records its calls under AddressSanitizer only (unmap_watch.cpp).
  ALLOCLAB_REQUIRE_ASAN();
  for (std::size_t capacity : {std::size_t{100}, std::size_t{3 * 4096 + 5}, std::size_t{1} << 16}) {
    std::optional<RingBumpAllocator> ring(std::in_place, capacity);
    void* start = ring->allocate(1, 1);
    ASSERT_NE(start, nullptr) << "allocate(1, 1) on a new ring returned nullptr.";
    const std::size_t size = ring->capacity();
    alloclab::test::ring::watch_unmapping(start);
    ring.reset();
    const auto calls = alloclab::test::ring::unmappings();
    alloclab::test::ring::watch_unmapping(nullptr);
    bool given_back = false;
    for (const auto& call : calls)
      given_back = given_back || (call.begin <= address(start) && call.length >= address(start) - call.begin + size);
    EXPECT_TRUE(given_back)
        << "A ring of " << size << " bytes whose buffer starts at " << start << " was destroyed, and no munmap "
        << "call gave back [start, start + " << size << "). The buffer must be a mapping of its own, made with "
           "mmap and given back with munmap in the destructor: whole pages, page-aligned, never shared with the "
           "heap's blocks. A buffer from operator new or malloc fails here however it is aligned.";
  }
}

TEST(RingPlacement, AllocationsFollowEachOther) {
  RingBumpAllocator ring(4096);
  auto* a = static_cast<unsigned char*>(ring.allocate(10, 1));
  auto* b = static_cast<unsigned char*>(ring.allocate(20, 1));
  auto* c = static_cast<unsigned char*>(ring.allocate(30, 1));
  ASSERT_TRUE(a && b && c) << "allocate(10, 1), allocate(20, 1), allocate(30, 1) on a new ring of 4096 bytes "
                              "must all succeed.";
  EXPECT_EQ(b, a + 10) << "With align 1 there is no padding: each block starts where the previous one ends. "
                          "A bump allocator wastes nothing between blocks.";
  EXPECT_EQ(c, b + 20) << "The third block must start where the second ends.";
  EXPECT_EQ(ring.checkpoint(), 60u) << "checkpoint() is the head position: 10 + 20 + 30 = 60 bytes handed out.";
  EXPECT_EQ(ring.in_use(), 60u) << "in_use() is the head minus the last reclaimed position: 60 - 0.";
  fill(a, 10, 1);
  fill(b, 20, 2);
  fill(c, 30, 3);
  EXPECT_EQ(first_changed(a, 10, 1), 10u) << "Writing the later blocks changed the first: blocks must not overlap.";
  EXPECT_EQ(first_changed(b, 20, 2), 20u) << "Writing the third block changed the second: blocks must not overlap.";
}

TEST(RingPlacement, TheDefaultAlignmentIs64) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(3, 1), nullptr) << "allocate(3, 1) on a new ring returned nullptr.";
  void* p = ring.allocate(5);
  ASSERT_NE(p, nullptr) << "allocate(5) returned nullptr.";
  EXPECT_EQ(address(p) % 64, 0u) << "allocate(n) without an alignment must return a 64-byte aligned address: "
                                    "one cache line, the default the contract promises.";
  EXPECT_EQ(ring.checkpoint(), 69u) << "After allocate(3, 1) then allocate(5), the head is at 64 + 5 = 69.";
}

TEST(RingPlacement, AlignsTheAddressAndCountsThePadding) {
  for (std::size_t align : {std::size_t{2}, std::size_t{8}, std::size_t{16}, std::size_t{64}, std::size_t{256},
                            std::size_t{4096}}) {
    RingBumpAllocator ring(3 * 4096);
    auto* first = static_cast<unsigned char*>(ring.allocate(3, 1));
    ASSERT_NE(first, nullptr) << "allocate(3, 1) on a new ring returned nullptr.";
    auto* p = static_cast<unsigned char*>(ring.allocate(5, align));
    ASSERT_NE(p, nullptr) << "allocate(5, " << align << ") after allocate(3, 1) returned nullptr.";
    EXPECT_EQ(address(p) % align, 0u) << "allocate(5, " << align << ") returned an address that is not a multiple of "
                                      << align << ".";
    const std::size_t at = (3 + align - 1) / align * align;  // the first multiple of align after 3 bytes
    EXPECT_EQ(p, first + at) << "allocate(5, " << align << ") after a 3-byte block must land at offset " << at
                             << ", the first multiple of " << align << " after it: no more padding than the "
                                "alignment needs.";
    EXPECT_EQ(ring.checkpoint(), at + 5) << "The padding before an aligned block counts as handed out: after "
                                            "allocate(3, 1) and allocate(5, "
                                         << align << ") the head is at " << at + 5 << ".";
    EXPECT_EQ(ring.in_use(), at + 5) << "in_use() counts the padding too.";
  }
}

TEST(RingPlacement, RefusesBadAlignments) {
  RingBumpAllocator ring(2 * 4096);
  expect_bad_alignments_refused(ring, 0, "on a new ring, where 8 bytes fit wherever a wild alignment puts them");
  EXPECT_NE(ring.allocate(8, 4096), nullptr)
      << "allocate(8, 4096) on a new ring must succeed: a page is the largest alignment the ring accepts, and "
         "the refusals before it changed nothing.";
}

TEST(RingPlacement, RefusesZeroBytes) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(3, 1), nullptr) << "allocate(3, 1) on a new ring returned nullptr.";
  EXPECT_EQ(ring.allocate(0, 1), nullptr) << "allocate(0, 1) must return nullptr: the contract refuses n == 0.";
  EXPECT_EQ(ring.allocate(0), nullptr) << "allocate(0) must return nullptr.";
  EXPECT_EQ(ring.checkpoint(), 3u) << "A refused allocate(0) must not move the head, not even to align it.";
}

TEST(RingPlacement, RefusesMoreThanTheCapacity) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(100, 1), nullptr) << "allocate(100, 1) on a new ring returned nullptr.";
  for (std::size_t n : {std::size_t{4097}, std::size_t{1} << 40, SIZE_MAX, SIZE_MAX - 99, SIZE_MAX - 4095,
                        SIZE_MAX - 4195}) {
    for (std::size_t align : {std::size_t{1}, std::size_t{64}}) {
      EXPECT_EQ(ring.allocate(n, align), nullptr)
          << "allocate(" << n << ", " << align << ") on a ring of 4096 bytes must return nullptr. Test n > capacity() "
             "first: a size this large makes any sum of positions wrap around 2^64 and look small.";
      EXPECT_EQ(ring.checkpoint(), 100u) << "A refused allocate(" << n << ", " << align << ") must change nothing.";
    }
  }
}

TEST(RingPlacement, AnExactFitSucceeds) {
  RingBumpAllocator ring(4096);
  auto* p = static_cast<unsigned char*>(ring.allocate(4096, 1));
  ASSERT_NE(p, nullptr) << "allocate(4096, 1) on a new ring of 4096 bytes must succeed: it fits exactly. An "
                           "off-by-one in the bounds check (>= instead of >) refuses it.";
  fill(p, 4096, 7);
  EXPECT_EQ(first_changed(p, 4096, 7), 4096u) << "All 4096 bytes handed out must be writable.";
  EXPECT_EQ(ring.in_use(), 4096u) << "After allocate(4096, 1) the whole ring is in use.";
  EXPECT_EQ(ring.checkpoint(), 4096u) << "After allocate(4096, 1) the head is at 4096.";
}

TEST(RingPlacement, RefusesWhatDoesNotFitInTheFirstLap) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(3000, 1), nullptr) << "allocate(3000, 1) on a new ring of 4096 bytes returned nullptr.";
  EXPECT_EQ(ring.allocate(2000, 1), nullptr)
      << "With 3000 of 4096 bytes in use and nothing reclaimed, allocate(2000, 1) must return nullptr: the bytes "
         "at the start of the buffer still belong to the first allocation.";
  EXPECT_EQ(ring.checkpoint(), 3000u) << "A refused allocate must not move the head.";
  EXPECT_EQ(ring.in_use(), 3000u) << "A refused allocate must not change in_use().";
  EXPECT_NE(ring.allocate(1096, 1), nullptr) << "allocate(1096, 1) fills the ring exactly and must succeed.";
  EXPECT_EQ(ring.allocate(1, 1), nullptr) << "A full ring must refuse even allocate(1, 1).";
  EXPECT_EQ(ring.in_use(), 4096u) << "A full ring has capacity() bytes in use.";
}

}  // namespace stage1_placement
