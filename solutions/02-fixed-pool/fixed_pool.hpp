// AllocLab exercise 02, reference solution: the fixed-size free-list pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace alloclab {

/// A pool of equal-sized blocks, for objects that are created and destroyed one by one
/// but always have the same size: request states, tensor descriptors, KV-cache block
/// headers.
///
/// Policy: memory comes from the heap in chunks of `blocks_per_chunk()` blocks. Every free
/// block is a node of an intrusive singly linked list: its first bytes hold the address of
/// the next free block, so the list costs no memory beyond the blocks themselves. The list
/// is a stack (LIFO): `deallocate` pushes, `allocate` pops, both O(1), and the block freed
/// last, whose bytes are most likely still in the cache, is the next one handed out. When
/// the list is empty a new chunk is added, up to `max_chunks`; chunks are returned to the
/// heap only by the destructor.
///
/// Because every block has the same size, any free block fits any request: a pool never
/// suffers external fragmentation.
class FixedPool {
 public:
  /// Builds the pool and its first chunk. Throws `std::invalid_argument` when any argument
  /// is 0, and `std::bad_alloc` when a chunk's size in bytes cannot be represented or the
  /// heap refuses the first chunk. `max_chunks` counts chunks: every value from 1 to
  /// `SIZE_MAX` is a limit the pool keeps.
  explicit FixedPool(std::size_t block_size, std::size_t blocks_per_chunk = 1024,
                     std::size_t max_chunks = SIZE_MAX)
      : stride_(stride_for(block_size)),
        blocks_per_chunk_(checked_nonzero(blocks_per_chunk, "blocks_per_chunk")),
        max_chunks_(checked_nonzero(max_chunks, "max_chunks")) {
    if (blocks_per_chunk_ > SIZE_MAX / stride_) out_of_memory();  // chunk bytes would wrap
    grow();
  }

  FixedPool(const FixedPool&) = delete;
  FixedPool& operator=(const FixedPool&) = delete;

  /// Returns every chunk to the heap, whether its blocks are free or not. No destructor runs:
  /// the pool hands out raw memory.
  ~FixedPool() {
    for (std::byte* chunk : chunks_) ::operator delete(chunk);
  }

  /// A block of `block_size()` bytes aligned to `alignof(std::max_align_t)`. Throws
  /// `std::bad_alloc`, and changes nothing, when the list is empty and the pool already has
  /// `max_chunks` chunks (or the heap refuses a new one).
  [[nodiscard]] void* allocate() {
    if (head_ == nullptr) [[unlikely]] grow();  // leaves the pool unchanged when it throws
    Node* block = head_;
    head_ = block->next;
    --free_;
    return block;
  }

  /// Gives back a block that `allocate` returned. `deallocate(nullptr)` does nothing. O(1): it
  /// touches `p` and the pool, no other free block, so nothing detects a block given back twice
  /// (undefined behaviour, as it is for `free`).
  void deallocate(void* p) noexcept {
    if (p == nullptr) return;
    // The block's own first bytes become the link: the caller is done with them.
    Node* block = ::new (p) Node{head_};
    head_ = block;
    ++free_;
  }

  /// True exactly when `p` is the start of one of this pool's blocks, free or not.
  [[nodiscard]] bool owns(const void* p) const noexcept {
    // Compare addresses as integers: relational operators on pointers into different
    // objects are unspecified.
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    // sorted_ is ordered by address: the only candidate is the last chunk that starts at or
    // before p.
    auto it = std::upper_bound(sorted_.begin(), sorted_.end(), addr);
    if (it == sorted_.begin()) return false;
    const std::uintptr_t offset = addr - *std::prev(it);
    return offset < chunk_bytes() && offset % stride_ == 0;
  }

  /// The stride between blocks: the requested size raised to at least a pointer and rounded
  /// up to a multiple of `alignof(std::max_align_t)`.
  [[nodiscard]] std::size_t block_size() const noexcept { return stride_; }
  [[nodiscard]] std::size_t blocks_per_chunk() const noexcept { return blocks_per_chunk_; }
  [[nodiscard]] std::size_t chunk_count() const noexcept { return chunks_.size(); }
  [[nodiscard]] std::size_t free_blocks() const noexcept { return free_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return chunks_.size() * blocks_per_chunk_; }

 private:
  // A free block seen as a list node. Blocks are at least this big and this aligned.
  struct Node {
    Node* next;
  };

  static constexpr std::size_t kAlign = alignof(std::max_align_t);
  static_assert(sizeof(Node) <= kAlign && kAlign % alignof(Node) == 0);
  // Plain ::operator new already returns memory aligned for any fundamental type.
  static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= kAlign);

  static std::size_t checked_nonzero(std::size_t n, const char* what) {
    if (n == 0) zero_argument(what);
    return n;
  }

  // Every block must hold a Node while it is free, and every block must start on a
  // max_align_t boundary; the stride is the smallest size that satisfies both.
  static std::size_t stride_for(std::size_t block_size) {
    checked_nonzero(block_size, "block_size");
    const std::size_t at_least = std::max(block_size, sizeof(Node));
    if (at_least > SIZE_MAX - (kAlign - 1)) out_of_memory();  // rounding up would wrap
    return (at_least + kAlign - 1) / kAlign * kAlign;
  }

  std::size_t chunk_bytes() const noexcept { return blocks_per_chunk_ * stride_; }

  // Room for one more element, doubling the capacity when it is used up: `reserve(size() + 1)`
  // would reallocate on every growth, which is quadratic in the number of chunks. Either
  // reserve may throw; the pool is unchanged then, since no chunk has been taken yet.
  template <class V>
  static void reserve_one_more(V& v) {
    if (v.size() == v.capacity()) v.reserve(v.empty() ? 4 : 2 * v.size());
  }

  // Adds one chunk and threads all of its blocks onto the (empty) free list, lowest address
  // first. Strong guarantee: on any exception the pool is unchanged.
  [[gnu::noinline]] void grow() {
    if (chunks_.size() >= max_chunks_) out_of_memory();
    // Make room in the bookkeeping first, so that nothing can throw once the chunk exists.
    reserve_one_more(chunks_);
    reserve_one_more(sorted_);
    auto* chunk = static_cast<std::byte*>(::operator new(chunk_bytes()));
    chunks_.push_back(chunk);
    const auto addr = reinterpret_cast<std::uintptr_t>(chunk);
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), addr), addr);

    Node* next = head_;
    for (std::size_t i = blocks_per_chunk_; i-- > 0;) next = ::new (chunk + i * stride_) Node{next};
    head_ = next;
    free_ += blocks_per_chunk_;
  }

  // The throw paths stay out of line (the kit's error policy, docs/authoring.md): the code that
  // builds and throws an exception is kept out of the members that check.
  [[noreturn, gnu::noinline, gnu::cold]] static void zero_argument(const char* what) {
    throw std::invalid_argument(std::string("FixedPool: ") + what + " must be greater than 0");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void out_of_memory() { throw std::bad_alloc(); }

  std::size_t stride_;
  std::size_t blocks_per_chunk_;
  std::size_t max_chunks_;
  Node* head_ = nullptr;                // top of the free list
  std::size_t free_ = 0;                // length of the free list
  std::vector<std::byte*> chunks_;      // in the order they were added
  std::vector<std::uintptr_t> sorted_;  // the same chunks, by address, for owns()
};

/// Typed objects in a FixedPool: `create` constructs a `T` in a pooled block, `destroy`
/// destroys it and gives the block back. The pool's chunks hold `objects_per_chunk` objects,
/// and `create` adds one exactly when no block is free.
///
/// Destroying the pool releases the memory of objects still alive without running their
/// destructors; destroy every object first.
template <class T>
class ObjectPool {
  static_assert(alignof(T) <= alignof(std::max_align_t),
                "ObjectPool: the pool's blocks are aligned to alignof(std::max_align_t) only");

 public:
  explicit ObjectPool(std::size_t objects_per_chunk = 1024) : pool_(sizeof(T), objects_per_chunk) {}

  /// Constructs `T(args...)` from `args`, forwarded as given: with parentheses, as
  /// `std::construct_at` does, so `create(3, 7)` makes a `std::vector<int>` of three 7s where
  /// braces would make {3, 7}; and with no argument `T()`, value-initialised, so a type without
  /// a constructor of its own reads zeros. If the constructor throws, the block goes back to the
  /// pool and the exception propagates.
  template <class... Args>
  [[nodiscard]] T* create(Args&&... args) {
    void* block = pool_.allocate();
    try {
      T* object = ::new (block) T(std::forward<Args>(args)...);
      ++live_;
      return object;
    } catch (...) {
      pool_.deallocate(block);  // no object was built: no destructor to run
      throw;
    }
  }

  /// Runs `~T()` and returns the block. `destroy(nullptr)` does nothing.
  void destroy(T* p) noexcept {
    if (p == nullptr) return;
    p->~T();
    pool_.deallocate(p);
    --live_;
  }

  /// Objects created and not yet destroyed.
  [[nodiscard]] std::size_t live() const noexcept { return live_; }

 private:
  FixedPool pool_;
  std::size_t live_ = 0;
};

/// A FixedPool that many threads may use at once.
///
/// Policy: one mutex guards the whole pool. Every rule of FixedPool holds as it is, because
/// every member runs on the pool alone: the chunk limit is checked and a chunk added inside
/// the same critical section, so no two threads can both see room for one more chunk. The
/// cost is one lock per call and a cache line that moves between cores whenever two
/// threads take turns; the chapter describes designs that avoid it.
class SharedFixedPool {
 public:
  /// The same arguments, defaults and exceptions as FixedPool's constructor.
  explicit SharedFixedPool(std::size_t block_size, std::size_t blocks_per_chunk = 1024,
                           std::size_t max_chunks = SIZE_MAX)
      : pool_(block_size, blocks_per_chunk, max_chunks) {}

  SharedFixedPool(const SharedFixedPool&) = delete;
  SharedFixedPool& operator=(const SharedFixedPool&) = delete;
  ~SharedFixedPool() = default;

  [[nodiscard]] void* allocate() {
    std::lock_guard lock(mutex_);
    return pool_.allocate();
  }

  void deallocate(void* p) noexcept {
    if (p == nullptr) return;  // no need to lock for nothing
    std::lock_guard lock(mutex_);
    pool_.deallocate(p);
  }

  [[nodiscard]] bool owns(const void* p) const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.owns(p);
  }

  // Fixed at construction: no lock needed.
  [[nodiscard]] std::size_t block_size() const noexcept { return pool_.block_size(); }
  [[nodiscard]] std::size_t blocks_per_chunk() const noexcept { return pool_.blocks_per_chunk(); }

  // A snapshot: other threads may change it as soon as the lock is released.
  [[nodiscard]] std::size_t chunk_count() const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.chunk_count();
  }
  [[nodiscard]] std::size_t free_blocks() const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.free_blocks();
  }
  [[nodiscard]] std::size_t capacity() const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.capacity();
  }

 private:
  mutable std::mutex mutex_;
  FixedPool pool_;
};

}  // namespace alloclab
