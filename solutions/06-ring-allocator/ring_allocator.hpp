// AllocLab exercise 06, reference solution: the ring bump allocator.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#define ALLOCLAB_RING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOCLAB_RING_ASAN 1
#endif
#endif

#ifdef ALLOCLAB_RING_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace alloclab {

/// A bump allocator whose buffer is a ring, shared by two threads: one producer allocates at
/// the head, one consumer reclaims at the tail.
///
/// Policy: memory is handed out in order and taken back in the same order, a whole step at a
/// time. The producer (the thread that prepares a step's uploads) allocates, then takes a
/// `checkpoint()`; the consumer (the thread that learns the device has finished the step)
/// calls `reclaim(checkpoint)`, and every byte before it may be handed out again. Nothing is
/// freed one by one. An allocation never straddles the end of the buffer: one that would is
/// placed at offset 0 instead, and the bytes skipped at the end count as in use until the
/// checkpoint after them is reclaimed.
///
/// Head and tail are positions: 64-bit byte counts since construction that only grow, never
/// offsets into the buffer. The offset is `position % capacity()` (the producer keeps the
/// head's offset beside it rather than divide on every call), and the bytes in use are
/// `head - tail`, so an empty ring (0) and a full one (`capacity()`) never look alike. At one
/// byte per nanosecond, 64 bits last five centuries.
///
/// No lock. The producer alone writes the head, the consumer alone writes the tail; each
/// publishes its position with a release store and reads the other's with an acquire load,
/// and each lives on its own cache line so that the two threads do not steal one line from
/// each other on every call. The refusals of `allocate` (nullptr) are its normal answer when
/// the consumer has fallen behind, so the hot path neither throws nor locks.
///
/// Under AddressSanitizer every byte that is not handed out is poisoned. The producer does
/// the poisoning of what the consumer reclaimed, at its next `allocate`: the shadow bytes of
/// the buffer are then written by one thread only.
class RingBumpAllocator {
 public:
  /// The buffer is mapped in whole pages, and no alignment beyond one page is offered.
  static constexpr std::size_t kPageSize = 4096;

  /// Maps a buffer of `capacity` bytes rounded up to a multiple of 4096. Throws
  /// `std::invalid_argument` when `capacity` is 0, `std::bad_alloc` when the rounded size
  /// cannot be represented or the kernel refuses the mapping.
  explicit RingBumpAllocator(std::size_t capacity) : capacity_(rounded_capacity(capacity)) {
    void* mapped = ::mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) out_of_memory();
    buffer_ = static_cast<std::byte*>(mapped);
#ifdef MADV_HUGEPAGE
    // A request, not a promise: the kernel may ignore it (huge pages disabled, memory too
    // fragmented, buffer smaller than one huge page), and nothing here depends on the answer.
    ::madvise(mapped, capacity_, MADV_HUGEPAGE);
#endif
    poison(buffer_, capacity_);
  }

  RingBumpAllocator(const RingBumpAllocator&) = delete;
  RingBumpAllocator& operator=(const RingBumpAllocator&) = delete;

  ~RingBumpAllocator() {
    // ASan's allocator never owned these pages, and not every ASan runtime clears the shadow of
    // what is unmapped: left poisoned, it would make the next mapping at this address unusable.
    unpoison(buffer_, capacity_);
    ::munmap(buffer_, capacity_);
  }

  /// Producer thread only. Returns `n` bytes whose address is a multiple of `align`, placed
  /// at the head's offset, or at offset 0 when they would cross the end of the buffer.
  /// Returns nullptr, and changes nothing, when `n` is 0 or more than `capacity()`, when
  /// `align` is not a power of two or is more than 4096, or when the consumer has not yet
  /// reclaimed enough for the request.
  [[nodiscard]] void* allocate(std::size_t n, std::size_t align = 64) noexcept {
    // `n <= capacity_` also keeps every sum below far from overflowing.
    if (n == 0 || n > capacity_ || align == 0 || (align & (align - 1)) != 0 || align > kPageSize) return nullptr;
    const std::uint64_t head = head_.load(std::memory_order_relaxed);  // this thread is its only writer
    std::size_t offset = head_offset_;  // head % capacity_, kept so that the fast path has no division
    // Align the address, not the offset. They agree while the buffer is page-aligned and
    // align <= 4096, but the address is what the caller asked about.
    std::size_t padding = static_cast<std::size_t>(-address(buffer_ + offset) & (align - 1));
    std::size_t skipped = 0;
    if (padding + n > capacity_ - offset) {
      // Would cross the end: restart at offset 0, which is page-aligned, and count the bytes
      // skipped at the end as in use. They are reclaimed with the checkpoint after them.
      skipped = capacity_ - offset;
      offset = 0;
      padding = 0;
    }
    const std::uint64_t end = head + skipped + padding + n;
    // The ring is full when the new head would be more than a lap ahead of the tail. The
    // tail seen last time is a lower bound of the real one, so "fits" is always true; only
    // a refusal, or an ASan build that must poison what was reclaimed, looks again.
    if (end - tail_seen_ > capacity_ || kPoisonReclaimedEagerly) {
      if (!fits_after_looking_at_tail(end)) return nullptr;
    }
    std::byte* p = buffer_ + offset + padding;
    unpoison(p, n);
    head_offset_ = offset + padding + n == capacity_ ? 0 : offset + padding + n;
    // Release, but it publishes none of the block's bytes: the caller writes them after this
    // store. The consumer learns of a step, and sees its bytes, through whatever hands it the
    // checkpoint. This edge only lets reclaim() and in_use() see a head no older than a
    // checkpoint that reached them that way.
    head_.store(end, std::memory_order_release);
    return p;
  }

  /// Producer thread only: the position after the last allocation, to be handed to the
  /// consumer and reclaimed once the step that used the allocations is over.
  [[nodiscard]] std::uint64_t checkpoint() const noexcept { return head_.load(std::memory_order_relaxed); }

  /// Consumer thread only: makes every byte before position `c` available again. A `c` at or
  /// before the last reclaimed position, or after the current head, is ignored.
  void reclaim(std::uint64_t c) noexcept {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // this thread is its only writer
    if (c <= tail || c > head_.load(std::memory_order_acquire)) return;
    // Release: everything this thread did with the bytes before `c` (the reads of a finished
    // step's uploads) happens before the producer's acquire load sees the new tail, and so
    // before the producer writes those bytes again. Without it, the producer may reuse
    // bytes this thread is still reading.
    tail_.store(c, std::memory_order_release);
  }

  /// The size of the buffer: the constructor's argument rounded up to a multiple of 4096.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  /// Any thread: bytes from the last reclaimed position to the head, padding and skipped
  /// ends included. Between 0 and `capacity()`.
  [[nodiscard]] std::size_t in_use() const noexcept {
    // Head and tail are two loads, and either may move in between. Reading the tail on both
    // sides of the head yields a pair that held at one instant: the tail did not move while
    // the head was read, so their difference is never more than a lap.
    std::uint64_t tail = tail_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint64_t head = head_.load(std::memory_order_acquire);
      const std::uint64_t again = tail_.load(std::memory_order_acquire);
      if (again == tail) return static_cast<std::size_t>(head - tail);
      tail = again;
    }
  }

 private:
  static constexpr std::size_t kCacheLine = 64;

#ifdef ALLOCLAB_RING_ASAN
  static constexpr bool kPoisonReclaimedEagerly = true;
#else
  static constexpr bool kPoisonReclaimedEagerly = false;
#endif

  static std::size_t rounded_capacity(std::size_t capacity) {
    if (capacity == 0) zero_capacity();
    if (capacity > SIZE_MAX - (kPageSize - 1)) out_of_memory();
    return (capacity + kPageSize - 1) / kPageSize * kPageSize;
  }

  static std::uintptr_t address(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p); }

  // The throw paths stay out of line, as the kit's error policy writes them (docs/authoring.md);
  // only the constructor throws.
  [[noreturn, gnu::noinline, gnu::cold]] static void zero_capacity() {
    throw std::invalid_argument("RingBumpAllocator: capacity must be greater than 0");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void out_of_memory() { throw std::bad_alloc(); }

  // The slow path: the cached tail says there is no room, or ASan wants the reclaimed bytes
  // poisoned. Acquire pairs with the consumer's release in reclaim(): once the new tail is
  // seen, the consumer is done with every byte before it.
  [[gnu::noinline]] bool fits_after_looking_at_tail(std::uint64_t end) noexcept {
    tail_seen_ = tail_.load(std::memory_order_acquire);
    poison_reclaimed();
    return end - tail_seen_ <= capacity_;
  }

  // Poisons the bytes reclaimed since the last call: positions [poisoned_to_, tail_seen_),
  // which may run past the end of the buffer and on from its start.
  void poison_reclaimed() noexcept {
#ifdef ALLOCLAB_RING_ASAN
    if (tail_seen_ == poisoned_to_) return;
    // ASan marks only a granule's first k bytes addressable. When the last call stopped inside a
    // granule with bytes in use after that point, the reclaimed bytes before it in the granule
    // had to stay addressable. Now that the tail has moved on, start at the granule's first byte
    // so that they are poisoned with what follows them; but if this lap's head has come back to
    // those offsets and what it placed there may still be in use, start after that.
    const std::uint64_t granule = poisoned_to_ & ~std::uint64_t{7}, head = head_.load(std::memory_order_relaxed);
    const std::uint64_t placed = head < poisoned_to_ + capacity_ ? head : poisoned_to_ + capacity_;
    const std::uint64_t in_use_from = tail_seen_ > granule + capacity_ ? tail_seen_ : granule + capacity_;
    poisoned_to_ = in_use_from >= placed ? granule : placed - capacity_;
    const std::uint64_t count = tail_seen_ - poisoned_to_;
    if (count >= capacity_) {
      poison(buffer_, capacity_);
    } else {
      const std::size_t from = static_cast<std::size_t>(poisoned_to_ % capacity_);
      const std::size_t first = count < capacity_ - from ? static_cast<std::size_t>(count) : capacity_ - from;
      poison(buffer_ + from, first);
      poison(buffer_, static_cast<std::size_t>(count) - first);
    }
    poisoned_to_ = tail_seen_;
#endif
  }

  static void poison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#ifdef ALLOCLAB_RING_ASAN
    if (n != 0) ASAN_POISON_MEMORY_REGION(p, n);
#endif
  }
  static void unpoison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#ifdef ALLOCLAB_RING_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
  }

  // Read-only once built, by both threads.
  std::byte* buffer_ = nullptr;
  std::size_t capacity_;

  // The producer's line: the head, and what the producer alone remembers about the tail.
  alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};
  std::size_t head_offset_ = 0;   // head_ % capacity_
  std::uint64_t tail_seen_ = 0;    // the tail as last loaded: never ahead of the real one
#ifdef ALLOCLAB_RING_ASAN
  std::uint64_t poisoned_to_ = 0;  // every reclaimed byte before it is poisoned
#endif

  // The consumer's line. Were it the producer's, every reclaim would take the line away
  // from the producer and every allocate would take it back: false sharing.
  alignas(kCacheLine) std::atomic<std::uint64_t> tail_{0};
};

}  // namespace alloclab
