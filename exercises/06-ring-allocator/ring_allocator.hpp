// AllocLab exercise 06: the ring bump allocator.
//
// Read chapters/06-ring-allocator.md first. Fill in the bodies below, stage by stage, and judge
// your work with `python3 judge/judge.py test 6` (`python3 judge/judge.py hint 6` when stuck).
// Keep every declaration as it is: the tests call exactly these names and signatures. You may
// add private members and helpers.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace alloclab {

/// A bump allocator whose buffer is a ring: one producer thread allocates at the head, one
/// consumer thread reclaims up to a checkpoint at the tail.
///
/// Head and tail are positions: byte counts since construction that only grow. The offset in
/// the buffer is `position % capacity()`, and the bytes in use are head minus tail.
class RingBumpAllocator {
 public:
  /// Stage 1: map a buffer of `capacity` bytes rounded up to a multiple of 4096 with mmap (it
  /// is then page-aligned). Throw std::invalid_argument when `capacity` is 0, std::bad_alloc
  /// when the mapping fails.
  /// Stage 4: under AddressSanitizer, poison the whole buffer: nothing is handed out yet.
  explicit RingBumpAllocator([[maybe_unused]] std::size_t capacity) {}

  RingBumpAllocator(const RingBumpAllocator&) = delete;
  RingBumpAllocator& operator=(const RingBumpAllocator&) = delete;

  /// Stage 1: munmap the buffer. Stage 4: unpoison it first; ASan does not own it.
  ~RingBumpAllocator() {}

  /// Producer thread only.
  /// Stage 1: return `n` bytes at the head's offset, the address aligned up to `align`, and
  /// move the head past them (the padding counts as in use). Return nullptr and change nothing
  /// when `n` is 0 or more than capacity(), when `align` is not a power of two or is more than
  /// 4096, or when the new head would be more than capacity() bytes ahead of the tail.
  /// Stage 2: a block that would cross the end of the buffer goes to offset 0 instead, and the
  /// bytes skipped at the end count as in use.
  /// Stage 3: read the tail so that the consumer's reclaim happens before your reuse.
  /// Stage 4: unpoison exactly the `n` bytes handed out, and poison what was reclaimed since the
  /// last call.
  [[nodiscard]] void* allocate([[maybe_unused]] std::size_t n, [[maybe_unused]] std::size_t align = 64) noexcept {
    return nullptr;
  }

  /// Producer thread only. Stage 1: the head position, after the last allocation.
  [[nodiscard]] std::uint64_t checkpoint() const noexcept { return 0; }

  /// Consumer thread only. Stage 2: make every byte before position `c` available again.
  /// Ignore a `c` at or before the last reclaimed position, or after the current head.
  /// Stage 3: publish the new tail so that everything the consumer did before it happens
  /// before the producer's reuse.
  /// Stage 4: leave the poisoning of what is reclaimed to the producer's next allocate (a
  /// consumer that poisons must do it before its release store of the tail, never after).
  void reclaim([[maybe_unused]] std::uint64_t c) noexcept {}

  /// Stage 1: the buffer's size, a multiple of 4096.
  [[nodiscard]] std::size_t capacity() const noexcept { return 0; }

  /// Any thread. Stage 1: the head minus the last reclaimed position, padding and skipped ends
  /// included. Stage 3: never more than capacity(), whichever thread asks.
  [[nodiscard]] std::size_t in_use() const noexcept { return 0; }

  // Stage 3: the head and the tail go on different cache lines (alignas(64)).
};

}  // namespace alloclab
