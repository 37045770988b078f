// AllocLab exercise 04: a caching allocator with PyTorch's policy.
//
// Fill in the bodies below; keep every declaration as it is. Add private members and helper
// functions as you need them. Read chapters/04-caching-allocator.md first, then run
//   python3 judge/judge.py test 4
// and work through the stages in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace alloclab {

/// What the allocator holds and has done, in bytes or calls.
struct CacheStats {
  std::size_t allocated_bytes, reserved_bytes, peak_allocated_bytes, peak_reserved_bytes;
  std::size_t device_mallocs, device_frees, cache_hits, oom_retries;
};

/// One block of a segment: its offset from the segment's base, its size, allocated or free,
/// and (stage 5) pending: freed, but waiting for the events of the other streams that used it
/// (a pending block is not allocated).
struct BlockInfo {
  std::size_t offset, size;
  bool allocated;
  bool pending = false;
};

/// One segment as `snapshot()` reports it.
struct SegmentInfo {
  std::uintptr_t base;
  std::size_t size;
  bool small_pool;
  std::vector<BlockInfo> blocks;
};

/// Stage 4. Thrown when the device refuses a segment even after the cache was emptied.
/// TODO: what() must give the requested bytes (as the caller passed them), the allocated bytes
/// and the reserved bytes, in decimal and in that order, as they are when it is thrown: after
/// the retry's empty_cache, so that reserved no longer counts the segments it returned.
/// Copying an exception must not throw: keep the message in a char array.
class OutOfMemoryError : public std::bad_alloc {
 public:
  OutOfMemoryError([[maybe_unused]] std::size_t requested, [[maybe_unused]] std::size_t allocated,
                   [[maybe_unused]] std::size_t reserved) noexcept {}
  const char* what() const noexcept override { return "out of memory"; }
};

/// A caching allocator over a slow `Device` (`void* malloc(std::size_t)`, nullptr when full;
/// `void free(void*)`; and for stage 5 `int record_event(int stream)`, an event that completes
/// when `stream` has run all the work queued on it so far, `bool event_done(int event)`, which
/// never waits, and `void synchronize()`, which waits for every event; none of them throws).
/// It never gives memory back on `deallocate`: freed blocks stay cached for the next request.
template <class Device>
class CachingAllocator {
 public:
  explicit CachingAllocator(Device& device) : device_(device) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// Stage 1. TODO: give every segment back to the device (device_.free(base)), whether its
  /// blocks are allocated or not.
  /// Stage 5. TODO: when blocks are pending (pending_bytes() > 0, whether or not their events
  /// are done by then), device_.synchronize() once first; when none are, do not synchronize,
  /// as empty_cache.
  ~CachingAllocator() {}

  /// Stage 1. TODO: n rounded up to a multiple of 512, and at least 512.
  [[nodiscard]] static std::size_t round_size([[maybe_unused]] std::size_t n) noexcept { return 0; }

  /// Stage 1. TODO: n == 0 returns nullptr and changes nothing. Round n; a rounded size up to
  /// 1 MiB belongs to the small pool, a larger one to the large pool. With no free block to
  /// use, ask the device for one segment: 2 MiB for the small pool; 20 MiB for a large rounded
  /// size under 10 MiB; otherwise the rounded size rounded up to a multiple of 2 MiB.
  /// Stage 2. TODO: first look in the request's pool for the smallest free block that fits
  /// (the lowest address among equals); serving from it counts one cache hit. Split the block
  /// when the rest is at least 512 bytes (small pool) or more than 1 MiB (large pool);
  /// otherwise hand out the whole block, and count all of it as allocated.
  /// Stage 4. TODO: when the device returns nullptr, empty the cache, count one oom_retry, and
  /// ask once more (oom_retries counts these second calls); if it refuses again, throw
  /// OutOfMemoryError(n, allocated, reserved), the figures as they are after that empty_cache,
  /// and change nothing else. Two roundings are checked before the device is asked: n's up to
  /// a multiple of 512, and its segment's up to a multiple of 2 MiB. When either would overflow
  /// (any n above SIZE_MAX rounded down to a multiple of 2 MiB), throw OutOfMemoryError at once:
  /// no device call, no empty_cache, no oom_retry. Keep the stats up to date. When the heap
  /// refuses memory for your bookkeeping (std::bad_alloc), let it through and change nothing:
  /// a segment the device already gave goes back to it, and every heap block the call took is
  /// given back. A failing call keeps no heap memory, whatever made it fail.
  /// Stage 5. TODO: `allocate(n)` is `allocate(n, 0)`. A new segment belongs to the stream of
  /// the request it is made for, and its blocks serve only requests of that stream (best fit
  /// within the stream). Before anything else, every allocate with n > 0 frees the pending
  /// blocks whose events are all done, merging them as deallocate does; n == 0 frees nothing.
  /// That freeing stays done when the request then fails, on the heap or on the device: the
  /// call's "change nothing" means nothing beyond it. When the heap fails while a ready block is
  /// being freed, that block stays pending, those freed before it stay free, and the call throws.
  [[nodiscard]] void* allocate([[maybe_unused]] std::size_t n, [[maybe_unused]] int stream = 0) { return nullptr; }

  /// Stage 2. TODO: mark the block free and put it back among its pool's free blocks, where
  /// the next request's best fit finds it.
  /// Stage 3. TODO: nullptr is a no-op. Merge the block with its free neighbours in the same
  /// segment (never across segments) and put it back in its pool. A pointer this allocator did
  /// not hand out, an interior pointer, or one already freed throws std::invalid_argument and
  /// changes nothing.
  /// Stage 4. TODO: when the heap refuses memory (std::bad_alloc), throw it and change nothing,
  /// the heap included: every heap block the call took is given back.
  /// Stage 5. TODO: a block recorded on other streams is not freed yet: record one event on
  /// each of those streams (device_.record_event(stream), once per stream however often it was
  /// recorded), and the block becomes pending: no longer allocated (allocated_bytes drops),
  /// still reserved, in no pool, never merged, shown pending in snapshot().
  void deallocate([[maybe_unused]] void* p) {}

  /// Stage 5. TODO: p, a block handed out and not freed, is also used by work on `stream`.
  /// Recording the block's own stream changes nothing. nullptr, a pointer this allocator did
  /// not hand out, an interior pointer, or a freed or pending block throws
  /// std::invalid_argument and changes nothing. When the heap refuses memory, throw that
  /// std::bad_alloc and change nothing.
  void record_stream([[maybe_unused]] void* p, [[maybe_unused]] int stream) {}

  /// Stage 5. TODO: the bytes of the pending blocks (their whole sizes).
  [[nodiscard]] std::size_t pending_bytes() const noexcept { return 0; }

  /// Stage 3. TODO: give back to the device every segment that holds no allocated block.
  /// Stage 5. TODO: when blocks are pending, first device_.synchronize() and free every
  /// pending block (merging it); with nothing pending, do not synchronize. If the heap fails
  /// while a pending block is freed, throw that std::bad_alloc: the blocks freed stay free, the
  /// others stay pending, and no segment is returned.
  void empty_cache() {}

  /// Stage 1 to 4. TODO: allocated_bytes (the allocated blocks' sizes), reserved_bytes (the
  /// segments' sizes), their peaks, the successful device calls, cache hits and oom retries.
  /// Stage 5: allocated_bytes leaves pending blocks out; reserved_bytes includes them.
  [[nodiscard]] CacheStats stats() const noexcept { return {}; }

  /// Stage 1 to 4. TODO: every segment, by base address, each with its blocks in address
  /// order, tiling it exactly.
  [[nodiscard]] std::vector<SegmentInfo> snapshot() const { return {}; }

 private:
  Device& device_;
  // TODO: your state: the segments, the blocks of each, each pool's free blocks, the blocks
  // handed out, and the stats.
};

}  // namespace alloclab
