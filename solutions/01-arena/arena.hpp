// AllocLab exercise 01, reference solution: the arena.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#define ALLOCLAB_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOCLAB_ARENA_ASAN 1
#endif
#endif

#ifdef ALLOCLAB_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace alloclab {

/// A bump allocator over one buffer, for memory whose lifetime ends all at once.
///
/// Policy: an allocation moves a cursor forward past any padding that alignment needs;
/// nothing is freed one by one. `reset()` reclaims everything, `rewind()` everything
/// allocated since a `mark()`. The arena never grows: a request that does not fit throws
/// `std::bad_alloc` and leaves the arena as it was. This is how an inference engine
/// hands out per-step scratch: a decode step allocates its temporaries, and the whole
/// step's memory is reclaimed with one store when the step ends.
///
/// The arena runs no destructors: it suits trivially destructible data (tensors,
/// index arrays, metadata of plain types).
///
/// Under AddressSanitizer the arena poisons every byte that is not handed out, so a read
/// past the end of an allocation, or of memory already reclaimed, is reported.
class Arena {
 public:
  /// The alignment of the buffer itself: one page.
  static constexpr std::size_t kBufferAlignment = 4096;

  /// Reserves `capacity` bytes. Throws `std::invalid_argument` when `capacity` is 0.
  explicit Arena(std::size_t capacity) : capacity_(checked_capacity(capacity)) {
    buffer_ = static_cast<std::byte*>(::operator new(capacity_, std::align_val_t{kBufferAlignment}));
    poison(buffer_, capacity_);
  }

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  ~Arena() {
    // Hand the buffer back to the heap unpoisoned: the heap owns it from here on.
    unpoison(buffer_, capacity_);
    ::operator delete(buffer_, std::align_val_t{kBufferAlignment});
  }

  /// Returns `n` bytes whose address is a multiple of `align`, a power of two.
  /// Throws `std::invalid_argument` for any other `align`, and `std::bad_alloc` when the
  /// padding plus `n` do not fit in what is left; the arena is then unchanged.
  [[nodiscard]] void* allocate(std::size_t n, std::size_t align = alignof(std::max_align_t)) {
    if (align == 0 || (align & (align - 1)) != 0) invalid_alignment();
    // Align the address, not the offset: the buffer is page-aligned, but a caller may
    // ask for more than a page. `-address mod align` cannot overflow, unlike `address + align - 1`.
    const auto here = reinterpret_cast<std::uintptr_t>(buffer_) + used_;
    const std::size_t padding = static_cast<std::size_t>(-here & (align - 1));
    // Compare against what is left, never `used_ + padding + n`, which can wrap around.
    const std::size_t left = capacity_ - used_;
    if (padding > left || n > left - padding) out_of_memory();
    std::byte* p = buffer_ + used_ + padding;
    used_ += padding + n;
    peak_ = std::max(peak_, used_);
    unpoison(p, n);
    return p;
  }

  /// Room for `count` objects of type `T`, aligned for `T`; no constructor runs.
  /// Throws `std::bad_array_new_length` when `count * sizeof(T)` overflows.
  template <class T>
  [[nodiscard]] T* alloc_array(std::size_t count) {
    if (count > SIZE_MAX / sizeof(T)) array_too_long();
    return static_cast<T*>(allocate(count * sizeof(T), alignof(T)));
  }

  /// Reclaims every allocation. The same requests afterwards yield the same addresses.
  void reset() noexcept {
    poison(buffer_, used_);
    used_ = 0;
  }

  /// Bytes from the buffer's start to the end of the last allocation, padding included.
  [[nodiscard]] std::size_t used() const noexcept { return used_; }
  /// The largest `used()` ever seen; neither `reset()` nor `rewind()` lowers it.
  [[nodiscard]] std::size_t peak() const noexcept { return peak_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  /// A position to come back to with `rewind()`.
  struct Marker {
    std::size_t offset;
  };

  [[nodiscard]] Marker mark() const noexcept { return Marker{used_}; }

  /// Reclaims everything allocated since `m` was taken. A marker from beyond the current
  /// position (taken before a `reset()` or an earlier `rewind()` that went further back) is
  /// ignored: `rewind` never moves `used()` forward, since the bytes up to such a marker are
  /// no longer handed out. A marker at or below `used()` is honoured whenever it was taken.
  void rewind(Marker m) noexcept {
    if (m.offset > used_) return;
    poison(buffer_ + m.offset, used_ - m.offset);
    used_ = m.offset;
  }

 private:
  static std::size_t checked_capacity(std::size_t capacity) {
    if (capacity == 0) zero_capacity();
    return capacity;
  }

  // The slow paths stay out of line so that the fast path of allocate() inlines small.
  [[noreturn, gnu::noinline, gnu::cold]] static void zero_capacity() {
    throw std::invalid_argument("Arena: capacity must be greater than 0");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void invalid_alignment() {
    throw std::invalid_argument("Arena::allocate: align must be a power of two");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void out_of_memory() { throw std::bad_alloc(); }
  [[noreturn, gnu::noinline, gnu::cold]] static void array_too_long() { throw std::bad_array_new_length(); }

  static void poison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#ifdef ALLOCLAB_ARENA_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
  }
  static void unpoison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#ifdef ALLOCLAB_ARENA_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
  }

  std::byte* buffer_ = nullptr;
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace alloclab
