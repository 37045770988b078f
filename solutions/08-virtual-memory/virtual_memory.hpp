// AllocLab exercise 08, reference solution: virtual memory for the KV cache. Physical granules
// of one memfd file, a reservation they are mapped into, an expandable segment with a best-fit
// allocator over it, a contiguous KV cache with deferred reclamation, copy-on-write forks and
// sleep mode, and a reserve of pages mapped ahead by a background thread.
//
// The CPU stands in for the GPU's virtual memory API: an offset of a memfd file is a physical
// handle (cuMemCreate), a PROT_NONE reservation is cuMemAddressReserve, mmap(MAP_SHARED |
// MAP_FIXED) of the offset is cuMemMap, mapping PROT_NONE memory over it again is cuMemUnmap, and
// punching a hole in the file is cuMemRelease.
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

namespace vm_detail {
[[noreturn]] inline void fail(const char* call) { throw std::system_error(errno, std::system_category(), call); }
inline std::size_t page_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
}  // namespace vm_detail

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
  PhysicalMemory(std::size_t granule_bytes, std::size_t num_granules)
      : granule_(granule_bytes), refs_(num_granules, 0) {
    const std::size_t page = vm_detail::page_bytes();
    if (granule_bytes == 0 || granule_bytes % page != 0)
      throw std::invalid_argument("PhysicalMemory: a granule of " + std::to_string(granule_bytes) +
                                  " bytes is not a positive multiple of the page size, " + std::to_string(page));
    if (num_granules == 0) throw std::invalid_argument("PhysicalMemory: 0 granules");
    if (num_granules > static_cast<std::size_t>(std::numeric_limits<off_t>::max()) / granule_bytes)
      throw std::invalid_argument("PhysicalMemory: " + std::to_string(num_granules) + " granules of " +
                                  std::to_string(granule_bytes) + " bytes overflow a file offset");
    fd_ = ::memfd_create("alloclab-physical", MFD_CLOEXEC);
    if (fd_ < 0) vm_detail::fail("memfd_create");
    if (::ftruncate(fd_, static_cast<off_t>(num_granules * granule_bytes)) != 0) {
      const int e = errno;
      ::close(fd_);
      throw std::system_error(e, std::system_category(), "ftruncate");
    }
  }
  ~PhysicalMemory() { ::close(fd_); }
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;

  /// The lowest-numbered free granule, with one reference; std::nullopt when every granule is
  /// in use.
  [[nodiscard]] std::optional<std::size_t> create() {
    // The free granules are found by a scan: a pool is a few thousand granules, and the lowest
    // first keeps the file's used offsets dense, so consecutive granules can merge into one
    // range of /proc/self/maps.
    for (std::size_t g = 0; g < refs_.size(); ++g)
      if (refs_[g] == 0) {
        refs_[g] = 1;
        ++in_use_;
        return g;
      }
    return std::nullopt;
  }

  /// One more reference to granule `g` (another mapping of it: a fork's alias).
  void retain(std::size_t g) { ++refs_[in_use(g, "retain")]; }

  /// One reference less; the last gives the granule's memory back to the system.
  void release(std::size_t g) {
    if (--refs_[in_use(g, "release")] != 0) return;
    // A punched hole frees the pages whatever maps them; madvise(MADV_DONTNEED) would only drop
    // this process's view of a shared mapping and keep the memory committed.
    if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset(g), static_cast<off_t>(granule_)) != 0)
      vm_detail::fail("fallocate");
    --in_use_;
  }

  /// The references to `g`, 0 for a free granule.
  [[nodiscard]] std::size_t refcount(std::size_t g) const {
    if (g >= refs_.size()) unknown(g, "refcount");
    return refs_[g];
  }

  /// Bytes the system has committed to the file: every page accessed since its granule was
  /// created, read or written.
  [[nodiscard]] std::size_t committed_bytes() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) vm_detail::fail("fstat");
    return static_cast<std::size_t>(st.st_blocks) * 512;
  }

  [[nodiscard]] std::size_t granule_bytes() const noexcept { return granule_; }
  [[nodiscard]] std::size_t num_granules() const noexcept { return refs_.size(); }
  [[nodiscard]] std::size_t num_in_use() const noexcept { return in_use_; }
  [[nodiscard]] std::size_t num_free() const noexcept { return refs_.size() - in_use_; }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] off_t offset(std::size_t g) const noexcept { return static_cast<off_t>(g * granule_); }

 private:
  std::size_t in_use(std::size_t g, const char* what) const {
    if (g >= refs_.size() || refs_[g] == 0) unknown(g, what);
    return g;
  }
  [[noreturn]] void unknown(std::size_t g, const char* what) const {
    throw std::invalid_argument(std::string("PhysicalMemory::") + what + ": granule " + std::to_string(g) +
                                (g >= refs_.size() ? " does not exist" : " is not in use"));
  }

  std::size_t granule_;
  std::vector<std::size_t> refs_;
  std::size_t in_use_ = 0;
  int fd_ = -1;
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
  AddressRange(PhysicalMemory& memory, std::size_t slots) : memory_(memory), slot_of_(slots) {
    if (slots == 0) throw std::invalid_argument("AddressRange: 0 slots");
    if (slots > std::numeric_limits<std::size_t>::max() / memory.granule_bytes())
      throw std::invalid_argument("AddressRange: " + std::to_string(slots) + " slots overflow the address space");
    void* p = ::mmap(nullptr, bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) vm_detail::fail("mmap");
    base_ = static_cast<std::byte*>(p);
  }
  ~AddressRange() { ::munmap(base_, bytes()); }
  AddressRange(const AddressRange&) = delete;
  AddressRange& operator=(const AddressRange&) = delete;

  /// Maps granule `g` at `slot`, readable and writable. The slot must be unmapped and `g` in use.
  void map(std::size_t slot, std::size_t g) {
    check(slot, "map");
    if (slot_of_[slot]) throw std::invalid_argument("AddressRange::map: slot " + std::to_string(slot) + " is mapped already");
    if (g >= memory_.num_granules() || memory_.refcount(g) == 0)
      throw std::invalid_argument("AddressRange::map: granule " + std::to_string(g) + " is not in use");
    // MAP_FIXED replaces whatever lies there without a word: only ever inside our reservation.
    if (::mmap(address(slot), memory_.granule_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memory_.fd(),
               memory_.offset(g)) == MAP_FAILED)
      vm_detail::fail("mmap");
    slot_of_[slot] = g;
    ++mapped_;
    ++map_calls_;
  }

  /// Makes `slot` inaccessible again, keeping it reserved, and returns the granule it held.
  std::size_t unmap(std::size_t slot) {
    check(slot, "unmap");
    if (!slot_of_[slot]) throw std::invalid_argument("AddressRange::unmap: slot " + std::to_string(slot) + " is not mapped");
    if (::mmap(address(slot), memory_.granule_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
               -1, 0) == MAP_FAILED)
      vm_detail::fail("mmap");
    const std::size_t g = *slot_of_[slot];
    slot_of_[slot].reset();
    --mapped_;
    ++unmap_calls_;
    return g;
  }

  /// The granule mapped at `slot`, if any.
  [[nodiscard]] std::optional<std::size_t> mapped(std::size_t slot) const {
    check(slot, "mapped");
    return slot_of_[slot];
  }
  /// The first byte of `slot`.
  [[nodiscard]] std::byte* address(std::size_t slot) const {
    check(slot, "address");
    return base_ + slot * memory_.granule_bytes();
  }

  [[nodiscard]] std::byte* base() const noexcept { return base_; }
  [[nodiscard]] std::size_t slots() const noexcept { return slot_of_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return slot_of_.size() * memory_.granule_bytes(); }
  [[nodiscard]] std::size_t num_mapped() const noexcept { return mapped_; }
  [[nodiscard]] std::size_t map_calls() const noexcept { return map_calls_; }
  [[nodiscard]] std::size_t unmap_calls() const noexcept { return unmap_calls_; }
  [[nodiscard]] PhysicalMemory& memory() const noexcept { return memory_; }

 private:
  void check(std::size_t slot, const char* what) const {
    if (slot >= slot_of_.size())
      throw std::out_of_range(std::string("AddressRange::") + what + ": slot " + std::to_string(slot) +
                              " of a range of " + std::to_string(slot_of_.size()));
  }

  PhysicalMemory& memory_;
  std::vector<std::optional<std::size_t>> slot_of_;
  std::byte* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t map_calls_ = 0;
  std::size_t unmap_calls_ = 0;
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
  ExpandableSegment(PhysicalMemory& memory, std::size_t max_bytes) : range_(memory, granules_for(memory, max_bytes)) {}
  ~ExpandableSegment() {
    for (std::size_t s = 0; s < range_.slots(); ++s)
      if (range_.mapped(s)) range_.memory().release(range_.unmap(s));
  }
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  /// Maps the granules that [offset, offset + bytes) touches; false, with nothing changed, when
  /// physical memory runs out.
  [[nodiscard]] bool map(std::size_t offset, std::size_t bytes) {
    check(offset, bytes, "map");
    if (bytes == 0) return true;
    const std::size_t g = granule(), first = offset / g, last = (offset + bytes - 1) / g;
    std::vector<std::size_t> mapped_now;
    mapped_now.reserve(last - first + 1);
    try {
      for (std::size_t s = first; s <= last; ++s) {
        if (range_.mapped(s)) continue;
        const auto handle = range_.memory().create();
        if (!handle) {
          undo(mapped_now);
          return false;
        }
        try {
          range_.map(s, *handle);
        } catch (...) {
          range_.memory().release(*handle);
          throw;
        }
        mapped_now.push_back(s);
      }
    } catch (...) {
      undo(mapped_now);
      throw;
    }
    return true;
  }

  /// Unmaps and releases the mapped granules lying wholly inside [offset, offset + bytes);
  /// returns the bytes unmapped.
  std::size_t unmap(std::size_t offset, std::size_t bytes) {
    check(offset, bytes, "unmap");
    const std::size_t g = granule(), first = (offset + g - 1) / g, end = (offset + bytes) / g;
    std::size_t unmapped = 0;
    for (std::size_t s = first; s < end; ++s)
      if (range_.mapped(s)) {
        range_.memory().release(range_.unmap(s));
        unmapped += g;
      }
    return unmapped;
  }

  /// Whether the granule holding byte `offset` is mapped.
  [[nodiscard]] bool is_mapped(std::size_t offset) const {
    check(offset, 1, "is_mapped");
    return range_.mapped(offset / granule()).has_value();
  }

  [[nodiscard]] std::byte* base() const noexcept { return range_.base(); }
  [[nodiscard]] std::size_t size() const noexcept { return range_.bytes(); }
  [[nodiscard]] std::size_t granule_bytes() const noexcept { return granule(); }
  [[nodiscard]] std::size_t mapped_bytes() const noexcept { return range_.num_mapped() * granule(); }
  [[nodiscard]] const AddressRange& range() const noexcept { return range_; }

 private:
  static std::size_t granules_for(const PhysicalMemory& memory, std::size_t max_bytes) {
    if (max_bytes == 0) throw std::invalid_argument("ExpandableSegment: a segment of 0 bytes");
    return max_bytes / memory.granule_bytes() + (max_bytes % memory.granule_bytes() != 0);
  }
  std::size_t granule() const noexcept { return range_.memory().granule_bytes(); }
  void check(std::size_t offset, std::size_t bytes, const char* what) const {
    if (offset > size() || bytes > size() - offset)
      throw std::out_of_range(std::string("ExpandableSegment::") + what + ": bytes [" + std::to_string(offset) + ", +" +
                              std::to_string(bytes) + ") outside a segment of " + std::to_string(size()));
  }
  void undo(const std::vector<std::size_t>& slots) noexcept {
    for (auto s = slots.rbegin(); s != slots.rend(); ++s) range_.memory().release(range_.unmap(*s));
  }

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

  SegmentAllocator(PhysicalMemory& memory, std::size_t max_bytes) : segment_(memory, max_bytes) {
    free_.emplace(0, segment_.size());
  }

  /// A block of at least `bytes` bytes, mapped; nullptr, with nothing changed, when no free
  /// block holds it or physical memory runs out. 0 bytes throws std::invalid_argument.
  [[nodiscard]] std::byte* allocate(std::size_t bytes) {
    if (bytes == 0) throw std::invalid_argument("SegmentAllocator::allocate: 0 bytes");
    if (bytes > segment_.size()) return nullptr;
    const std::size_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    if (best == free_.end()) return nullptr;
    const std::size_t offset = best->first, have = best->second;
    if (!segment_.map(offset, size)) return nullptr;
    free_.erase(best);
    if (have > size) free_.emplace(offset + size, have - size);
    used_.emplace(offset, size);
    allocated_ += size;
    return segment_.base() + offset;
  }

  /// Gives back a block `allocate` returned; its granules stay mapped.
  void deallocate(std::byte* p) {
    const auto it = p < segment_.base() ? used_.end() : used_.find(static_cast<std::size_t>(p - segment_.base()));
    if (it == used_.end()) throw std::invalid_argument("SegmentAllocator::deallocate: not a live block of this segment");
    std::size_t offset = it->first, size = it->second;
    allocated_ -= size;
    used_.erase(it);
    const auto next = free_.find(offset + size);
    if (next != free_.end()) {
      size += next->second;
      free_.erase(next);
    }
    const auto after = free_.lower_bound(offset);
    if (after != free_.begin()) {
      const auto prev = std::prev(after);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        free_.erase(prev);
      }
    }
    free_.emplace(offset, size);
  }

  /// Unmaps every granule that no live block touches; returns the bytes unmapped.
  std::size_t empty_cache() {
    std::size_t unmapped = 0;
    // Free blocks are merged, so a granule that no live block touches lies wholly inside one.
    for (const auto& [offset, size] : free_) unmapped += segment_.unmap(offset, size);
    return unmapped;
  }

  [[nodiscard]] std::size_t mapped_bytes() const noexcept { return segment_.mapped_bytes(); }
  [[nodiscard]] std::size_t allocated_bytes() const noexcept { return allocated_; }
  [[nodiscard]] const ExpandableSegment& segment() const noexcept { return segment_; }

 private:
  ExpandableSegment segment_;
  std::map<std::size_t, std::size_t> free_;  // offset -> size, merged
  std::map<std::size_t, std::size_t> used_;  // offset -> size
  std::size_t allocated_ = 0;
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
///   slots, one per granule that was mapped (aliases shared again), created in the order of the
///   lowest slot that mapped each, with the contents of the granules the kept sequences need
///   copied back and zeros elsewhere. Idle slices wake unmapped.
///
/// Errors: an unknown id, an id admitted twice, a length over `max_tokens` or shrinking throws
/// std::invalid_argument; a call other than an observer while asleep, or sleep while asleep and
/// wake while awake, throws std::logic_error. Running out of slices or granules is a return value
/// (false) after which nothing has changed.
class ContiguousKVCache {
 public:
  using RequestId = int;

  ContiguousKVCache(PhysicalMemory& memory, std::size_t max_sequences, std::size_t max_tokens, std::size_t token_bytes)
      : memory_(memory), max_tokens_(max_tokens), token_bytes_(token_bytes),
        slice_granules_(slice_granules_for(memory, max_sequences, max_tokens, token_bytes)),
        range_(memory, max_sequences * slice_granules_), holder_(max_sequences) {
    idle_.reserve(max_sequences);  // so that release allocates nothing
  }
  ~ContiguousKVCache() {
    for (std::size_t s = 0; s < range_.slots(); ++s)
      if (range_.mapped(s)) memory_.release(range_.unmap(s));
  }
  ContiguousKVCache(const ContiguousKVCache&) = delete;
  ContiguousKVCache& operator=(const ContiguousKVCache&) = delete;

  /// Stage 3. A slice for `r`, with the granules `tokens` tokens need; false, with nothing
  /// changed, when no slice is free or the granules cannot be had.
  [[nodiscard]] bool admit(RequestId r, std::size_t tokens) {
    awake("admit");
    if (seqs_.contains(r)) throw std::invalid_argument("ContiguousKVCache::admit: request " + std::to_string(r) + " is admitted already");
    check_length(tokens, "admit");
    const auto slice = free_slice(0, granules_for(tokens));
    if (!slice) return false;
    if (!can_fill(*slice, 0, granules_for(tokens))) return false;
    seqs_.emplace(r, Seq{*slice, tokens});
    take(*slice, r);
    fill(*slice, 0, granules_for(tokens));
    return true;
  }

  /// Stage 3. Makes room for `r` to hold `tokens` tokens (at least its length now); false, with
  /// nothing changed, when the granules cannot be had.
  [[nodiscard]] bool grow(RequestId r, std::size_t tokens) {
    awake("grow");
    Seq& s = known(r, "grow");
    check_length(tokens, "grow");
    if (tokens < s.tokens)
      throw std::invalid_argument("ContiguousKVCache::grow: request " + std::to_string(r) + " holds " +
                                  std::to_string(s.tokens) + " tokens, more than " + std::to_string(tokens));
    const std::size_t from = granules_for(s.tokens), to = granules_for(tokens);
    if (!can_fill(s.slice, from, to)) return false;
    fill(s.slice, from, to);
    s.tokens = tokens;
    return true;
  }

  /// Stage 4. `child` gets a slice that maps `parent`'s full granules (aliases) and a copy of
  /// its partly filled one; false, with nothing changed, when no slice or granule can be had.
  [[nodiscard]] bool fork(RequestId parent, RequestId child) {
    awake("fork");
    const Seq p = known(parent, "fork");
    if (seqs_.contains(child)) throw std::invalid_argument("ContiguousKVCache::fork: request " + std::to_string(child) + " is admitted already");
    const std::size_t need = granules_for(p.tokens), full = p.tokens * token_bytes_ / granule();
    const auto slice = free_slice(full, need);
    if (!slice) return false;
    // The granules the child's slice maps where aliases go are private (the slice is idle) and
    // released before the partly filled slot is filled: they count as free.
    if (!can_fill(*slice, full, need, mapped_among(*slice, 0, full))) return false;
    seqs_.emplace(child, Seq{*slice, p.tokens});
    take(*slice, child);
    for (std::size_t i = 0; i < full; ++i) {
      const std::size_t at = slot(*slice, i);
      if (range_.mapped(at)) memory_.release(range_.unmap(at));
      const std::size_t g = *range_.mapped(slot(p.slice, i));
      memory_.retain(g);
      range_.map(at, g);
    }
    fill(*slice, full, need);
    if (full < need) std::memcpy(range_.address(slot(*slice, full)), range_.address(slot(p.slice, full)), granule());
    return true;
  }

  /// Stage 3. `r`'s slice goes idle, its private granules kept mapped for the next sequence.
  /// Stage 4. Granules another slice maps too are unmapped.
  void release(RequestId r) {
    awake("release");
    const Seq s = known(r, "release");
    for (std::size_t i = 0; i < slice_granules_; ++i) {
      const std::size_t at = slot(s.slice, i);
      const auto g = range_.mapped(at);
      if (g && memory_.refcount(*g) > 1) memory_.release(range_.unmap(at));
    }
    seqs_.erase(r);
    holder_[s.slice].reset();
    idle_.push_back(s.slice);
  }

  /// Stage 3. Gives back every granule of every idle slice; returns how many.
  std::size_t trim() {
    awake("trim");
    std::size_t n = 0;
    for (const std::size_t slice : idle_)
      for (std::size_t i = 0; i < slice_granules_; ++i)
        if (range_.mapped(slot(slice, i))) {
          memory_.release(range_.unmap(slot(slice, i)));
          ++n;
        }
    return n;
  }

  /// Stage 5. Gives back every granule, keeping every address; the contents of the granules that
  /// the sequences in `keep` map are copied to host memory first.
  void sleep(std::span<const RequestId> keep = {}) {
    awake("sleep");
    for (const RequestId r : keep) known(r, "sleep");
    // Everything that allocates comes first, so that a std::bad_alloc changes nothing.
    std::vector<Asleep> plan;
    std::unordered_map<std::size_t, std::size_t> plan_of;  // granule -> index in plan
    // In address order, not the map's: wake creates the granules in the plan's order, and the
    // contract says which granule lands where.
    for (std::size_t at = 0; at < range_.slots(); ++at) {
      const auto g = range_.mapped(at);
      if (!g || !holder_[at / slice_granules_]) continue;
      auto [it, inserted] = plan_of.try_emplace(*g, plan.size());
      if (inserted) plan.push_back({});
      plan[it->second].slots.push_back(at);
    }
    for (const RequestId r : keep) {
      const Seq& s = seqs_.at(r);
      for (std::size_t i = 0; i < granules_for(s.tokens); ++i) {
        Asleep& a = plan[plan_of.at(*range_.mapped(slot(s.slice, i)))];
        if (!a.contents.empty()) continue;
        const std::byte* from = range_.address(slot(s.slice, i));
        a.contents.assign(from, from + granule());
      }
    }
    for (std::size_t s = 0; s < range_.slots(); ++s)
      if (range_.mapped(s)) memory_.release(range_.unmap(s));
    asleep_ = std::move(plan);
    sleeping_ = true;
  }

  /// Stage 5. Maps new granules where granules were mapped before `sleep`, restoring what was
  /// kept; false, still asleep, when physical memory lacks the granules.
  [[nodiscard]] bool wake() {
    if (!sleeping_) throw std::logic_error("ContiguousKVCache::wake: not asleep");
    if (memory_.num_free() < asleep_.size()) return false;
    for (const Asleep& a : asleep_) {
      const std::size_t g = *memory_.create();
      for (std::size_t k = 0; k < a.slots.size(); ++k) {
        if (k > 0) memory_.retain(g);
        range_.map(a.slots[k], g);
      }
      if (!a.contents.empty()) std::memcpy(range_.address(a.slots.front()), a.contents.data(), granule());
    }
    asleep_.clear();
    sleeping_ = false;
    return true;
  }

  /// Where `r`'s tokens start: the same address for as long as `r` is admitted, sleep included.
  [[nodiscard]] std::byte* data(RequestId r) const { return range_.address(slot(known(r, "data").slice, 0)); }
  [[nodiscard]] std::size_t num_tokens(RequestId r) const { return known(r, "num_tokens").tokens; }
  /// Which slice `r` holds, numbered from the reservation's start.
  [[nodiscard]] std::size_t slice_of(RequestId r) const { return known(r, "slice_of").slice; }

  [[nodiscard]] bool asleep() const noexcept { return sleeping_; }
  [[nodiscard]] std::size_t num_sequences() const noexcept { return seqs_.size(); }
  [[nodiscard]] std::size_t max_sequences() const noexcept { return holder_.size(); }
  [[nodiscard]] std::size_t max_tokens() const noexcept { return max_tokens_; }
  [[nodiscard]] std::size_t token_bytes() const noexcept { return token_bytes_; }
  [[nodiscard]] std::size_t slice_granules() const noexcept { return slice_granules_; }
  [[nodiscard]] std::size_t slice_bytes() const noexcept { return slice_granules_ * granule(); }
  /// Slots mapped in every slice, held or idle (an aliased granule counts once per slot).
  [[nodiscard]] std::size_t mapped_granules() const noexcept { return range_.num_mapped(); }
  /// Slots mapped in idle slices: what the next sequences reuse, or pressure gives back.
  [[nodiscard]] std::size_t idle_granules() const {
    std::size_t n = 0;
    for (const std::size_t slice : idle_)
      for (std::size_t i = 0; i < slice_granules_; ++i) n += range_.mapped(slot(slice, i)).has_value();
    return n;
  }
  [[nodiscard]] const AddressRange& range() const noexcept { return range_; }
  [[nodiscard]] const PhysicalMemory& memory() const noexcept { return memory_; }

 private:
  struct Seq {
    std::size_t slice;
    std::size_t tokens;
  };
  struct Asleep {
    std::vector<std::size_t> slots;   // every slot the granule was mapped at
    std::vector<std::byte> contents;  // empty unless a kept sequence maps it
  };

  static std::size_t slice_granules_for(const PhysicalMemory& memory, std::size_t sequences, std::size_t tokens,
                                        std::size_t token_bytes) {
    if (sequences == 0 || tokens == 0 || token_bytes == 0)
      throw std::invalid_argument("ContiguousKVCache: sequences, tokens and token bytes must be positive");
    if (tokens > std::numeric_limits<std::size_t>::max() / token_bytes)
      throw std::invalid_argument("ContiguousKVCache: a slice's bytes overflow");
    const std::size_t g = memory.granule_bytes(), n = tokens * token_bytes / g + (tokens * token_bytes % g != 0);
    if (n > std::numeric_limits<std::size_t>::max() / g / sequences)
      throw std::invalid_argument("ContiguousKVCache: the reservation's bytes overflow");
    return n;
  }
  std::size_t granule() const noexcept { return memory_.granule_bytes(); }
  std::size_t granules_for(std::size_t tokens) const noexcept {
    const std::size_t b = tokens * token_bytes_;
    return b / granule() + (b % granule() != 0);
  }
  std::size_t slot(std::size_t slice, std::size_t i) const noexcept { return slice * slice_granules_ + i; }
  void awake(const char* what) const {
    if (sleeping_) throw std::logic_error(std::string("ContiguousKVCache::") + what + ": the cache is asleep; wake it first");
  }
  void check_length(std::size_t tokens, const char* what) const {
    if (tokens > max_tokens_)
      throw std::invalid_argument(std::string("ContiguousKVCache::") + what + ": " + std::to_string(tokens) +
                                  " tokens, more than the " + std::to_string(max_tokens_) + " a slice holds");
  }
  const Seq& known(RequestId r, const char* what) const {
    const auto it = seqs_.find(r);
    if (it == seqs_.end()) throw std::invalid_argument(std::string("ContiguousKVCache::") + what + ": unknown request " + std::to_string(r));
    return it->second;
  }
  Seq& known(RequestId r, const char* what) { return const_cast<Seq&>(std::as_const(*this).known(r, what)); }

  std::size_t mapped_among(std::size_t slice, std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) n += range_.mapped(slot(slice, i)).has_value();
    return n;
  }
  // The free slice with the most of slots [from, to) mapped already (the slots the sequence
  // fills with granules of its own), the lowest among equals.
  std::optional<std::size_t> free_slice(std::size_t from, std::size_t to) const {
    std::optional<std::size_t> best;
    std::size_t best_mapped = 0;
    for (std::size_t slice = 0; slice < holder_.size(); ++slice) {
      if (holder_[slice]) continue;
      const std::size_t m = mapped_among(slice, from, to);
      if (!best || m > best_mapped) best = slice, best_mapped = m;
    }
    return best;
  }
  // Whether slots [from, to) of `slice` can all be mapped: one granule for each unmapped slot,
  // from free memory, from the `freed` granules the call releases first, or from the other idle
  // slices.
  bool can_fill(std::size_t slice, std::size_t from, std::size_t to, std::size_t freed = 0) const {
    std::size_t lacking = 0;
    for (std::size_t i = from; i < to; ++i) lacking += !range_.mapped(slot(slice, i)).has_value();
    if (lacking <= memory_.num_free() + freed) return true;
    std::size_t reclaimable = 0;
    for (const std::size_t idle : idle_)
      if (idle != slice) reclaimable += mapped_among(idle, 0, slice_granules_);
    return lacking <= memory_.num_free() + freed + reclaimable;
  }
  void fill(std::size_t slice, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      const std::size_t at = slot(slice, i);
      if (range_.mapped(at)) continue;
      if (memory_.num_free() == 0) reclaim_one(slice);
      range_.map(at, *memory_.create());
    }
  }
  // Gives back one granule of an idle slice: the slice idle longest, its highest mapped slot.
  void reclaim_one(std::size_t filling) {
    for (const std::size_t idle : idle_) {
      if (idle == filling) continue;
      for (std::size_t i = slice_granules_; i-- > 0;)
        if (range_.mapped(slot(idle, i))) {
          memory_.release(range_.unmap(slot(idle, i)));
          return;
        }
    }
  }
  void take(std::size_t slice, RequestId r) {
    holder_[slice] = r;
    idle_.erase(std::remove(idle_.begin(), idle_.end(), slice), idle_.end());
  }

  PhysicalMemory& memory_;
  std::size_t max_tokens_, token_bytes_, slice_granules_;
  AddressRange range_;
  std::unordered_map<RequestId, Seq> seqs_;
  std::vector<std::optional<RequestId>> holder_;  // per slice, the sequence holding it
  std::vector<std::size_t> idle_;                 // released slices, idle longest first
  std::vector<Asleep> asleep_;
  bool sleeping_ = false;
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
  PageReserve(PhysicalMemory& memory, std::size_t pages, std::size_t low, std::size_t high,
              std::function<void(std::size_t)> before_map = {})
      : range_(memory, pages), low_(low), high_(high), state_(pages, State::unmapped), before_map_(std::move(before_map)) {
    if (high == 0 || low > high || high > pages)
      throw std::invalid_argument("PageReserve: marks must satisfy low <= high, 0 < high <= pages");
    ready_.reserve(pages);
    thread_ = std::thread([this] { run(); });
  }
  ~PageReserve() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    for (std::size_t s = 0; s < range_.slots(); ++s)
      if (range_.mapped(s)) range_.memory().release(range_.unmap(s));
  }
  PageReserve(const PageReserve&) = delete;
  PageReserve& operator=(const PageReserve&) = delete;

  /// A mapped page for the caller alone: a ready one if any, else one mapped now; std::nullopt
  /// when every page is in use or physical memory is exhausted.
  [[nodiscard]] std::optional<std::size_t> acquire() {
    std::unique_lock lock(mutex_);
    if (!ready_.empty()) {
      const std::size_t page = ready_.back();
      ready_.pop_back();
      state_[page] = State::in_use;
      ++in_use_;
      if (ready_.size() < low_) {
        refilling_ = true;
        wake_.notify_all();
      }
      return page;
    }
    refilling_ = low_ > 0;
    const auto page = claim();
    if (!page) return std::nullopt;
    lock.unlock();
    const bool mapped = map_page(*page);
    lock.lock();
    state_[*page] = mapped ? State::in_use : State::unmapped;
    in_use_ += mapped;
    slow_maps_ += mapped;
    settled_.notify_all();
    wake_.notify_all();
    return mapped ? page : std::nullopt;
  }

  /// Gives a page `acquire` returned back to the ready list, still mapped.
  void give_back(std::size_t page) {
    std::lock_guard lock(mutex_);
    if (page >= state_.size() || state_[page] != State::in_use)
      throw std::invalid_argument("PageReserve::give_back: page " + std::to_string(page) + " is not in use");
    state_[page] = State::ready;
    --in_use_;
    ready_.push_back(page);
    exhausted_ = false;
    if (ready_.size() > high_) wake_.notify_all();
  }

  /// Blocks until the thread has nothing left to do: between the marks, or unable to map more.
  void settle() {
    std::unique_lock lock(mutex_);
    settled_.wait(lock, [this] { return !busy_ && !work(); });
  }

  /// The first byte of `page`.
  [[nodiscard]] std::byte* address(std::size_t page) const { return range_.address(page); }
  [[nodiscard]] std::size_t ready() const {
    std::lock_guard lock(mutex_);
    return ready_.size();
  }
  [[nodiscard]] std::size_t in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
  }
  /// How many pages `acquire` had to map itself, on the hot path.
  [[nodiscard]] std::size_t slow_maps() const {
    std::lock_guard lock(mutex_);
    return slow_maps_;
  }
  [[nodiscard]] std::size_t pages() const noexcept { return state_.size(); }
  [[nodiscard]] std::size_t page_bytes() const noexcept { return range_.memory().granule_bytes(); }

 private:
  enum class State { unmapped, busy, ready, in_use };

  // Under the lock: whether the thread should map or unmap.
  bool work() const {
    if (ready_.size() > high_) return true;
    return refilling_ && !exhausted_ && ready_.size() < high_ &&
           std::find(state_.begin(), state_.end(), State::unmapped) != state_.end();
  }
  // Under the lock: the lowest unmapped page, marked busy.
  std::optional<std::size_t> claim() {
    const auto it = std::find(state_.begin(), state_.end(), State::unmapped);
    if (it == state_.end()) return std::nullopt;
    *it = State::busy;
    return static_cast<std::size_t>(it - state_.begin());
  }
  // Without the lock. Only this page's slot is touched, and its state is busy: nobody else
  // reads or writes it until it is published.
  bool map_page(std::size_t page) {
    if (before_map_) before_map_(page);
    std::optional<std::size_t> g;
    {
      std::lock_guard memory_lock(memory_mutex_);
      g = range_.memory().create();
      if (!g) return false;
      range_.map(page, *g);
    }
    // Touch every page so the first write on the hot path takes no fault.
    std::byte* p = range_.address(page);
    for (std::size_t at = 0; at < page_bytes(); at += vm_detail::page_bytes()) *reinterpret_cast<volatile std::byte*>(p + at) = std::byte{0};
    return true;
  }
  void unmap_page(std::size_t page) {
    std::lock_guard memory_lock(memory_mutex_);
    range_.memory().release(range_.unmap(page));
  }

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (ready_.size() >= high_) refilling_ = false;
      if (stop_) return;
      if (!work()) {
        settled_.notify_all();
        wake_.wait(lock);
        continue;
      }
      busy_ = true;
      if (ready_.size() > high_) {
        const std::size_t page = ready_.front();
        ready_.erase(ready_.begin());
        state_[page] = State::busy;
        lock.unlock();
        unmap_page(page);
        lock.lock();
        state_[page] = State::unmapped;
      } else {
        const std::size_t page = *claim();
        lock.unlock();
        const bool mapped = map_page(page);
        lock.lock();
        if (mapped) {
          state_[page] = State::ready;
          ready_.push_back(page);
        } else {
          state_[page] = State::unmapped;
          exhausted_ = true;  // until a page is given back
        }
      }
      busy_ = false;
    }
  }

  AddressRange range_;
  std::size_t low_, high_;
  mutable std::mutex mutex_;      // the lists and states below
  std::mutex memory_mutex_;       // the range's and the memory's bookkeeping, never held with mutex_ by the hot path
  std::condition_variable wake_;  // the thread has work
  std::condition_variable settled_;
  std::vector<State> state_;
  std::vector<std::size_t> ready_;
  std::size_t in_use_ = 0, slow_maps_ = 0;
  bool refilling_ = true, exhausted_ = false, busy_ = false, stop_ = false;
  std::function<void(std::size_t)> before_map_;
  std::thread thread_;
};

}  // namespace alloclab
