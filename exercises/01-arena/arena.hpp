// AllocLab exercise 01: the arena.
//
// Read chapters/01-arena.md first. Fill in the bodies below, stage by stage, and judge your
// work with `python3 judge/judge.py test 1` (`python3 judge/judge.py hint 1` when stuck).
// Keep every declaration as it is: the tests call exactly these names and signatures. You
// may add private members and helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace alloclab {

/// A bump allocator over one buffer, for memory whose lifetime ends all at once: an
/// inference engine's per-step scratch.
class Arena {
 public:
  /// Stage 1: reserve one buffer of `capacity` bytes, whose start address is a multiple of
  /// 4096 (stage 2). Throw std::invalid_argument when `capacity` is 0.
  /// Stage 4: under AddressSanitizer, poison the whole buffer: nothing is handed out yet.
  explicit Arena([[maybe_unused]] std::size_t capacity) {}

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  /// Stage 1: give the buffer back, with the deallocation function that matches the one
  /// that allocated it. Stage 4: the heap must get it back unpoisoned.
  ~Arena() {}

  /// Stage 1: return `n` bytes nobody else is using, right after the previous allocation,
  /// and move `used()` past them. A request that does not fit throws std::bad_alloc and
  /// changes nothing, even when `n` is so large that adding it to anything overflows.
  /// `n == 0` returns a valid, non-null pointer.
  /// Stage 2: the returned ADDRESS is a multiple of `align` (alignments above 4096
  /// included), and the bytes skipped to reach it count in `used()`. An `align` that is not
  /// a power of two (0, 3, 48) throws std::invalid_argument.
  /// Stage 4: under AddressSanitizer, unpoison exactly the `n` bytes handed out.
  [[nodiscard]] void* allocate([[maybe_unused]] std::size_t n,
                               [[maybe_unused]] std::size_t align = alignof(std::max_align_t)) {
    return nullptr;
  }

  /// Stage 2: room for `count` objects of type T, aligned for T; no constructor runs.
  /// Throw std::bad_alloc (std::bad_array_new_length is one) when count * sizeof(T) does
  /// not fit in a std::size_t.
  template <class T>
  [[nodiscard]] T* alloc_array([[maybe_unused]] std::size_t count) {
    return nullptr;
  }

  /// Stage 3: reclaim every allocation; the same requests afterwards get the same
  /// addresses. Stage 4: poison what is reclaimed.
  void reset() noexcept {}

  /// Stage 1: bytes from the buffer's start to the end of the last allocation, padding
  /// included (stage 2).
  [[nodiscard]] std::size_t used() const noexcept { return 0; }

  /// Stage 3: the largest used() ever seen. reset() and rewind() never lower it; a failed
  /// request never raises it.
  [[nodiscard]] std::size_t peak() const noexcept { return 0; }

  /// Stage 1: the size given to the constructor.
  [[nodiscard]] std::size_t capacity() const noexcept { return 0; }

  /// A position to come back to with rewind().
  struct Marker {
    std::size_t offset;
  };

  /// Stage 3: record the current used().
  [[nodiscard]] Marker mark() const noexcept { return Marker{0}; }

  /// Stage 3: go back to `m`: what was allocated since mark() is handed out again, what was
  /// allocated before stays. A marker beyond the current used() (taken before a reset(), or
  /// before an earlier rewind() that went further back) is ignored: rewind never moves
  /// used() forward. Stage 4: poison what is reclaimed, and nothing else.
  void rewind([[maybe_unused]] Marker m) noexcept {}
};

}  // namespace alloclab
