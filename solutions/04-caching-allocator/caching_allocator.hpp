// AllocLab exercise 04, reference solution: a caching allocator with PyTorch's policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace alloclab {

/// What the allocator holds and has done, all in bytes or calls.
struct CacheStats {
  std::size_t allocated_bytes, reserved_bytes, peak_allocated_bytes, peak_reserved_bytes;
  std::size_t device_mallocs, device_frees, cache_hits, oom_retries;
};

/// One block of a segment: where it starts (from the segment's base), how long it is, and
/// whether it is handed out.
struct BlockInfo {
  std::size_t offset, size;
  bool allocated;
};

/// One segment, as `snapshot()` sees it: its blocks tile it in address order.
struct SegmentInfo {
  std::uintptr_t base;
  std::size_t size;
  bool small_pool;
  std::vector<BlockInfo> blocks;
};

/// Thrown when the device refuses a segment even after the cache was emptied. Its message
/// gives the request and the two figures that explain the failure, in decimal bytes:
/// "out of memory: tried to allocate 4194304 bytes; 50331648 bytes allocated, 73400320 bytes
/// reserved". Reserved far above allocated means the memory is there, cut into free blocks
/// that are too small or held in segments that still hold an allocated block.
class OutOfMemoryError : public std::bad_alloc {
 public:
  OutOfMemoryError(std::size_t requested, std::size_t allocated, std::size_t reserved) noexcept
      : requested_(requested), allocated_(allocated), reserved_(reserved) {
    // A fixed buffer, not a std::string: copying an exception must not throw, and building
    // the message must not need the memory that just ran out.
    std::snprintf(message_, sizeof message_,
                  "out of memory: tried to allocate %zu bytes; %zu bytes allocated, %zu bytes reserved", requested,
                  allocated, reserved);
  }
  const char* what() const noexcept override { return message_; }
  std::size_t requested() const noexcept { return requested_; }
  std::size_t allocated() const noexcept { return allocated_; }
  std::size_t reserved() const noexcept { return reserved_; }

 private:
  std::size_t requested_, allocated_, reserved_;
  char message_[160];
};

/// A caching allocator over a slow device allocator, with the policy of PyTorch's CUDA
/// caching allocator.
///
/// Policy:
/// - A request of `n` bytes is rounded up to a multiple of 512 (`round_size`). Rounded sizes
///   up to 1 MiB are served by the small pool, larger ones by the large pool; each pool owns
///   its own segments, and a block never moves between pools.
/// - Reuse is best fit: the smallest free block of the pool that is large enough, the lowest
///   address among equals. A request served that way costs no device call (a cache hit).
/// - With no fit, one new segment comes from the device: 2 MiB for the small pool, 20 MiB for
///   a large request under 10 MiB, otherwise the rounded size rounded up to 2 MiB.
/// - The chosen block is split when what is left is worth keeping: at least 512 bytes in the
///   small pool, more than 1 MiB in the large one. Otherwise the caller gets the whole block,
///   and the whole block counts as allocated.
/// - A freed block merges with its free neighbours in its segment and goes back to its pool.
///   Nothing goes back to the device until `empty_cache()`, the destructor, or a device
///   refusal, after which the cache is emptied and the device asked once more.
///
/// Every throwing member changes nothing when it throws: the fallible steps (the containers'
/// own allocations, the device call) run first, and only steps that cannot fail follow.
/// Not thread-safe (callers serialise); PyTorch: one allocator per device, a recursive_mutex, the stream in each key.
template <class Device>
class CachingAllocator {
 public:
  static constexpr std::size_t kMinBlockSize = 512;              // every size is a multiple of this
  static constexpr std::size_t kSmallSize = 1 << 20;             // the small pool's largest block
  static constexpr std::size_t kSmallBuffer = 2 << 20;           // a small pool segment
  static constexpr std::size_t kLargeBuffer = 20 << 20;          // a segment for a large request under...
  static constexpr std::size_t kMinLargeAlloc = 10 << 20;        // ...this size
  static constexpr std::size_t kRoundLarge = 2 << 20;            // larger segments are multiples of this

  explicit CachingAllocator(Device& device) : device_(device) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Returns every segment to the device, allocated blocks or not: their memory goes with
  /// the allocator.
  ~CachingAllocator() {
    for (auto& [base, segment] : segments_) {
      device_.free(reinterpret_cast<void*>(base));
      delete_chain(segment.head);
    }
  }

  /// `n` rounded up to a multiple of 512, and at least 512. Sizes above the largest
  /// multiple of 512 have no rounding; `allocate` refuses them before it rounds.
  static std::size_t round_size(std::size_t n) noexcept {
    const std::size_t rounded = (n + kMinBlockSize - 1) & ~(kMinBlockSize - 1);
    return rounded < kMinBlockSize ? kMinBlockSize : rounded;
  }

  /// A block of at least `n` bytes, aligned as the device aligns its segments to 512 bytes.
  /// `n == 0` returns nullptr. Throws `OutOfMemoryError` when the device cannot supply it.
  [[nodiscard]] void* allocate(std::size_t n) {
    if (n == 0) return nullptr;
    if (n > kMaxRequest) [[unlikely]]
      throw_out_of_memory(n);
    const std::size_t size = round_size(n);
    FreeSet& pool = pool_for(size);
    // Best fit: keys order by size, then address, so the first key not below (size, 0) is
    // the smallest block that fits, the lowest of its size.
    auto fit = pool.lower_bound(FreeKey{size, 0, nullptr});
    if (fit != pool.end()) [[likely]] {
      void* p = hand_out(pool, fit, size);
      ++stats_.cache_hits;
      return p;
    }
    return allocate_from_new_segment(n, size);
  }

  /// Gives back a block `allocate` returned; nullptr is a no-op. Anything else (a pointer
  /// from elsewhere, an interior pointer, a block already freed) throws
  /// `std::invalid_argument` and changes nothing.
  void deallocate(void* p) {
    if (p == nullptr) return;
    auto found = allocated_.find(p);
    if (found == allocated_.end()) [[unlikely]]
      not_handed_out(p);
    Block* b = found->second;
    Block* prev = b->prev && !b->prev->allocated ? b->prev : nullptr;
    Block* next = b->next && !b->next->allocated ? b->next : nullptr;
    // The merged block keeps the leftmost surviving Block and covers the free neighbours
    // too. Its key goes in first: the insertion may allocate, and if it throws, nothing has
    // changed yet.
    Block* merged = prev ? prev : b;
    const std::size_t merged_size = b->size + (prev ? prev->size : 0) + (next ? next->size : 0);
    FreeSet& pool = pool_of(b);
    pool.insert(FreeKey{merged_size, merged->addr, merged});
    allocated_.erase(found);
    stats_.allocated_bytes -= b->size;
    if (prev) {
      pool.erase(key_of(prev));
      absorb_next(prev);  // prev takes over b
    }
    if (next) {
      pool.erase(key_of(next));
      absorb_next(merged);  // merged takes over next
    }
    merged->allocated = false;
  }

  /// Returns to the device every segment that holds no allocated block. A segment whose
  /// blocks are all free has been merged back into one block, so it is found as a free block
  /// with no neighbours.
  void empty_cache() {
    for (FreeSet* pool : {&small_, &large_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = it->block;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        it = pool->erase(it);
        auto segment = segments_.find(b->addr);
        device_.free(reinterpret_cast<void*>(b->addr));
        ++stats_.device_frees;
        stats_.reserved_bytes -= segment->second.size;
        segments_.erase(segment);
        delete b;
      }
    }
  }

  [[nodiscard]] CacheStats stats() const noexcept { return stats_; }

  /// Every segment, by base address, with its blocks in address order.
  [[nodiscard]] std::vector<SegmentInfo> snapshot() const {
    std::vector<SegmentInfo> out;
    out.reserve(segments_.size());
    for (const auto& [base, segment] : segments_) {
      SegmentInfo info{base, segment.size, segment.small, {}};
      for (const Block* b = segment.head; b; b = b->next) info.blocks.push_back({b->addr - base, b->size, b->allocated});
      out.push_back(std::move(info));
    }
    return out;
  }

 private:
  // A block of a segment. The blocks of one segment form a doubly linked list in address
  // order, so that a freed block finds its neighbours in O(1), and never those of another
  // segment: the device may place two segments side by side, but they stay two allocations.
  struct Block {
    std::uintptr_t addr;
    std::size_t size;
    bool allocated;
    bool small;
    Block* prev;
    Block* next;
  };

  // A free block's key in its pool: the size and address are copied into the key, so that a
  // block can change while its old key is still in the set, and a new key can be inserted
  // (the step that may throw) before anything changes.
  struct FreeKey {
    std::size_t size;
    std::uintptr_t addr;
    Block* block;
    bool operator<(const FreeKey& o) const noexcept { return size != o.size ? size < o.size : addr < o.addr; }
  };
  using FreeSet = std::set<FreeKey>;

  struct Segment {
    std::size_t size;
    bool small;
    Block* head;
  };

  // The largest n whose rounding to 512, then to the 2 MiB of a large segment, is representable.
  static constexpr std::size_t kMaxRequest = (SIZE_MAX & ~(kRoundLarge - 1));

  static FreeKey key_of(const Block* b) noexcept { return FreeKey{b->size, b->addr, const_cast<Block*>(b)}; }
  FreeSet& pool_for(std::size_t size) noexcept { return size <= kSmallSize ? small_ : large_; }
  FreeSet& pool_of(const Block* b) noexcept { return b->small ? small_ : large_; }

  static bool worth_splitting(bool small, std::size_t remaining) noexcept {
    // A small remainder is useful to the small pool from 512 bytes on. A large block keeps
    // only a remainder above 1 MiB, so that a large segment is never cut into pieces the
    // size of small requests, which would never be asked of it.
    return small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  }

  static std::size_t segment_size(std::size_t size) noexcept {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return (size + kRoundLarge - 1) & ~(kRoundLarge - 1);
  }

  // Takes the free block at `fit` for a request of `size`, splitting it if the remainder is
  // worth keeping. Strong guarantee: the remainder's Block and key and the allocated entry
  // are made first; if any of them throws, the pool is as it was.
  void* hand_out(FreeSet& pool, typename FreeSet::iterator fit, std::size_t size) {
    Block* b = fit->block;
    const std::size_t remaining = b->size - size;
    std::unique_ptr<Block> rest;
    typename FreeSet::iterator rest_key = pool.end();
    if (worth_splitting(b->small, remaining)) {
      rest.reset(new Block{b->addr + size, remaining, false, b->small, b, b->next});
      rest_key = pool.insert(key_of(rest.get())).first;
    }
    try {
      allocated_.emplace(reinterpret_cast<void*>(b->addr), b);
    } catch (...) {
      if (rest) pool.erase(rest_key);
      throw;
    }
    pool.erase(fit);
    if (rest) {
      b->size = size;
      if (b->next) b->next->prev = rest.get();
      b->next = rest.release();
    }
    b->allocated = true;
    stats_.allocated_bytes += b->size;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
    return reinterpret_cast<void*>(b->addr);
  }

  // The cold path: no free block fits, so one new segment comes from the device; if the
  // device refuses, the cache is emptied and the device asked once more.
  [[gnu::noinline]] void* allocate_from_new_segment(std::size_t n, std::size_t size) {
    const std::size_t bytes = segment_size(size);
    const bool small = size <= kSmallSize;
    // Everything that may throw before the device call: the segment's first Block and its
    // entry in the segment map are ready before the memory exists.
    auto head = std::make_unique<Block>(Block{0, bytes, false, small, nullptr, nullptr});
    void* memory = device_.malloc(bytes);
    if (memory == nullptr) {
      empty_cache();
      ++stats_.oom_retries;
      memory = device_.malloc(bytes);
      if (memory == nullptr) throw_out_of_memory(n);
    }
    head->addr = reinterpret_cast<std::uintptr_t>(memory);
    FreeSet& pool = small ? small_ : large_;
    try {
      segments_.emplace(head->addr, Segment{bytes, small, head.get()});
      try {
        auto fit = pool.insert(key_of(head.get())).first;
        void* p = hand_out(pool, fit, size);
        head.release();
        ++stats_.device_mallocs;
        stats_.reserved_bytes += bytes;
        if (stats_.reserved_bytes > stats_.peak_reserved_bytes) stats_.peak_reserved_bytes = stats_.reserved_bytes;
        return p;
      } catch (...) {
        pool.erase(key_of(head.get()));
        segments_.erase(head->addr);
        throw;
      }
    } catch (...) {
      device_.free(memory);  // never counted: as far as the stats go, it never happened
      throw;
    }
  }

  // `b` takes over the block after it, which is free and in no pool any more.
  static void absorb_next(Block* b) noexcept {
    Block* gone = b->next;
    b->size += gone->size;
    b->next = gone->next;
    if (b->next) b->next->prev = b;
    delete gone;
  }

  static void delete_chain(Block* b) noexcept {
    while (b) delete std::exchange(b, b->next);
  }

  [[noreturn, gnu::noinline, gnu::cold]] void throw_out_of_memory(std::size_t n) const {
    throw OutOfMemoryError(n, stats_.allocated_bytes, stats_.reserved_bytes);
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void not_handed_out(void* p) {
    char what[128];
    std::snprintf(what, sizeof what,
                  "CachingAllocator::deallocate: %p is not a block this allocator handed out, or it was freed already",
                  p);
    throw std::invalid_argument(what);
  }

  Device& device_;
  FreeSet small_, large_;                          // the free blocks of each pool
  std::unordered_map<void*, Block*> allocated_;    // the blocks handed out, by address
  std::map<std::uintptr_t, Segment> segments_;     // by base address
  CacheStats stats_{};
};

}  // namespace alloclab
