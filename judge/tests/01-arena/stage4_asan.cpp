// Stage 4 — ASan-aware: AddressSanitizer knows which bytes of the buffer are live.
//
// ASan keeps one shadow byte per 8 bytes of memory ("granule"), which says how many of
// those 8 bytes, counted from the start, may be accessed. So it can express "the first k
// bytes of this granule are live and the rest are not", but not a hole at the start of a
// granule. Every expectation below is one it can express: allocations start on an
// 8-aligned address whenever a byte right before them is checked.
#include "arena_under_test.hpp"

#include <cstddef>
#include <cstring>
#include <string>

#include "alloclab_test.hpp"

namespace stage4_asan {

using alloclab::test::arena::Arena;
using alloclab::test::address;
using alloclab::test::first_poisoned;
using alloclab::test::heap_bytes_in_use;
using alloclab::test::is_poisoned;
using alloclab::test::shadow_bytes;

// The offset, from `p`, of the first byte in [p, p + n) that ASan would NOT report, or n
// when every byte is poisoned.
std::size_t first_live_byte(const void* p, std::size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_poisoned(bytes + i)) return i;
  }
  return n;
}

// A read the compiler may not remove: ASan checks it like any other.
unsigned char read_byte(const void* p) { return *static_cast<const volatile unsigned char*>(p); }

TEST(ArenaAsan, TailIsPoisonedAfterConstruction) {
  ALLOCLAB_REQUIRE_ASAN();
  for (std::size_t capacity : {std::size_t{4096}, std::size_t{100}, std::size_t{1} << 16}) {
    Arena arena(capacity);
    // allocate(0, 1) returns the buffer's start and makes no byte live.
    auto* start = static_cast<unsigned char*>(arena.allocate(0, 1));
    ASSERT_NE(start, nullptr) << "allocate(0, 1) returned nullptr.";
    ASSERT_EQ(arena.used(), 0u) << "allocate(0, 1) on a new arena must not move the cursor.";
    const std::size_t live = first_live_byte(start, capacity);
    EXPECT_EQ(live, capacity)
        << "In a new arena of " << capacity << " bytes, byte " << live << " of the buffer is not "
           "poisoned. The constructor must poison the whole buffer (ASAN_POISON_MEMORY_REGION): "
           "bytes that were never handed out are not the caller's, and ASan can only report a stray "
           "read or write into them if it knows.";
  }
}

TEST(ArenaAsan, TailStaysPoisonedAfterEachAllocation) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(1 << 14);
  auto* start = static_cast<unsigned char*>(arena.allocate(0, 1));
  ASSERT_NE(start, nullptr) << "allocate(0, 1) returned nullptr.";
  const struct {
    std::size_t n, align;
  } requests[] = {{13, 16}, {1, 1}, {100, 64}, {7, 8}, {4096, 4096}, {3, 1}, {250, 32}};
  for (const auto& r : requests) {
    ASSERT_NE(arena.allocate(r.n, r.align), nullptr) << "allocate(" << r.n << ", " << r.align << ") returned nullptr.";
    const std::size_t used = arena.used();
    const std::size_t live = first_live_byte(start + used, arena.capacity() - used);
    EXPECT_EQ(live, arena.capacity() - used)
        << "After allocate(" << r.n << ", " << r.align << "), used() is " << used << " but the byte at offset "
        << used + live << " is not poisoned: everything past used() has not been handed out and must "
           "stay poisoned, so a read past the last allocation is reported.";
  }
}

TEST(ArenaAsan, AllocateUnpoisonsExactlyTheRequest) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(1 << 14);
  // Sizes that are not multiples of 8, at 16-aligned addresses: the byte p + n shares an
  // 8-byte granule with the block's last bytes, and ASan can still mark it as poisoned.
  for (std::size_t n : {std::size_t{13}, std::size_t{1}, std::size_t{21}, std::size_t{100}, std::size_t{4003}}) {
    auto* p = static_cast<unsigned char*>(arena.allocate(n, 16));
    ASSERT_NE(p, nullptr) << "allocate(" << n << ", 16) returned nullptr.";
    EXPECT_EQ(first_poisoned(p, n), nullptr)
        << "allocate(" << n << ", 16) must unpoison all of [p, p + " << n << "); byte "
        << static_cast<const unsigned char*>(first_poisoned(p, n)) - p
        << " is still poisoned, so the caller's own use of it would be reported.";
    EXPECT_TRUE(is_poisoned(p + n))
        << "allocate(" << n << ", 16) must unpoison exactly [p, p + " << n << "), but the byte p + " << n
        << " is not poisoned. Rounding n up to a multiple of 8 hides the one-byte overruns that "
           "ASan is there to catch.";
  }
  auto* q = static_cast<unsigned char*>(arena.allocate(64, 64));
  ASSERT_NE(q, nullptr) << "allocate(64, 64) returned nullptr.";
  EXPECT_EQ(first_poisoned(q, 64), nullptr) << "allocate(64, 64) must unpoison all 64 bytes.";
  EXPECT_TRUE(is_poisoned(q + 64)) << "allocate(64, 64) must leave the byte right after the block poisoned.";
}

TEST(ArenaAsan, PaddingIsPoisoned) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(4096);
  auto* a = static_cast<unsigned char*>(arena.allocate(3, 64));
  auto* b = static_cast<unsigned char*>(arena.allocate(8, 64));
  ASSERT_NE(a, nullptr) << "allocate(3, 64) returned nullptr.";
  ASSERT_NE(b, nullptr) << "allocate(8, 64) returned nullptr.";
  ASSERT_EQ(b, a + 64) << "allocate(8, 64) right after allocate(3, 64) must land 64 bytes further on.";
  EXPECT_EQ(first_poisoned(a, 3), nullptr) << "The first block's 3 bytes must be live.";
  EXPECT_EQ(first_poisoned(b, 8), nullptr) << "The second block's 8 bytes must be live.";
  const std::size_t live = first_live_byte(a + 3, 61);
  EXPECT_EQ(live, 61u) << "The 61 bytes of padding between the two blocks must stay poisoned, but the byte "
                       << 3 + live << " bytes after the first block's start is live. Unpoison only the "
                          "block itself, not everything from the old cursor: padding belongs to no one.";
}

TEST(ArenaAsan, ResetPoisonsWhatItReclaims) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(1 << 14);
  auto* start = static_cast<unsigned char*>(arena.allocate(13, 1));
  ASSERT_NE(start, nullptr) << "allocate(13, 1) returned nullptr.";
  ASSERT_NE(arena.allocate(1000, 64), nullptr);
  ASSERT_NE(arena.allocate(5000, 4096), nullptr);
  ASSERT_NE(arena.allocate(3, 1), nullptr);
  arena.reset();
  const std::size_t live = first_live_byte(start, arena.capacity());
  EXPECT_EQ(live, arena.capacity())
      << "After reset(), byte " << live << " of the buffer is still live. reset() must poison everything "
         "it reclaims: a pointer kept from the previous step is dangling, and reading through it must "
         "be reported, not return stale data.";
  auto* again = static_cast<unsigned char*>(arena.allocate(13, 1));
  ASSERT_EQ(again, start) << "After reset(), allocate(13, 1) must return the buffer's start again.";
  EXPECT_EQ(first_poisoned(again, 13), nullptr) << "Memory handed out again after reset() must be live.";
  EXPECT_TRUE(is_poisoned(again + 13)) << "After reset(), allocate(13, 1) must leave byte 13 poisoned.";
}

TEST(ArenaAsan, RewindPoisonsWhatItReclaims) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(1 << 14);
  auto* kept = static_cast<unsigned char*>(arena.allocate(13, 1));
  ASSERT_NE(kept, nullptr) << "allocate(13, 1) returned nullptr.";
  const auto m = arena.mark();
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  ASSERT_NE(arena.allocate(2000, 256), nullptr);
  arena.rewind(m);
  const std::size_t live = first_live_byte(kept + 13, arena.capacity() - 13);
  EXPECT_EQ(live, arena.capacity() - 13)
      << "After rewind(m), byte " << 13 + live << " of the buffer is still live. rewind() must poison "
         "everything it reclaims, from the marker's offset on, so a pointer into a rewound scope is reported.";
}

TEST(ArenaAsan, ReclaimingPoisonsNothingPastTheBuffer) {
  ALLOCLAB_REQUIRE_ASAN();
  constexpr std::size_t kCapacity = 1000;  // a multiple of 8: the buffer ends on a granule boundary
  Arena arena(kCapacity);
  auto* first = static_cast<unsigned char*>(arena.allocate(400, 8));
  ASSERT_NE(first, nullptr) << "allocate(400, 8) returned nullptr.";
  const unsigned char* end = first + kCapacity;
  // What the heap itself says of the 256 bytes after the buffer: its redzone, or another block.
  const std::string past_the_end = shadow_bytes(end, 256);
  const auto middle = arena.mark();
  ASSERT_NE(arena.allocate(kCapacity - 400, 8), nullptr) << "allocate() of exactly what is left returned nullptr.";
  arena.rewind(middle);
  EXPECT_EQ(shadow_bytes(end, 256), past_the_end)
      << "rewind() to a marker at offset 400, after allocations that reach the end of a " << kCapacity
      << "-byte buffer, changed AddressSanitizer's shadow of the bytes after the buffer. rewind() must poison "
         "exactly [marker, used()): memory past the buffer belongs to the heap or to someone else.";
  ASSERT_NE(arena.allocate(kCapacity - 400, 8), nullptr) << "allocate() of exactly what is left returned nullptr.";
  arena.reset();
  EXPECT_EQ(shadow_bytes(end, 256), past_the_end)
      << "reset() after allocations that reach the end of the buffer changed AddressSanitizer's shadow of the "
         "bytes after it. reset() must poison exactly [0, used()).";
}

TEST(ArenaAsan, RewindLeavesEarlierAllocationsLive) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(1 << 14);
  auto* kept = static_cast<unsigned char*>(arena.allocate(13, 1));
  ASSERT_NE(kept, nullptr) << "allocate(13, 1) returned nullptr.";
  // A marker at offset 13, in the middle of an 8-byte granule whose first 5 bytes are in use.
  const auto inside_a_granule = arena.mark();
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  ASSERT_NE(arena.allocate(2000, 256), nullptr);
  arena.rewind(inside_a_granule);
  EXPECT_EQ(first_poisoned(kept, 13), nullptr)
      << "rewind() to a marker at offset 13 poisoned part of the 13-byte block allocated before mark(): "
         "poison from the marker's offset exactly, not from the buffer's start nor from the offset "
         "rounded down to a multiple of 8. The caller is still using that block.";

  auto* also_kept = static_cast<unsigned char*>(arena.allocate(40, 16));
  ASSERT_NE(also_kept, nullptr) << "allocate(40, 16) returned nullptr.";
  const auto m = arena.mark();
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  ASSERT_NE(arena.allocate(2000, 256), nullptr);
  arena.rewind(m);
  EXPECT_EQ(first_poisoned(kept, 13), nullptr)
      << "rewind(m) poisoned a block allocated before mark(): only what was allocated since the marker "
         "is reclaimed, and the caller is still using the rest.";
  EXPECT_EQ(first_poisoned(also_kept, 40), nullptr)
      << "rewind(m) poisoned the block allocated right before mark(): poison from the marker's offset, "
         "not from the buffer's start.";
}

TEST(ArenaAsan, DestructorReturnsTheBuffer) {
  ALLOCLAB_REQUIRE_ASAN();
  constexpr std::size_t kCapacity = 1 << 20;
  const std::size_t before = heap_bytes_in_use();
  for (int i = 0; i < 4; ++i) {
    Arena arena(kCapacity);
    (void)arena.allocate(1000, 64);
  }
  const std::size_t after = heap_bytes_in_use();
  EXPECT_LT(after, before + kCapacity)
      << "Four arenas of 1 MiB were built and destroyed, but the heap holds " << after - before
      << " bytes more than before: the destructor must free the buffer (with the operator delete that "
         "matches the operator new that allocated it), or every engine step that builds an arena leaks.";
}

TEST(ArenaAsan, ReadPastAnAllocationIsReported) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(4096);
  void* p = arena.allocate(13, 16);
  ASSERT_NE(p, nullptr) << "allocate(13, 16) returned nullptr.";
  alloclab::test::quick_death_tests();
  EXPECT_DEATH(read_byte(static_cast<unsigned char*>(p) + 13), "use-after-poison|buffer-overflow")
      << "Reading the byte right after a 13-byte allocation must be reported by AddressSanitizer: the "
         "arena must poison what it has not handed out and unpoison exactly the bytes requested.";
}

TEST(ArenaAsan, ReadAfterResetIsReported) {
  ALLOCLAB_REQUIRE_ASAN();
  Arena arena(4096);
  void* p = arena.allocate(64, 64);
  ASSERT_NE(p, nullptr) << "allocate(64, 64) returned nullptr.";
  std::memset(p, 1, 64);
  arena.reset();
  alloclab::test::quick_death_tests();
  EXPECT_DEATH(read_byte(p), "use-after-poison")
      << "Reading memory the arena reclaimed with reset() must be reported by AddressSanitizer: reset() "
         "must poison what it reclaims.";
}

}  // namespace stage4_asan
