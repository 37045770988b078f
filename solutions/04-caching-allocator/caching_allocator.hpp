// AllocLab exercise 04, reference solution: a caching allocator with PyTorch's policy.
#pragma once

#include <algorithm>
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

/// One block of a segment: where it starts (from the segment's base), how long it is, whether
/// it is handed out, and whether it is pending: freed, but used on another stream, and waiting
/// for that stream's events before it may be reused (then `allocated` is false).
struct BlockInfo {
  std::size_t offset, size;
  bool allocated;
  bool pending = false;
};

/// One segment, as `snapshot()` sees it: its blocks tile it in address order.
struct SegmentInfo {
  std::uintptr_t base;
  std::size_t size;
  bool small_pool;
  std::vector<BlockInfo> blocks;
};

/// Thrown when the device refuses a segment even after the cache was emptied. Its message
/// gives the request and the two figures that explain the failure, in decimal bytes and in
/// that order, as they are when it is thrown (after the retry's empty_cache, as PyTorch reads
/// its own after its retries): "out of memory: tried to allocate 4194304 bytes; 50331648 bytes
/// allocated, 73400320 bytes reserved". Reserved far above allocated means the memory is there,
/// cut into free blocks that are too small or held in segments that still hold an allocated
/// block.
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
  [[nodiscard]] std::size_t requested() const noexcept { return requested_; }
  [[nodiscard]] std::size_t allocated() const noexcept { return allocated_; }
  [[nodiscard]] std::size_t reserved() const noexcept { return reserved_; }

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
/// - Streams. A segment belongs to the stream of the request it was made for, and its blocks
///   serve only requests of that stream: work on one stream runs in order, so a block freed
///   on it may go to the stream's next request at once. A block also used on other streams
///   (`record_stream`) is not free at `deallocate`: one event is recorded on each of those
///   streams, and the block stays pending (in no pool, never merged, still reserved, no longer
///   allocated) until all its events have completed. Every `allocate` of at least one byte
///   first frees the pending blocks whose events are all done; `empty_cache`, and with it the
///   retry after a refusal, first waits for every event (`synchronize`) and frees them all.
///
/// The device: `void* malloc(std::size_t)` (nullptr when full), `void free(void*)`,
/// `int record_event(int stream)`, `bool event_done(int event)` and `void synchronize()`;
/// none of them throws.
///
/// Every throwing member changes nothing when it throws, the heap included (every heap block
/// a failing call took is given back): the fallible steps (the containers' own allocations,
/// the device call) run first, and only steps that cannot fail follow. Two kinds of
/// housekeeping stay done when the call then fails: the ready pending blocks `allocate` frees
/// before the request, and what the retry's `empty_cache` did.
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
  /// the allocator. With nothing pending it does not synchronize, as `empty_cache` does not.
  /// Pending blocks, though, may still be read by another stream, so it waits, once, for every
  /// event first, as `empty_cache` does.
  ~CachingAllocator() {
    if (!pending_.empty()) device_.synchronize();
    for (auto& [base, segment] : segments_) {
      device_.free(reinterpret_cast<void*>(base));
      delete_chain(segment.head);
    }
  }

  /// `n` rounded up to a multiple of 512, and at least 512. Sizes above the largest
  /// multiple of 512 have no rounding; `allocate` refuses them before it rounds.
  [[nodiscard]] static std::size_t round_size(std::size_t n) noexcept {
    const std::size_t rounded = (n + kMinBlockSize - 1) & ~(kMinBlockSize - 1);
    return rounded < kMinBlockSize ? kMinBlockSize : rounded;
  }

  /// A block of at least `n` bytes for work on `stream`, aligned as the device aligns its
  /// segments to 512 bytes. `n == 0` returns nullptr and changes nothing (it does not even
  /// free the pending blocks that are ready). Throws `OutOfMemoryError` when the device
  /// cannot supply it, or at once when rounding the request would overflow. The ready pending
  /// blocks it frees first stay freed whatever happens to the request.
  [[nodiscard]] void* allocate(std::size_t n, int stream = 0) {
    if (n == 0) return nullptr;
    // Frees the pending blocks whose streams have passed their free; one test when none is.
    if (!pending_.empty()) [[unlikely]]
      free_ready_pending();
    if (n > kMaxRequest) [[unlikely]]
      throw_out_of_memory(n);
    const std::size_t size = round_size(n);
    FreeSet& pool = pool_for(size);
    // Best fit within the stream: keys order by stream, then size, then address, so the first
    // key not below (stream, size, 0) is the smallest block of the stream that fits, the
    // lowest of its size, unless the stream has none and the key is another stream's.
    auto fit = pool.lower_bound(FreeKey{stream, size, 0, nullptr});
    if (fit != pool.end() && fit->stream == stream) [[likely]] {
      void* p = hand_out(pool, fit, size);
      ++stats_.cache_hits;
      return p;
    }
    return allocate_from_new_segment(n, size, stream);
  }

  /// Gives back a block `allocate` returned; nullptr is a no-op. Anything else (a pointer
  /// from elsewhere, an interior pointer, a block already freed) throws
  /// `std::invalid_argument` and changes nothing.
  ///
  /// A block used on other streams (`record_stream`) is not freed yet: one event is recorded
  /// on each of those streams, and the block becomes pending until they have all completed.
  void deallocate(void* p) {
    if (p == nullptr) return;
    auto found = allocated_.find(p);
    if (found == allocated_.end()) [[unlikely]]
      not_handed_out("deallocate", p);
    Block* b = found->second;
    if (!b->uses.empty()) [[unlikely]] {
      make_pending(found);
      return;
    }
    const std::size_t size = b->size;
    merge_into_pool(b);  // the only step that may throw, and it throws before changing anything
    allocated_.erase(found);
    stats_.allocated_bytes -= size;
  }

  /// Declares that the live block `p` is also used by work queued on `stream`: when it is
  /// freed, it waits for that work before it can be reused. Recording the block's own stream
  /// changes nothing (its work runs in order), and recording a stream twice is recording it
  /// once. Anything but a block handed out and not freed (nullptr, a pointer from elsewhere,
  /// an interior pointer, a freed or pending block) throws `std::invalid_argument` and
  /// changes nothing; so does a heap that refuses room in the block's list of streams.
  void record_stream(void* p, int stream) {
    auto found = allocated_.find(p);
    if (found == allocated_.end()) [[unlikely]]
      not_handed_out("record_stream", p);
    Block* b = found->second;
    if (stream == b->stream) return;
    if (std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end()) b->uses.push_back(stream);
  }

  /// The bytes of the pending blocks: freed, still reserved, waiting for their events.
  [[nodiscard]] std::size_t pending_bytes() const noexcept { return pending_bytes_; }

  /// Returns to the device every segment that holds no allocated block. Pending blocks are
  /// freed first, after waiting for every event: the memory is about to leave the cache, and
  /// a stream may still be reading it. When the heap refuses a merge's key meanwhile, the
  /// `std::bad_alloc` leaves at once: the blocks freed stay free, the others stay pending, and
  /// no segment is returned. With nothing pending there is nothing to wait for, and
  /// the device is not synchronized. A segment whose blocks are all free has been merged back
  /// into one block, so it is found as a free block with no neighbours.
  void empty_cache() {
    if (!pending_.empty()) {
      device_.synchronize();
      free_ready_pending();  // every event is done now
    }
    return_free_segments();
  }

  [[nodiscard]] CacheStats stats() const noexcept { return stats_; }

  /// Every segment, by base address, with its blocks in address order.
  [[nodiscard]] std::vector<SegmentInfo> snapshot() const {
    std::vector<SegmentInfo> out;
    out.reserve(segments_.size());
    for (const auto& [base, segment] : segments_) {
      SegmentInfo info{base, segment.size, segment.small, {}};
      for (const Block* b = segment.head; b; b = b->next)
        info.blocks.push_back({b->addr - base, b->size, b->allocated && !b->pending, b->pending});
      out.push_back(std::move(info));
    }
    return out;
  }

 private:
  // A block of a segment. The blocks of one segment form a doubly linked list in address
  // order, so that a freed block finds its neighbours in O(1), and never those of another
  // segment: the device may place two segments side by side, but they stay two allocations.
  // `allocated` means "not free": handed out, or pending. So a pending block is, like an
  // allocated one, in no pool and never merged, and the paths that merge and empty the cache
  // need no extra test for it.
  struct Block {
    std::uintptr_t addr;
    std::size_t size;
    bool allocated;
    bool small;
    bool pending;          // freed, waiting for its events
    int stream;            // the stream of its segment
    Block* prev;
    Block* next;
    std::vector<int> uses;  // while handed out: the other streams it is used on; while
                            // pending: one event per such stream
  };

  // A free block's key in its pool: the size and address are copied into the key, so that a
  // block can change while its old key is still in the set, and a new key can be inserted
  // (the step that may throw) before anything changes.
  // The stream comes first, as in PyTorch: each stream's free blocks form one run of the set,
  // ordered by size and address, and a lookup never leaves its stream's run unnoticed.
  struct FreeKey {
    int stream;
    std::size_t size;
    std::uintptr_t addr;
    Block* block;
    bool operator<(const FreeKey& o) const noexcept {
      if (stream != o.stream) return stream < o.stream;
      return size != o.size ? size < o.size : addr < o.addr;
    }
  };
  using FreeSet = std::set<FreeKey>;

  struct Segment {
    std::size_t size;
    bool small;
    Block* head;
  };

  // The largest n whose rounding to 512, then to the 2 MiB of a large segment, is representable.
  // `allocate` checks both roundings with it before the device is asked: a larger request
  // throws at once, with no device call, no empty_cache and no retry counted.
  static constexpr std::size_t kMaxRequest = (SIZE_MAX & ~(kRoundLarge - 1));

  static FreeKey key_of(const Block* b) noexcept {
    return FreeKey{b->stream, b->size, b->addr, const_cast<Block*>(b)};
  }
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
      rest.reset(new Block{b->addr + size, remaining, false, b->small, false, b->stream, b, b->next, {}});
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
  [[gnu::noinline]] void* allocate_from_new_segment(std::size_t n, std::size_t size, int stream) {
    const std::size_t bytes = segment_size(size);
    const bool small = size <= kSmallSize;
    // The segment's first Block is made before the device call, so that a heap failure here
    // costs nothing; what is allocated after the call gives the memory back if it throws.
    auto head = std::make_unique<Block>(Block{0, bytes, false, small, false, stream, nullptr, nullptr, {}});
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

  // Puts the block `b`, no longer in use, back in its pool, merged with its free neighbours,
  // and returns the block that now covers it: `b` itself, or the free block before it, into
  // which `b` was merged (and deleted).
  Block* merge_into_pool(Block* b) {
    Block* prev = b->prev && !b->prev->allocated ? b->prev : nullptr;
    Block* next = b->next && !b->next->allocated ? b->next : nullptr;
    // The merged block keeps the leftmost surviving Block and covers the free neighbours
    // too. Its key goes in first: the insertion may allocate, and if it throws, nothing has
    // changed yet.
    Block* merged = prev ? prev : b;
    const std::size_t merged_size = b->size + (prev ? prev->size : 0) + (next ? next->size : 0);
    FreeSet& pool = pool_of(b);
    pool.insert(FreeKey{b->stream, merged_size, merged->addr, merged});
    if (prev) {
      pool.erase(key_of(prev));
      absorb_next(prev);  // prev takes over b
    }
    if (next) {
      pool.erase(key_of(next));
      absorb_next(merged);  // merged takes over next
    }
    merged->allocated = false;
    return merged;
  }

  // The free of a block used on other streams: it leaves the allocated blocks but enters no
  // pool. Each stream it was used on gets one event, recorded now, so that the event covers
  // all the work queued on that stream before the free; the stream ids in `uses` become the
  // event ids in place. The one step that may throw, making room in `pending_`, comes first.
  [[gnu::noinline]] void make_pending(typename std::unordered_map<void*, Block*>::iterator found) {
    Block* b = found->second;
    pending_.push_back(b);
    allocated_.erase(found);
    stats_.allocated_bytes -= b->size;
    pending_bytes_ += b->size;
    for (int& use : b->uses) use = device_.record_event(use);
    b->pending = true;
  }

  // Frees every pending block whose events have all completed, merging it as `deallocate`
  // does. The kit asks each pending block's events in turn; PyTorch keeps one queue of events
  // per stream and stops at a stream's first incomplete event. A merge that fails on the heap
  // throws before changing anything: that block stays pending, and those freed before it stay
  // free, as the contract has it.
  [[gnu::noinline]] void free_ready_pending() {
    for (std::size_t i = 0; i < pending_.size();) {
      Block* b = pending_[i];
      const bool done = std::all_of(b->uses.begin(), b->uses.end(), [this](int e) { return device_.event_done(e); });
      if (!done) {
        ++i;
        continue;
      }
      const std::size_t size = b->size;
      Block* merged = merge_into_pool(b);  // may throw before changing anything: b stays pending
      merged->pending = false;             // merged is b, or the free block b went into
      merged->uses.clear();
      pending_bytes_ -= size;
      pending_[i] = pending_.back();  // the order of the pending blocks does not matter
      pending_.pop_back();
    }
  }

  // Returns to the device every segment that is one free block. Pending blocks are not in a
  // pool, so a segment that holds one stays.
  void return_free_segments() {
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

  // The figures as they are now: after the retry's empty_cache, when there was one.
  [[noreturn, gnu::noinline, gnu::cold]] void throw_out_of_memory(std::size_t n) const {
    throw OutOfMemoryError(n, stats_.allocated_bytes, stats_.reserved_bytes);
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void not_handed_out(const char* function, void* p) {
    char what[160];
    std::snprintf(what, sizeof what,
                  "CachingAllocator::%s: %p is not a block this allocator handed out, or it was freed already",
                  function, p);
    throw std::invalid_argument(what);
  }

  Device& device_;
  FreeSet small_, large_;                          // the free blocks of each pool
  std::unordered_map<void*, Block*> allocated_;    // the blocks handed out, by address
  std::map<std::uintptr_t, Segment> segments_;     // by base address
  std::vector<Block*> pending_;                    // the pending blocks, in no order
  std::size_t pending_bytes_ = 0;
  CacheStats stats_{};
};

}  // namespace alloclab
