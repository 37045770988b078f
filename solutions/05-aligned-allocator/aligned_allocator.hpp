// AllocLab exercise 05, reference solution: the aligned allocator and a pmr arena resource.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

// clang++ before version 19 declares the sized forms of operator delete only with
// -fsized-deallocation; the standard library defines them in any case. Declared here so that
// deallocate can name the one that matches.
#if !defined(__cpp_sized_deallocation)
void operator delete(void* p, std::size_t size, std::align_val_t alignment) noexcept;
#endif

namespace alloclab {

/// An allocator for standard containers whose every block starts on a multiple of
/// `max(Align, alignof(T))`: a cache line by default, so that two threads' data never share
/// one, and vector loads of 32 or 64 bytes never straddle two lines.
///
/// Policy: memory comes from the aligned forms of the global `operator new` (C++17), and goes
/// back through the sized, aligned `operator delete` with the same size and alignment, so
/// the heap never has to look either up. The allocator holds no state: every instance can
/// free what any other allocated (`is_always_equal`), containers move and swap their buffers
/// freely, and a copy costs nothing.
///
/// `Align` is a non-type template parameter, which `std::allocator_traits` cannot rebind on
/// its own (it only knows how to replace the first type argument): `rebind` says explicitly
/// that a node or a control block is allocated with the same alignment as the elements.
template <class T, std::size_t Align = 64>
class AlignedAllocator {
  static_assert(Align != 0 && (Align & (Align - 1)) == 0, "AlignedAllocator: Align must be a power of two");

  // An over-aligned T (alignas(128) with Align = 64) needs more than Align: the stricter wins.
  static constexpr std::size_t kAlignment = std::max(Align, alignof(T));

 public:
  using value_type = T;
  using is_always_equal = std::true_type;
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U, Align>;
  };

  AlignedAllocator() noexcept = default;
  // A container holds an allocator of its nodes, built from the allocator of its elements.
  template <class U>
  AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept {}

  /// Room for `n` objects of type `T` (none constructed) at an address that is a multiple of
  /// `max(Align, alignof(T))`. Throws `std::bad_array_new_length` when `n * sizeof(T)` does
  /// not fit in a `std::size_t`, and `std::bad_alloc` when the heap is out of memory.
  [[nodiscard]] T* allocate(std::size_t n) {
    // Checked before multiplying: a product that wraps around would hand out a tiny block
    // for a huge request, and the container would write past its end.
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) too_long();
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kAlignment}));
  }

  /// Gives back what `allocate(n)` returned, with the same `n`.
  void deallocate(T* p, std::size_t n) noexcept {
    // The sized, aligned form: the alignment must be the one the block was allocated with
    // (the heap may keep over-aligned blocks apart), and the size spares it a lookup.
    ::operator delete(p, n * sizeof(T), std::align_val_t{kAlignment});
  }

  /// Always true: memory from one instance can be freed by any other of the same `Align`.
  template <class U>
  [[nodiscard]] bool operator==(const AlignedAllocator<U, Align>&) const noexcept {
    return true;
  }

 private:
  [[noreturn, gnu::noinline, gnu::cold]] static void too_long() { throw std::bad_array_new_length(); }
};

/// A vector whose buffer starts on a multiple of `Align` (a cache line by default).
template <class T, std::size_t Align = 64>
using aligned_vector = std::vector<T, AlignedAllocator<T, Align>>;

/// A `std::pmr::memory_resource` that bumps through a buffer the caller owns (on the stack,
/// or one reused step after step), and spills to an upstream resource only when the buffer
/// is full: the arena of chapter 1, behind the interface every pmr container accepts.
///
/// Policy: an allocation aligns the address of the cursor, not its offset (the caller's
/// buffer may start anywhere), and moves the cursor past it. A request that does not fit in
/// what is left goes to `upstream` and leaves the buffer as it was, so a later, smaller
/// request may still be served from the buffer. A block from the buffer always starts inside
/// it: a request of 0 bytes whose aligned address is the end of the buffer (or an arena with
/// no buffer) goes upstream too, so that `allocate` never returns the null pointer or an
/// address past the buffer. Nothing is freed one by one:
/// `do_deallocate` does nothing, and `release()` gives every upstream block back, with the
/// size and alignment it was taken with, and rewinds the buffer to its start. The resource
/// is equal only to itself: memory from one arena cannot be freed by another.
///
/// Not thread-safe, like `std::pmr::monotonic_buffer_resource`: one arena per thread or per
/// step.
class ArenaResource : public std::pmr::memory_resource {
 public:
  /// An arena over `size` bytes at `buffer` (the caller keeps it alive and frees it).
  /// `buffer` may be null only when `size` is 0: then every request goes upstream. Throws
  /// `std::invalid_argument` for a null buffer of nonzero size or a null upstream.
  ArenaResource(void* buffer, std::size_t size,
                std::pmr::memory_resource* upstream = std::pmr::get_default_resource())
      : buffer_(static_cast<std::byte*>(buffer)), size_(size), upstream_(upstream) {
    if (buffer == nullptr && size != 0) bad_argument("ArenaResource: null buffer of nonzero size");
    if (upstream == nullptr) bad_argument("ArenaResource: null upstream resource");
  }

  ArenaResource(const ArenaResource&) = delete;
  ArenaResource& operator=(const ArenaResource&) = delete;

  ~ArenaResource() override { release(); }

  /// Bytes taken from the buffer, padding included: the cursor's offset from the start.
  [[nodiscard]] std::size_t used() const noexcept { return used_; }

  /// Bytes currently held from upstream: the sum of the sizes of the blocks taken from it.
  [[nodiscard]] std::size_t upstream_bytes() const noexcept { return upstream_bytes_; }

  /// Gives every upstream block back and rewinds the buffer: every pointer handed out so far
  /// dangles afterwards.
  void release() noexcept {
    // Newest first, as a stack unwinds: some upstreams (an arena of their own) prefer it.
    for (auto it = spilled_.rbegin(); it != spilled_.rend(); ++it)
      upstream_->deallocate(it->p, it->bytes, it->alignment);
    spilled_.clear();
    upstream_bytes_ = 0;
    used_ = 0;
  }

 private:
  /// One block taken from upstream, remembered exactly as it was asked for: a resource may
  /// need the size and the alignment back to find it (a pool keeps sizes apart).
  struct Spilled {
    void* p;
    std::size_t bytes;
    std::size_t alignment;
  };

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) invalid_alignment();
    // Align the address: `-address mod alignment` needs no addition, so it cannot wrap.
    const auto here = reinterpret_cast<std::uintptr_t>(buffer_) + used_;
    const std::size_t padding = static_cast<std::size_t>(-here & (alignment - 1));
    // Compare with what is left, never `used_ + padding + bytes`, which can wrap around. A
    // block from the buffer starts inside it (`padding < left`): the end of the buffer is no
    // storage of the arena's, and with no buffer at all it is the null pointer, which
    // allocate() must never return. So even a 0-byte request there goes upstream.
    const std::size_t left = size_ - used_;
    if (padding >= left || bytes > left - padding) [[unlikely]]
      return spill(bytes, alignment);
    std::byte* p = buffer_ + used_ + padding;
    used_ += padding + bytes;
    return p;
  }

  // Does nothing: the memory comes back all at once, in release().
  void do_deallocate(void*, std::size_t, std::size_t) override {}

  // Only the same arena can free what it handed out: identity, not type.
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  // The slow path: out of line, so that do_allocate's bump stays small. The buffer's cursor
  // is not touched: a later request that fits still gets buffer memory.
  [[gnu::noinline]] void* spill(std::size_t bytes, std::size_t alignment) {
    void* p = upstream_->allocate(bytes, alignment);  // may throw: nothing has changed yet
    try {
      spilled_.push_back(Spilled{p, bytes, alignment});
    } catch (...) {
      // Unrecorded, the block could never be given back: give it back now.
      upstream_->deallocate(p, bytes, alignment);
      throw;
    }
    upstream_bytes_ += bytes;
    return p;
  }

  [[noreturn, gnu::noinline, gnu::cold]] static void bad_argument(const char* what) {
    throw std::invalid_argument(what);
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void invalid_alignment() {
    throw std::invalid_argument("ArenaResource::allocate: alignment must be a power of two");
  }

  std::byte* buffer_;
  std::size_t size_;
  std::size_t used_ = 0;
  std::pmr::memory_resource* upstream_;
  std::size_t upstream_bytes_ = 0;
  std::vector<Spilled> spilled_;  // empty, and so no heap memory, until the buffer overflows
};

}  // namespace alloclab
