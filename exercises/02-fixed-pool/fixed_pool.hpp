// AllocLab exercise 02: the fixed-size free-list pool.
//
// Fill in the bodies below, stage by stage; keep every declaration as it is. Run the judge
// with `python3 judge/judge.py test 2`; `python3 judge/judge.py hint 2` gives a hint.
// Add whatever private members and helpers you need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <stdexcept>
#include <utility>

namespace alloclab {

/// A pool of equal-sized blocks with an intrusive, last-in-first-out free list.
class FixedPool {
 public:
  /// Stage 1: throw std::invalid_argument when any argument is 0. Stage 2: compute the
  /// stride, the requested size raised to at least sizeof(void*) and rounded up to a
  /// multiple of alignof(std::max_align_t). A stride, or a chunk's size in bytes
  /// (blocks_per_chunk strides), that does not fit in a std::size_t throws std::bad_alloc.
  /// Allocate the first chunk: afterwards chunk_count() == 1 and
  /// capacity() == free_blocks() == blocks_per_chunk. max_chunks counts chunks: every value
  /// from 1 to SIZE_MAX is a limit the pool keeps.
  explicit FixedPool([[maybe_unused]] std::size_t block_size,
                     [[maybe_unused]] std::size_t blocks_per_chunk = 1024,
                     [[maybe_unused]] std::size_t max_chunks = SIZE_MAX) {}

  FixedPool(const FixedPool&) = delete;
  FixedPool& operator=(const FixedPool&) = delete;

  /// Return every chunk to the heap.
  ~FixedPool() {}

  /// Stage 1: pop the most recently freed block in O(1). Stage 2: when no block is free, add
  /// a chunk of blocks_per_chunk() blocks; when the pool already has max_chunks chunks,
  /// throw std::bad_alloc and change nothing; so must a heap that refuses the new chunk,
  /// or the memory your bookkeeping needs (make room for it before you take the chunk).
  [[nodiscard]] void* allocate() { return nullptr; }

  /// Push p onto the free list in O(1), storing the link inside the block itself: touch p
  /// and the pool, no other free block. A block given back twice is undefined behaviour, as
  /// it is for free(); nothing checks for it. deallocate(nullptr) does nothing.
  void deallocate([[maybe_unused]] void* p) noexcept {}

  /// Stage 2: true exactly when p is the start of a block of one of this pool's chunks,
  /// whether the block is free or handed out.
  [[nodiscard]] bool owns([[maybe_unused]] const void* p) const noexcept { return false; }

  /// The stride between blocks (see the constructor).
  [[nodiscard]] std::size_t block_size() const noexcept { return 0; }
  [[nodiscard]] std::size_t blocks_per_chunk() const noexcept { return 0; }
  [[nodiscard]] std::size_t chunk_count() const noexcept { return 0; }
  /// How many blocks allocate() can hand out before the pool must grow.
  [[nodiscard]] std::size_t free_blocks() const noexcept { return 0; }
  /// Blocks in all chunks, free or not.
  [[nodiscard]] std::size_t capacity() const noexcept { return 0; }
};

/// Stage 3: typed objects in pooled blocks.
template <class T>
class ObjectPool {
 public:
  /// Keep a FixedPool whose blocks can hold a T, objects_per_chunk of them to a chunk:
  /// create adds a chunk only when no block is free.
  explicit ObjectPool([[maybe_unused]] std::size_t objects_per_chunk = 1024) {}

  /// Construct a T from args (forwarded exactly as given) in a block from the pool, with
  /// parentheses as std::construct_at does: create(3, 7) makes a std::vector<int> of three 7s,
  /// not the {3, 7} of braces; with no argument that is T(), value-initialised (zeros for a
  /// type without a constructor of its own). If T's constructor throws, give the block back
  /// and let the exception propagate.
  template <class... Args>
  [[nodiscard]] T* create([[maybe_unused]] Args&&... args) {
    return nullptr;
  }

  /// Run ~T(), then give the block back. destroy(nullptr) does nothing.
  void destroy([[maybe_unused]] T* p) noexcept {}

  /// Objects created and not yet destroyed.
  [[nodiscard]] std::size_t live() const noexcept { return 0; }
};

/// Stage 4: FixedPool's constructor and member functions, safe to call from many threads
/// at once. No block may be handed to two threads, no access may race, and max_chunks must
/// hold under contention.
class SharedFixedPool {
 public:
  /// The same arguments, defaults (blocks_per_chunk = 1024, max_chunks = SIZE_MAX) and
  /// exceptions as FixedPool's constructor.
  explicit SharedFixedPool([[maybe_unused]] std::size_t block_size,
                           [[maybe_unused]] std::size_t blocks_per_chunk = 1024,
                           [[maybe_unused]] std::size_t max_chunks = SIZE_MAX) {}

  SharedFixedPool(const SharedFixedPool&) = delete;
  SharedFixedPool& operator=(const SharedFixedPool&) = delete;
  ~SharedFixedPool() {}

  [[nodiscard]] void* allocate() { return nullptr; }
  void deallocate([[maybe_unused]] void* p) noexcept {}
  [[nodiscard]] bool owns([[maybe_unused]] const void* p) const noexcept { return false; }
  [[nodiscard]] std::size_t block_size() const noexcept { return 0; }
  [[nodiscard]] std::size_t blocks_per_chunk() const noexcept { return 0; }
  [[nodiscard]] std::size_t chunk_count() const noexcept { return 0; }
  [[nodiscard]] std::size_t free_blocks() const noexcept { return 0; }
  [[nodiscard]] std::size_t capacity() const noexcept { return 0; }
};

}  // namespace alloclab
