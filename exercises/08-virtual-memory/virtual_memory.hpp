// AllocLab exercise 08: virtual memory for the KV cache. Reserve address space once, map
// physical memory into it on demand, and give the memory back without giving up the addresses.
//
// Read chapters/08-virtual-memory.md first. Fill in the bodies below, stage by stage, and judge
// your work with `python3 judge/judge.py test 8` (`python3 judge/judge.py hint 8` when stuck).
// Keep every declaration as it is: the tests call exactly these names and signatures. You may
// add private members and helpers.
//
// The CPU stands in for the GPU's virtual memory API:
//   physical handle (cuMemCreate)   a granule-sized offset of one memfd_create file
//   reserve (cuMemAddressReserve)   mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
//   map (cuMemMap)                  mmap(address, granule, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, offset)
//   unmap (cuMemUnmap)              the same PROT_NONE anonymous mapping, MAP_FIXED, over the slot again
//   release (cuMemRelease)          fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, granule)
// Errors of a system call throw std::system_error(errno, std::system_category(), "<the call>").
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace alloclab {

/// Stage 1. Physical memory: `num_granules` granules of `granule_bytes` each, the offsets of one
/// memfd file. A granule is numbered by its offset divided by its size.
///
/// Policy: `create` hands out the lowest-numbered free granule with one reference; `retain`
/// adds one, `release` drops one, and the last `release` gives the granule back to the system
/// (a hole punched in the file) and makes it free again. Creating commits nothing: the system
/// commits a page of the file at the first access through any mapping of it, a read included,
/// and `committed_bytes` asks the system (fstat's st_blocks), not a count of our own.
class PhysicalMemory {
 public:
  /// Stage 1. TODO: a granule that is not a positive multiple of the page size
  /// (sysconf(_SC_PAGESIZE)), 0 granules, or more bytes than a file offset (off_t) holds throws
  /// std::invalid_argument. Make the file with memfd_create and give it its size with ftruncate;
  /// that size costs no memory until a page is touched.
  PhysicalMemory([[maybe_unused]] std::size_t granule_bytes, [[maybe_unused]] std::size_t num_granules) {}
  /// TODO: close the file: the system frees what was still committed to it.
  ~PhysicalMemory() {}
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;

  /// Stage 1. The lowest-numbered free granule, with one reference; std::nullopt when every
  /// granule is in use.
  [[nodiscard]] std::optional<std::size_t> create() { return std::nullopt; }

  /// Stage 1. One more reference to granule `g` (another mapping of it: a fork's alias).
  /// TODO: a granule that does not exist or is free throws std::invalid_argument.
  void retain([[maybe_unused]] std::size_t g) {}

  /// Stage 1. One reference less; the last gives the granule's memory back to the system.
  /// TODO: a granule that does not exist or is free throws std::invalid_argument. Give the
  /// memory back by punching a hole in the file: madvise(MADV_DONTNEED) on a shared mapping only
  /// drops this process's view of the pages, and the file keeps them committed.
  void release([[maybe_unused]] std::size_t g) {}

  /// Stage 1. The references to `g`, 0 for a free granule.
  /// TODO: a granule that does not exist throws std::invalid_argument.
  [[nodiscard]] std::size_t refcount([[maybe_unused]] std::size_t g) const { return 0; }

  /// Stage 1. Bytes the system has committed to the file: every page accessed since its granule
  /// was created, read or written.
  /// TODO: ask the system (fstat: st_blocks * 512); a count of your own misses the pages a read
  /// committed.
  [[nodiscard]] std::size_t committed_bytes() const { return 0; }

  [[nodiscard]] std::size_t granule_bytes() const noexcept { return 0; }
  [[nodiscard]] std::size_t num_granules() const noexcept { return 0; }
  [[nodiscard]] std::size_t num_in_use() const noexcept { return 0; }
  [[nodiscard]] std::size_t num_free() const noexcept { return 0; }
  /// The file's descriptor, which AddressRange maps.
  [[nodiscard]] int fd() const noexcept { return -1; }
  /// Where granule `g` starts in the file.
  [[nodiscard]] off_t offset([[maybe_unused]] std::size_t g) const noexcept { return 0; }

 private:
  // TODO: your state: the granule's size, a reference count per granule, the file.
};

/// Stage 1. A reservation of `slots` granules of address space, into which granules of one
/// PhysicalMemory are mapped and unmapped.
///
/// Policy: the reservation is taken once and kept until the range is destroyed, so its
/// addresses stay ours: unmapping a slot maps inaccessible memory over it again rather than
/// giving it back (munmap would let the next mmap of anyone land there). The range maps; it
/// does not count references: whoever maps a granule holds a reference to it, and gives the
/// reference back after unmapping it.
class AddressRange {
 public:
  /// Stage 1. TODO: 0 slots, or more bytes than a size_t holds, throws std::invalid_argument.
  /// Reserve the range with one PROT_NONE | MAP_NORESERVE anonymous mapping, at an address the
  /// system chooses.
  AddressRange(PhysicalMemory& memory, [[maybe_unused]] std::size_t slots) : memory_(memory) {}
  /// TODO: give the whole reservation back (munmap: now, and only now).
  ~AddressRange() {}
  AddressRange(const AddressRange&) = delete;
  AddressRange& operator=(const AddressRange&) = delete;

  /// Stage 1. Maps granule `g` at `slot`, readable and writable. The slot must be unmapped and
  /// `g` in use.
  /// TODO: a slot outside the range throws std::out_of_range; a slot mapped already, or a
  /// granule not in use, throws std::invalid_argument. MAP_FIXED replaces whatever lies at the
  /// address without a word: compute it inside the reservation.
  void map([[maybe_unused]] std::size_t slot, [[maybe_unused]] std::size_t g) {}

  /// Stage 1. Makes `slot` inaccessible again, keeping it reserved, and returns the granule it
  /// held. TODO: a slot outside the range throws std::out_of_range, an unmapped one
  /// std::invalid_argument.
  std::size_t unmap([[maybe_unused]] std::size_t slot) { return 0; }

  /// Stage 1. The granule mapped at `slot`, if any (std::out_of_range outside the range).
  [[nodiscard]] std::optional<std::size_t> mapped([[maybe_unused]] std::size_t slot) const { return std::nullopt; }
  /// Stage 1. The first byte of `slot` (std::out_of_range outside the range).
  [[nodiscard]] std::byte* address([[maybe_unused]] std::size_t slot) const { return nullptr; }

  [[nodiscard]] std::byte* base() const noexcept { return nullptr; }
  [[nodiscard]] std::size_t slots() const noexcept { return 0; }
  [[nodiscard]] std::size_t bytes() const noexcept { return 0; }
  [[nodiscard]] std::size_t num_mapped() const noexcept { return 0; }
  /// Stage 1. How many times map and unmap succeeded.
  [[nodiscard]] std::size_t map_calls() const noexcept { return 0; }
  [[nodiscard]] std::size_t unmap_calls() const noexcept { return 0; }
  [[nodiscard]] PhysicalMemory& memory() const noexcept { return memory_; }

 private:
  PhysicalMemory& memory_;
  // TODO: your state: the reservation's base, which granule each slot holds, the counts.
};

/// Stage 2. An expandable segment, as PyTorch's: one reservation of `max_bytes` (rounded up to
/// whole granules) whose granules are mapped as blocks need them and unmapped when no block
/// needs them any more, so that every block of the segment lies in one address range and free
/// neighbours always merge.
///
/// Policy: `map` maps every unmapped granule that its bytes touch, lowest address first, and is
/// all or nothing: when physical memory runs out halfway it unmaps and releases what it mapped
/// and returns false. `unmap` unmaps only the granules lying wholly inside its bytes, since a
/// granule partly outside may hold somebody's block.
class ExpandableSegment {
 public:
  /// Stage 2. TODO: 0 bytes throws std::invalid_argument. The range holds
  /// ceil(max_bytes / granule) slots.
  ExpandableSegment(PhysicalMemory& memory, [[maybe_unused]] std::size_t max_bytes) : range_(memory, 1) {}
  /// TODO: unmap and release every granule still mapped.
  ~ExpandableSegment() {}
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  /// Stage 2. Maps the granules that [offset, offset + bytes) touches; false, with nothing
  /// changed, when physical memory runs out.
  /// TODO: bytes outside the segment throw std::out_of_range. Each granule comes from
  /// `create`; when one is missing, unmap and release the ones this call mapped before
  /// returning false.
  [[nodiscard]] bool map([[maybe_unused]] std::size_t offset, [[maybe_unused]] std::size_t bytes) { return false; }

  /// Stage 2. Unmaps and releases the mapped granules lying wholly inside [offset, offset +
  /// bytes); returns the bytes unmapped. TODO: bytes outside the segment throw
  /// std::out_of_range.
  std::size_t unmap([[maybe_unused]] std::size_t offset, [[maybe_unused]] std::size_t bytes) { return 0; }

  /// Stage 2. Whether the granule holding byte `offset` is mapped.
  [[nodiscard]] bool is_mapped([[maybe_unused]] std::size_t offset) const { return false; }

  [[nodiscard]] std::byte* base() const noexcept { return nullptr; }
  /// Stage 2. The reservation's bytes: max_bytes rounded up to whole granules.
  [[nodiscard]] std::size_t size() const noexcept { return 0; }
  [[nodiscard]] std::size_t granule_bytes() const noexcept { return 0; }
  [[nodiscard]] std::size_t mapped_bytes() const noexcept { return 0; }
  [[nodiscard]] const AddressRange& range() const noexcept { return range_; }

 private:
  AddressRange range_;
};

/// Stage 2. A best-fit allocator over one expandable segment, as PyTorch's caching allocator
/// with expandable segments on.
///
/// Policy: a request is rounded up to a multiple of kAlignment and takes the front of the
/// smallest free block that holds it (the lowest such block among equals); the granules it
/// touches are mapped then, not before. A freed block merges with its free neighbours and its
/// granules stay mapped, cached for the next request; `empty_cache` unmaps every granule no
/// live block touches. Since all blocks share one address range, the order of requests no
/// longer decides which freed memory can serve which request; a live block still pins every
/// granule it touches.
class SegmentAllocator {
 public:
  static constexpr std::size_t kAlignment = 512;

  /// Stage 2. One free block: the whole segment, nothing mapped.
  SegmentAllocator(PhysicalMemory& memory, std::size_t max_bytes) : segment_(memory, max_bytes) {}

  /// Stage 2. A block of at least `bytes` bytes, mapped; nullptr, with nothing changed, when no
  /// free block holds it or physical memory runs out. 0 bytes throws std::invalid_argument.
  /// TODO: map the block's bytes through the segment before you split the free block.
  [[nodiscard]] std::byte* allocate([[maybe_unused]] std::size_t bytes) { return nullptr; }

  /// Stage 2. Gives back a block `allocate` returned; its granules stay mapped. nullptr does
  /// nothing. TODO: a pointer that is not a live block of this segment throws
  /// std::invalid_argument.
  /// Merge the block with a free block right after it and one right before it.
  void deallocate([[maybe_unused]] std::byte* p) {}

  /// Stage 2. Unmaps every granule that no live block touches; returns the bytes unmapped.
  std::size_t empty_cache() { return 0; }

  [[nodiscard]] std::size_t mapped_bytes() const noexcept { return 0; }
  /// Stage 2. The bytes of the live blocks, each rounded up to kAlignment.
  [[nodiscard]] std::size_t allocated_bytes() const noexcept { return 0; }
  [[nodiscard]] const ExpandableSegment& segment() const noexcept { return segment_; }

 private:
  ExpandableSegment segment_;
  // TODO: your state: the free blocks (offset -> size) and the live ones.
};

/// Stages 3 to 5. A KV cache that keeps each sequence's KV contiguous in virtual memory, as
/// vAttention does: every sequence owns a slice of the reservation long enough for `max_tokens`
/// tokens of `token_bytes` each, and physical granules are mapped into the slice as it grows.
/// Token `p` of sequence `r` is at `data(r) + p * token_bytes`; no block table.
///
/// Policy:
/// - A sequence of n tokens has the first ceil(n * token_bytes / granule) slots of its slice
///   mapped ("the granules it needs").
/// - Deferred reclamation: a released sequence's slice goes idle with its private granules still
///   mapped, for the next sequence. A new sequence takes, among the slices no sequence holds, the
///   one with the most already mapped of the slots it fills with granules of its own (an admitted
///   sequence, every slot it needs; a fork, its partly filled one), the lowest slice among equals.
/// - A granule a sequence needs and lacks is created new (it reads as zeros); when physical
///   memory has none free, a granule of an idle slice is given back first: from the slice idle
///   longest, its highest mapped slot first. Never from the slice being filled.
/// - Fork: the child's slice maps the parent's full granules too (an alias: one granule, two
///   addresses, one reference each), and gets a copy of the partly filled one (the whole granule,
///   copied with its bytes past the parent's last token; a granule the child's slice had mapped
///   where an alias goes is released first). Since a token's KV
///   is written once, after `grow` made room for it, a full granule is never written again: the
///   copy at fork is all the copy-on-write there is.
/// - Release unmaps a granule another slice still maps (the idle slice's next sequence would
///   write into another's KV) and keeps only private ones.
/// - Sleep gives back every granule, keeping every address; wake maps new granules at the same
///   slots, one per granule that was mapped (aliases shared again), with the contents of the
///   granules the kept sequences need copied back and zeros elsewhere. Idle slices wake unmapped.
///
/// Errors: an unknown id, an id admitted twice, a length over `max_tokens` or shrinking throws
/// std::invalid_argument; a call other than an observer while asleep, or sleep while asleep and
/// wake while awake, throws std::logic_error. Running out of slices or granules is a return value
/// (false) after which nothing has changed.
class ContiguousKVCache {
 public:
  using RequestId = int;

  /// Stage 3. TODO: 0 sequences, 0 tokens or 0 token bytes, or a reservation whose bytes
  /// overflow, throws std::invalid_argument. One range of max_sequences slices, each of
  /// ceil(max_tokens * token_bytes / granule) slots; nothing mapped.
  ContiguousKVCache(PhysicalMemory& memory, [[maybe_unused]] std::size_t max_sequences,
                    [[maybe_unused]] std::size_t max_tokens, [[maybe_unused]] std::size_t token_bytes)
      : memory_(memory), range_(memory, 1) {}
  /// TODO: unmap and release every granule still mapped.
  ~ContiguousKVCache() {}
  ContiguousKVCache(const ContiguousKVCache&) = delete;
  ContiguousKVCache& operator=(const ContiguousKVCache&) = delete;

  /// Stage 3. A slice for `r`, with the granules `tokens` tokens need; false, with nothing
  /// changed, when no slice is free or the granules cannot be had.
  /// TODO: count what can be had (free granules, plus those of the other idle slices) before
  /// you map anything.
  [[nodiscard]] bool admit([[maybe_unused]] RequestId r, [[maybe_unused]] std::size_t tokens) { return false; }

  /// Stage 3. Makes room for `r` to hold `tokens` tokens (at least its length now); false, with
  /// nothing changed, when the granules cannot be had.
  [[nodiscard]] bool grow([[maybe_unused]] RequestId r, [[maybe_unused]] std::size_t tokens) { return false; }

  /// Stage 4. `child` gets a slice that maps `parent`'s full granules (aliases) and a copy of
  /// its partly filled one; false, with nothing changed, when no slice or granule can be had.
  /// TODO: retain each full granule once for the child's mapping of it; copy the partly filled
  /// one into a granule of the child's own.
  [[nodiscard]] bool fork([[maybe_unused]] RequestId parent, [[maybe_unused]] RequestId child) { return false; }

  /// Stage 3. `r`'s slice goes idle, its private granules kept mapped for the next sequence.
  /// Stage 4. Granules another slice maps too are unmapped.
  void release([[maybe_unused]] RequestId r) {}

  /// Stage 3. Gives back every granule of every idle slice; returns how many.
  std::size_t trim() { return 0; }

  /// Stage 5. Gives back every granule, keeping every address; the contents of the granules that
  /// the sequences in `keep` map are copied to host memory first.
  /// TODO: an unknown id in `keep` throws std::invalid_argument, before anything changes.
  void sleep([[maybe_unused]] std::span<const RequestId> keep = {}) {}

  /// Stage 5. Maps new granules where granules were mapped before `sleep`, restoring what was
  /// kept; false, still asleep, when physical memory lacks the granules.
  [[nodiscard]] bool wake() { return false; }

  /// Stage 3. Where `r`'s tokens start: the same address for as long as `r` is admitted, sleep
  /// included.
  [[nodiscard]] std::byte* data([[maybe_unused]] RequestId r) const { return nullptr; }
  /// Stage 3.
  [[nodiscard]] std::size_t num_tokens([[maybe_unused]] RequestId r) const { return 0; }
  /// Stage 3. Which slice `r` holds, numbered from the reservation's start.
  [[nodiscard]] std::size_t slice_of([[maybe_unused]] RequestId r) const { return 0; }

  /// Stage 5.
  [[nodiscard]] bool asleep() const noexcept { return false; }
  /// Stage 3.
  [[nodiscard]] std::size_t num_sequences() const noexcept { return 0; }
  [[nodiscard]] std::size_t max_sequences() const noexcept { return 0; }
  [[nodiscard]] std::size_t max_tokens() const noexcept { return 0; }
  [[nodiscard]] std::size_t token_bytes() const noexcept { return 0; }
  [[nodiscard]] std::size_t slice_granules() const noexcept { return 0; }
  [[nodiscard]] std::size_t slice_bytes() const noexcept { return 0; }
  /// Stage 3. Slots mapped in every slice, held or idle (an aliased granule counts once per
  /// slot).
  [[nodiscard]] std::size_t mapped_granules() const noexcept { return 0; }
  /// Stage 3. Slots mapped in idle slices: what the next sequences reuse, or pressure gives back.
  [[nodiscard]] std::size_t idle_granules() const { return 0; }
  [[nodiscard]] const AddressRange& range() const noexcept { return range_; }
  [[nodiscard]] const PhysicalMemory& memory() const noexcept { return memory_; }

 private:
  PhysicalMemory& memory_;
  AddressRange range_;
  // TODO: your state: each sequence's slice and length, which sequence holds each slice, the
  // idle slices in the order they went idle (stage 5: what sleep kept).
};

/// Stage 6. Pages mapped ahead by a background thread, as kvcached's reserve pool: `pages`
/// slots of a reservation, each mapped to a granule of its own when in use, and a thread that
/// keeps between `low` and `high` of them mapped, committed and ready, so that `acquire` on the
/// hot path is a pop from a list.
///
/// Policy: the thread maps and unmaps outside the lock (a system call under it would make the
/// hot path wait for the slowest call of all): it claims a slot under the lock, maps it and
/// touches its pages without it, and publishes it under the lock again. It refills to `high`
/// once fewer than `low` are ready, and unmaps down to `high` once more than `high` are. When
/// none is ready, `acquire` maps a page itself (the slow path). `before_map`, when given, runs on
/// the thread that maps, for each page, right before it is mapped, with no lock held.
class PageReserve {
 public:
  /// Stage 6. TODO: marks that break low <= high, 0 < high <= pages throw
  /// std::invalid_argument. Start the thread last, once every member it reads is built; it
  /// fills the reserve to `high` at once.
  PageReserve(PhysicalMemory& memory, [[maybe_unused]] std::size_t pages, [[maybe_unused]] std::size_t low,
              [[maybe_unused]] std::size_t high, [[maybe_unused]] std::function<void(std::size_t)> before_map = {})
      : range_(memory, 1) {}
  /// TODO: stop the thread and join it, then unmap and release every mapped page.
  ~PageReserve() {}
  PageReserve(const PageReserve&) = delete;
  PageReserve& operator=(const PageReserve&) = delete;

  /// Stage 6. A mapped page for the caller alone: a ready one if any, else one mapped now;
  /// std::nullopt when every page is in use or physical memory is exhausted.
  [[nodiscard]] std::optional<std::size_t> acquire() { return std::nullopt; }

  /// Stage 6. Gives a page `acquire` returned back to the ready list, still mapped.
  /// TODO: a page that is not in use throws std::invalid_argument.
  void give_back([[maybe_unused]] std::size_t page) {}

  /// Stage 6. Blocks until the thread has nothing left to do: between the marks, or unable to
  /// map more.
  void settle() {}

  /// Stage 6. The first byte of `page`.
  [[nodiscard]] std::byte* address([[maybe_unused]] std::size_t page) const { return nullptr; }
  [[nodiscard]] std::size_t ready() const { return 0; }
  [[nodiscard]] std::size_t in_use() const { return 0; }
  /// Stage 6. How many pages `acquire` had to map itself, on the hot path.
  [[nodiscard]] std::size_t slow_maps() const { return 0; }
  [[nodiscard]] std::size_t pages() const noexcept { return 0; }
  [[nodiscard]] std::size_t page_bytes() const noexcept { return 0; }

 private:
  AddressRange range_;
  // TODO: your state, behind one mutex: each page's state (unmapped, being mapped, ready, in
  // use), the ready list, the counts; a condition variable for the thread's work and one for
  // settle; the thread itself, declared last.
};

}  // namespace alloclab
