// AllocLab exercise 05: the aligned allocator and a pmr arena resource.
//
// Read chapters/05-aligned-allocator.md first. Fill in the bodies below, stage by stage, and
// judge your work with `python3 judge/judge.py test 5` (`python3 judge/judge.py hint 5` when
// stuck). Keep every declaration as it is: the tests call exactly these names and signatures,
// and the standard containers rely on them. You may add private members and helpers.
//
// As given, both classes work but do not do their job: AlignedAllocator hands out what
// std::allocator hands out (16-byte aligned), and ArenaResource passes every request to its
// upstream resource. The containers in the tests therefore run from the start, and the tests
// tell you what is still missing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
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
/// max(Align, alignof(T)): a cache line by default.
template <class T, std::size_t Align = 64>
class AlignedAllocator {
  static_assert(Align != 0 && (Align & (Align - 1)) == 0, "AlignedAllocator: Align must be a power of two");

 public:
  using value_type = T;
  using is_always_equal = std::true_type;
  // As given, rebind names an allocator for U = T only, which is all std::vector asks for (it
  // rebinds its allocator to its own element type), so that stage 1 compiles.
  // Stage 2: a list, a map or allocate_shared allocates nodes and control blocks, not T, and
  // asks for rebind<Node>::other. Declare rebind for every U (drop the requires clause): its
  // `other` is the AlignedAllocator of U, with the Align that keeps every node on the same
  // boundary as the elements.
  template <class U>
    requires std::is_same_v<U, T>
  struct rebind {
    using other = AlignedAllocator;
  };

  AlignedAllocator() noexcept = default;

  // Stage 2: the converting constructor, noexcept, which a container calls to build the
  // allocator of its nodes from yours:
  //   template <class U> AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept
  // The allocator holds no state, so there is nothing to copy.

  /// Stage 1: room for `n` objects of type T, none constructed, at an address that is a
  /// multiple of Align: ask the global operator new for n * sizeof(T) bytes with the aligned
  /// form (C++17), exactly once.
  /// Stage 2: the alignment is the larger of Align and alignof(T) (a type declared
  /// alignas(128) needs 128 even when Align is 64). When n * sizeof(T) does not fit in a
  /// std::size_t, throw std::bad_array_new_length before asking the heap for anything.
  [[nodiscard]] T* allocate(std::size_t n) { return std::allocator<T>{}.allocate(n); }

  /// Stage 1: give back what allocate(n) returned, through the operator delete that matches
  /// it: the sized, aligned form, with the same byte count and the same alignment.
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }

  /// Stage 2: whether memory from one allocator can be freed by the other.
  template <class U>
  [[nodiscard]] bool operator==(const AlignedAllocator<U, Align>&) const noexcept {
    return false;
  }
};

/// A vector whose buffer starts on a multiple of Align.
template <class T, std::size_t Align = 64>
using aligned_vector = std::vector<T, AlignedAllocator<T, Align>>;

/// A std::pmr::memory_resource that bumps through a buffer the caller owns and spills to an
/// upstream resource when the buffer is full.
class ArenaResource : public std::pmr::memory_resource {
 public:
  /// Stage 3: remember the buffer, its size and the upstream. Throw std::invalid_argument for
  /// a null upstream, or a null buffer of nonzero size (a null buffer of size 0 is valid:
  /// every request then goes upstream).
  ArenaResource([[maybe_unused]] void* buffer, [[maybe_unused]] std::size_t size,
                std::pmr::memory_resource* upstream = std::pmr::get_default_resource())
      : upstream_(upstream) {}

  ArenaResource(const ArenaResource&) = delete;
  ArenaResource& operator=(const ArenaResource&) = delete;

  /// Stage 4: calls release().
  ~ArenaResource() override {}

  /// Stage 3: bytes taken from the buffer, padding included (the cursor's offset).
  [[nodiscard]] std::size_t used() const noexcept { return 0; }

  /// Stage 4: bytes currently held from upstream.
  [[nodiscard]] std::size_t upstream_bytes() const noexcept { return 0; }

  /// Stage 4: give every upstream block back, with the size and alignment it was taken with,
  /// and rewind the buffer to its start.
  void release() noexcept {}

 private:
  /// Stage 3: bump through the buffer: align the ADDRESS of the cursor (the buffer may start
  /// anywhere) and move the cursor past the block. An alignment that is not a power of two
  /// throws std::invalid_argument. No heap allocation here.
  /// Stage 4: a request that does not fit in what is left goes to the upstream resource and
  /// leaves the buffer's cursor where it was. Remember the block (pointer, bytes, alignment)
  /// so that release() can give it back; if remembering it throws, give it back first.
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return upstream_->allocate(bytes, alignment);
  }

  /// Stage 3: do nothing: an arena frees everything at once, in release().
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
  }

  /// Stage 3: an arena is equal only to itself.
  bool do_is_equal([[maybe_unused]] const std::pmr::memory_resource& other) const noexcept override {
    return false;
  }

  std::pmr::memory_resource* upstream_;
};

}  // namespace alloclab
