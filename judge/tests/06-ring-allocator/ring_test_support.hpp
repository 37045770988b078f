// Helpers shared by the stages of exercise 06.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloclab_test.hpp"

namespace alloclab::test::ring {

constexpr std::size_t kPage = 4096;

/// The byte that fill() writes at index i of a block tagged `seed`.
inline unsigned char pattern_byte(std::uint64_t seed, std::size_t i) {
  return static_cast<unsigned char>((seed * 0x9E3779B1u + i * 13 + (i >> 8)) ^ (seed >> 5));
}

/// Writes the pattern of `seed` into the n bytes at p.
inline void fill(void* p, std::size_t n, std::uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(seed, i);
}

/// The index of the first of the n bytes at p that no longer holds fill()'s pattern, or n.
inline std::size_t first_changed(const void* p, std::size_t n, std::uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != pattern_byte(seed, i)) return i;
  return n;
}

/// A block handed out, with the seed of the pattern written into it.
struct Block {
  unsigned char* p;
  std::size_t n;
  std::uint64_t seed;
};

/// The contract of RingBumpAllocator, written as plainly as possible: positions only grow,
/// a block goes at `head % capacity` aligned up, or at offset 0 when it would cross the
/// end (the skipped bytes count as in use), and nothing may be more than a lap ahead of the
/// tail. The tests compare the real allocator with it call by call.
struct RingModel {
  std::uint64_t capacity;
  std::uint64_t head = 0;
  std::uint64_t tail = 0;

  /// The offset allocate(n, align) must return, or nullopt for a refusal. Moves the head.
  std::optional<std::size_t> allocate(std::size_t n, std::size_t align) {
    if (n == 0 || n > capacity || align == 0 || (align & (align - 1)) != 0 || align > kPage) return std::nullopt;
    const std::uint64_t offset = head % capacity;
    std::uint64_t start = (offset + align - 1) / align * align;
    std::uint64_t end = head + (start - offset) + n;
    if (start + n > capacity) {
      start = 0;
      end = head + (capacity - offset) + n;
    }
    if (end - tail > capacity) return std::nullopt;
    head = end;
    return static_cast<std::size_t>(start);
  }

  void reclaim(std::uint64_t c) {
    if (c > tail && c <= head) tail = c;
  }

  std::uint64_t in_use() const { return head - tail; }

  std::string describe() const {
    return "head " + std::to_string(head) + " (offset " + std::to_string(head % capacity) + "), tail " +
           std::to_string(tail) + " (offset " + std::to_string(tail % capacity) + "), capacity " +
           std::to_string(capacity);
  }
};

/// One call of munmap that gave back the watched address (unmap_watch.cpp; recorded only under
/// AddressSanitizer: the tests that read them skip without it).
struct Unmapping {
  std::uintptr_t begin;
  std::size_t length;
  const void* first_poisoned;  // what ASan reported poisoned in [begin, begin + length) at the call
};

/// Forgets the calls recorded so far and from now on records every munmap whose range holds `p`.
void watch_unmapping(const void* p);

/// The munmap calls recorded since the last watch_unmapping().
std::vector<Unmapping> unmappings();

/// Asks `ring` for 8 bytes at every alignment the contract refuses (0, not a power of two, or
/// above a page): each must return nullptr and leave the head at `head`. `where` says why each
/// would fit if it were taken.
template <class Ring>
void expect_bad_alignments_refused(Ring& ring, std::uint64_t head, const char* where) {
  for (std::size_t align : {std::size_t{0}, std::size_t{3}, std::size_t{48}, std::size_t{100}, std::size_t{8192},
                            std::size_t{1} << 20, SIZE_MAX}) {
    EXPECT_EQ(ring.allocate(8, align), nullptr)
        << "allocate(8, " << align << ") must return nullptr " << where << ": align must be a power of two no "
        << "larger than 4096 (one page, the buffer's own alignment, which is all the ring can promise after a wrap).";
    EXPECT_EQ(ring.checkpoint(), head) << "A refused allocate(8, " << align << ") must change nothing.";
  }
}

}  // namespace alloclab::test::ring
