// Stage 2 — alignment: absolute addresses, invalid alignments, alloc_array and its overflow check.
#include "arena_under_test.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"

namespace stage2_alignment {

using alloclab::test::address;
using alloclab::test::arena::Arena;
using alloclab::test::arena::CacheLine;
using alloclab::test::arena::Triple;

TEST(ArenaAlignment, BufferIsPageAligned) {
  // On a new arena, allocate(1, 1) needs no padding, so it returns the buffer's start
  // (used() == 1 proves it). Several arenas of several sizes are alive at once, so a
  // buffer that is page-aligned by luck cannot pass for all of them.
  const std::size_t capacities[] = {1, 100, 4096, 5000, 65536, 1 << 20};
  std::vector<std::unique_ptr<Arena>> arenas;
  for (std::size_t capacity : capacities) {
    arenas.push_back(std::make_unique<Arena>(capacity));
    Arena& arena = *arenas.back();
    void* start = arena.allocate(1, 1);
    ASSERT_NE(start, nullptr) << "allocate(1, 1) on a new arena of " << capacity << " bytes returned nullptr.";
    ASSERT_EQ(arena.used(), 1u) << "allocate(1, 1) on a new arena must use exactly 1 byte: no padding is needed.";
    EXPECT_EQ(address(start) % 4096, 0u)
        << "The buffer of an arena of " << capacity << " bytes starts at " << start
        << ", which is not a multiple of 4096. The buffer must be page-aligned (plain new[] or malloc "
           "only promise 16 bytes): page alignment lets tensors be mapped, pinned or handed to a "
           "device, and makes every alignment up to 4096 free at the start of the buffer.";
  }
}

TEST(ArenaAlignment, DefaultAlignmentIsMaxAlign) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  void* p = arena.allocate(24);
  ASSERT_NE(p, nullptr) << "allocate(24) with the default alignment returned nullptr.";
  EXPECT_EQ(address(p) % alignof(std::max_align_t), 0u)
      << "allocate(n) without an alignment must align to alignof(std::max_align_t) ("
      << alignof(std::max_align_t) << "), as malloc does: any scalar type may be stored there.";
}

TEST(ArenaAlignment, ZeroBytesAreAlignedToo) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(3, 1), nullptr) << "allocate(3, 1) returned nullptr.";
  void* p = arena.allocate(0);
  ASSERT_NE(p, nullptr) << "allocate(0) returned nullptr.";
  EXPECT_EQ(address(p) % alignof(std::max_align_t), 0u)
      << "allocate(0) after 3 bytes returned " << p << ", which is not aligned to alignof(std::max_align_t): "
         "an empty request still gets an aligned pointer (a caller may compare it, or store an empty "
         "array of doubles there).";
  void* q = arena.allocate(0, 256);
  ASSERT_NE(q, nullptr) << "allocate(0, 256) returned nullptr.";
  EXPECT_EQ(address(q) % 256, 0u) << "allocate(0, 256) must return a 256-aligned pointer.";
}

TEST(ArenaAlignment, AlignsEveryPowerOfTwoUpToAPage) {
  Arena arena(1 << 16);
  for (std::size_t align = 1; align <= 4096; align *= 2) {
    // Put the cursor on an odd offset first, so that every alignment needs padding.
    ASSERT_NE(arena.allocate(3, 1), nullptr) << "allocate(3, 1) returned nullptr.";
    void* p = arena.allocate(5, align);
    ASSERT_NE(p, nullptr) << "allocate(5, " << align << ") returned nullptr.";
    EXPECT_EQ(address(p) % align, 0u)
        << "allocate(5, " << align << ") returned " << p << ", which is not a multiple of " << align
        << ": the address handed out must be aligned, whatever the cursor was before.";
  }
}

TEST(ArenaAlignment, AlignsTheAddressNotTheOffset) {
  // The buffer is page-aligned, so for align <= 4096 an aligned offset is also an aligned
  // address. Above a page it is not: the buffer's start is a multiple of 4096 but, in
  // general, not of 8192 or 1 MiB. One arena per alignment, each with its own buffer.
  for (std::size_t align = 8192; align <= (std::size_t{1} << 20); align *= 2) {
    Arena arena(3 * align);
    ASSERT_NE(arena.allocate(1, 1), nullptr) << "allocate(1, 1) returned nullptr.";
    void* p = arena.allocate(64, align);
    ASSERT_NE(p, nullptr) << "allocate(64, " << align << ") returned nullptr in an arena of "
                          << 3 * align << " bytes, which has room for the padding.";
    EXPECT_EQ(address(p) % align, 0u)
        << "allocate(64, " << align << ") returned " << p << ", which is not a multiple of " << align
        << ". Align the address (buffer + offset), not the offset from the buffer's start: the "
           "buffer is only promised to be page-aligned.";
  }
}

TEST(ArenaAlignment, UsedIncludesPadding) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  void* p = arena.allocate(8, 64);
  ASSERT_NE(p, nullptr) << "allocate(8, 64) returned nullptr.";
  EXPECT_EQ(arena.used(), 72u)
      << "After allocate(1, 1) and allocate(8, 64) on a new (page-aligned) arena, the second block "
         "starts at offset 64, so used() must be 72: used() is the offset of the end of the last "
         "allocation, padding included, and it is what tells you how much of the buffer is gone.";
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  ASSERT_NE(arena.allocate(1, 32), nullptr);
  EXPECT_EQ(arena.used(), 97u) << "allocate(1, 1) then allocate(1, 32) after offset 72 must end at "
                                  "offset 97 (block at 96): padding counts in used().";
}

TEST(ArenaAlignment, RejectsZeroAlignment) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(10, 1), nullptr);
  EXPECT_THROW((void)arena.allocate(8, 0), std::invalid_argument)
      << "allocate(8, 0) must throw std::invalid_argument: 0 is not a power of two. The test "
         "`(align & (align - 1)) == 0` alone lets 0 through.";
  EXPECT_EQ(arena.used(), 10u) << "A refused alignment must leave used() as it was.";
}

TEST(ArenaAlignment, RejectsNonPowerOfTwoAlignment) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(10, 1), nullptr);
  const std::size_t bad[] = {3, 5, 6, 12, 24, 48, 100, 4095, 4097, 3 << 12, SIZE_MAX, (SIZE_MAX >> 1) + 2};
  for (std::size_t align : bad) {
    EXPECT_THROW((void)arena.allocate(8, align), std::invalid_argument)
        << "allocate(8, " << align << ") must throw std::invalid_argument: alignments are powers "
           "of two. Rounding to a multiple of 48 yields addresses that are not even 32-aligned, "
           "and the caller asked for something no type can require.";
  }
  EXPECT_EQ(arena.used(), 10u) << "Refused alignments must leave used() as it was.";
}

TEST(ArenaAlignment, PaddingThatDoesNotFitThrows) {
  // 4000 bytes: after one byte, the next 4096-aligned address is 4095 bytes further on,
  // past the end of the buffer. The padding alone does not fit.
  Arena arena(4000);
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  EXPECT_THROW((void)arena.allocate(0, 4096), std::bad_alloc)
      << "allocate(0, 4096) must throw std::bad_alloc when the padding up to the next 4096-aligned "
         "address (4095 bytes) is more than what is left (3999): a bounds check must count the "
         "padding, and `left - padding` must not be computed when padding > left (it wraps around).";
  EXPECT_THROW((void)arena.allocate(1, 4096), std::bad_alloc)
      << "allocate(1, 4096) must throw std::bad_alloc: its padding alone is larger than what is left.";
  EXPECT_THROW((void)arena.allocate(SIZE_MAX, 4096), std::bad_alloc)
      << "allocate(SIZE_MAX, 4096) must throw std::bad_alloc.";
  EXPECT_EQ(arena.used(), 1u) << "A request refused because of its padding must not move the cursor: "
                                 "used() must still be 1, not include the padding.";
  EXPECT_NO_THROW((void)arena.allocate(3999, 1)) << "After refused requests, the 3999 bytes left must still be available.";
}

TEST(ArenaAlignment, PaddingPlusSizeMustFit) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  // Padding 63 fits, and so would 64 bytes on their own, but not both: 1 + 63 + 4033 > 4096.
  EXPECT_THROW((void)arena.allocate(4033, 64), std::bad_alloc)
      << "allocate(4033, 64) after 1 byte needs 63 bytes of padding plus 4033, 4097 in all, in a "
         "4096-byte arena: it must throw std::bad_alloc.";
  EXPECT_EQ(arena.used(), 1u) << "A failed request must leave used() as it was.";
  void* p = arena.allocate(4032, 64);
  ASSERT_NE(p, nullptr) << "allocate(4032, 64) after 1 byte fits exactly (1 + 63 + 4032 = 4096).";
  EXPECT_EQ(arena.used(), 4096u) << "An exact fit with padding must end at capacity().";
}

TEST(ArenaAlignment, AllocArrayAlignsForT) {
  Arena arena(8192);
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  CacheLine* lines = arena.alloc_array<CacheLine>(3);
  ASSERT_NE(lines, nullptr) << "alloc_array<CacheLine>(3) returned nullptr.";
  EXPECT_EQ(address(lines) % alignof(CacheLine), 0u)
      << "alloc_array<T> must align to alignof(T) (64 for CacheLine), not to the default "
         "alignof(std::max_align_t): an over-aligned type stored off its alignment is undefined "
         "behaviour and defeats the reason it was aligned.";
  EXPECT_EQ(arena.used(), 64u + 3 * sizeof(CacheLine))
      << "alloc_array<CacheLine>(3) after 1 byte must pad to offset 64 and take 3 * 64 bytes.";

  char* text = arena.alloc_array<char>(5);
  ASSERT_NE(text, nullptr) << "alloc_array<char>(5) returned nullptr.";
  EXPECT_EQ(arena.used(), 64u + 3 * sizeof(CacheLine) + 5)
      << "alloc_array<char>(5) needs alignment 1, so it must add no padding: it allocates "
         "count * sizeof(T) bytes aligned to alignof(T), nothing more.";
  char* more = arena.alloc_array<char>(1);
  EXPECT_EQ(more, text + 5) << "Two alloc_array<char> calls must be adjacent: alignof(char) is 1.";

  double* values = arena.alloc_array<double>(4);
  ASSERT_NE(values, nullptr) << "alloc_array<double>(4) returned nullptr.";
  EXPECT_EQ(address(values) % alignof(double), 0u) << "alloc_array<double> must align to alignof(double).";
  for (int i = 0; i < 4; ++i) values[i] = i;  // the memory is ours to write
}

TEST(ArenaAlignment, AllocArraySizeIsCountTimesSizeofT) {
  Arena arena(4096);
  auto* values = arena.alloc_array<std::uint32_t>(10);
  ASSERT_NE(values, nullptr) << "alloc_array<std::uint32_t>(10) returned nullptr.";
  EXPECT_EQ(arena.used(), 40u) << "alloc_array<std::uint32_t>(10) on a new arena must use 10 * 4 = 40 bytes.";
  EXPECT_NE(arena.alloc_array<Triple>(0), nullptr)
      << "alloc_array<T>(0) must return a valid, non-null pointer, like allocate(0).";
}

TEST(ArenaAlignment, AllocArrayRejectsOverflowingCount) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(16, 1), nullptr);
  // SIZE_MAX / 24 + 1 Triples are 2^64 + 8 bytes: the product wraps around to 8.
  const std::size_t wraps_to_8 = SIZE_MAX / sizeof(Triple) + 1;
  EXPECT_THROW((void)arena.alloc_array<Triple>(wraps_to_8), std::bad_alloc)
      << "alloc_array<T>(count) must throw std::bad_alloc when count * sizeof(T) overflows: here it "
         "wraps around to 8 bytes, so an unchecked multiplication hands out 8 bytes for an array "
         "of " << wraps_to_8 << " elements, and the first write past them corrupts memory.";
  const std::size_t wraps_to_0 = SIZE_MAX / 8 + 1;
  EXPECT_THROW((void)arena.alloc_array<std::uint64_t>(wraps_to_0), std::bad_alloc)
      << "alloc_array<std::uint64_t>(2^61) is 2^64 bytes, which wraps around to 0: it must throw "
         "std::bad_alloc.";
  EXPECT_THROW((void)arena.alloc_array<std::uint64_t>(SIZE_MAX), std::bad_alloc)
      << "alloc_array<std::uint64_t>(SIZE_MAX) must throw std::bad_alloc.";
  EXPECT_EQ(arena.used(), 16u) << "A refused alloc_array must leave used() as it was.";
}

}  // namespace stage2_alignment
