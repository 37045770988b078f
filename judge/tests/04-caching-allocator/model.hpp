// The caching allocator's contract as the simplest code that can be right: a vector of segments
// in address order, each a vector of blocks that tile it, linear scans for everything, no
// cleverness. The model stage (stage6_model.cpp) runs every call on this and on the header
// under test side by side, and compares what the contract lets a caller observe.
//
// It also holds the device both of them run on: the tests' TestDevice (test_device.hpp) as far
// as an allocator can see it (first fit, 512-byte granules, a budget and a limit, streams that
// run only when told), rebuilt on fixed arrays so that it never takes memory from the heap.
// The model stage makes the heap fail inside the allocator's calls, and a failure must land in
// the allocator's bookkeeping, never in the device.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"

namespace caching_model {

/// max(512, n rounded up to a multiple of 512), for n up to the largest multiple of 512.
inline std::size_t round_size(std::size_t n) {
  const std::size_t rounded = n % 512 == 0 ? n : n - n % 512 + 512;
  return std::max<std::size_t>(rounded, 512);
}

/// The segment a rounded size asks the device for when no free block fits it.
inline std::size_t segment_size(std::size_t size) {
  if (size <= MiB) return 2 * MiB;
  if (size < 10 * MiB) return 20 * MiB;
  return size % (2 * MiB) == 0 ? size : size - size % (2 * MiB) + 2 * MiB;
}

inline bool is_small(std::size_t size) { return size <= MiB; }

/// TestDevice without a heap: the same answers to the same calls, and the same observers.
class Device {
 public:
  static constexpr std::size_t kAlignment = 512;
  static constexpr int kStreams = 8;

  /// `budget` bytes whose first lies at `base` (the model's device lies at a made-up address:
  /// nobody reads its memory).
  Device(std::size_t budget, std::uintptr_t base) : budget_(round_up(budget)), base_(base) {}

  void* malloc(std::size_t n) noexcept {
    ++malloc_calls_;
    const Gap gap = first_fit(n);
    if (!gap.found) return nullptr;
    for (std::size_t j = live_count_; j > gap.index; --j) live_[j] = live_[j - 1];
    live_[gap.index] = {gap.offset, gap.size};
    ++live_count_;
    in_use_ += gap.size;
    ++mallocs_;
    return reinterpret_cast<void*>(base_ + gap.offset);
  }

  void free(void* p) noexcept {
    ++free_calls_;
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
    for (std::size_t i = 0; i < live_count_; ++i) {
      if (base_ + live_[i].offset != a) continue;
      in_use_ -= live_[i].size;
      for (std::size_t j = i; j + 1 < live_count_; ++j) live_[j] = live_[j + 1];
      --live_count_;
      ++frees_;
      return;
    }
    ++bad_frees_;
  }

  int record_event(int stream) noexcept {
    if (stream < 0 || stream >= kStreams || events_count_ == events_.size()) {
      ++bad_records_;
      return -1;
    }
    events_[events_count_] = {stream, ++queued_[static_cast<std::size_t>(stream)]};
    return static_cast<int>(events_count_++);
  }

  bool event_done(int event) const noexcept {
    ++event_queries_;
    if (event < 0 || static_cast<std::size_t>(event) >= events_count_) {
      ++bad_event_queries_;
      return false;
    }
    const Event& e = events_[static_cast<std::size_t>(event)];
    return e.ticket <= ran_[static_cast<std::size_t>(e.stream)];
  }

  void synchronize() noexcept {
    ++synchronize_calls_;
    ran_ = queued_;
  }

  void complete(int stream) noexcept { ran_[static_cast<std::size_t>(stream)] = queued_[static_cast<std::size_t>(stream)]; }
  void set_limit(std::size_t bytes) noexcept { limit_ = bytes; }

  /// Whether `malloc(n)` would succeed now; asks nothing of the device.
  bool would_give(std::size_t n) const noexcept { return first_fit(n).found; }

  std::size_t offset_of(const void* p) const noexcept { return offset_of(reinterpret_cast<std::uintptr_t>(p)); }
  std::size_t offset_of(std::uintptr_t address) const noexcept { return static_cast<std::size_t>(address - base_); }

  std::size_t budget() const noexcept { return budget_; }
  std::size_t in_use() const noexcept { return in_use_; }
  std::size_t live_allocations() const noexcept { return live_count_; }
  std::size_t malloc_calls() const noexcept { return malloc_calls_; }
  std::size_t mallocs() const noexcept { return mallocs_; }
  std::size_t free_calls() const noexcept { return free_calls_; }
  std::size_t frees() const noexcept { return frees_; }
  std::size_t bad_frees() const noexcept { return bad_frees_; }
  std::size_t events_recorded() const noexcept { return events_count_; }
  std::size_t events_recorded_on(int stream) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < events_count_; ++i) n += events_[i].stream == stream;
    return n;
  }
  std::size_t bad_event_queries() const noexcept { return bad_event_queries_ + bad_records_; }
  std::size_t synchronize_calls() const noexcept { return synchronize_calls_; }

 private:
  static std::size_t round_up(std::size_t n) noexcept { return (n + kAlignment - 1) & ~(kAlignment - 1); }

  struct Range {
    std::size_t offset, size;
  };
  struct Gap {
    bool found;
    std::size_t offset, size, index;  // where, how much, and the place among the live ranges
  };

  // First fit, as TestDevice's: the lowest gap between the live allocations that holds the
  // request rounded to 512 bytes; none for a size too large to round, beyond the budget or the limit.
  Gap first_fit(std::size_t n) const noexcept {
    const std::size_t size = n == 0 ? kAlignment : round_up(n);
    if (size == 0 || n > budget_ || in_use_ + size > limit_ || live_count_ == live_.size()) return {false, 0, 0, 0};
    std::size_t at = 0, i = 0;
    for (; i < live_count_; ++i) {
      if (live_[i].offset - at >= size) break;
      at = live_[i].offset + live_[i].size;
    }
    if (i == live_count_ && budget_ - at < size) return {false, 0, 0, 0};
    return {true, at, size, i};
  }
  struct Event {
    int stream;
    std::size_t ticket;
  };

  std::size_t budget_;
  std::uintptr_t base_;
  std::size_t limit_ = SIZE_MAX;
  std::array<Range, 40> live_{};  // by offset; 64 MiB holds at most 32 segments
  std::size_t live_count_ = 0, in_use_ = 0;
  std::size_t malloc_calls_ = 0, mallocs_ = 0, free_calls_ = 0, frees_ = 0, bad_frees_ = 0;
  std::array<Event, 256> events_{};  // a sequence records at most two events per call
  std::size_t events_count_ = 0, bad_records_ = 0;
  std::array<std::size_t, kStreams> queued_{}, ran_{};
  mutable std::size_t event_queries_ = 0, bad_event_queries_ = 0;
  std::size_t synchronize_calls_ = 0;
};

enum class State { free, allocated, pending };

struct Block {
  std::size_t offset, size;  // from the segment's base
  State state;
  std::vector<int> uses;     // while allocated: the other streams it was recorded on, once each
  std::vector<int> events;   // while pending: one event per such stream, recorded at the free
};

struct Segment {
  std::uintptr_t base;
  std::size_t size;
  bool small;
  int stream;
  std::vector<Block> blocks;  // in address order, tiling the segment
};

struct Stats {
  std::size_t allocated_bytes = 0, reserved_bytes = 0, peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  std::size_t device_mallocs = 0, device_frees = 0, cache_hits = 0, oom_retries = 0;
};

/// How a request of at least one byte ended: a block's address, or OutOfMemoryError with the
/// figures it gives.
struct Allocation {
  bool out_of_memory;
  std::uintptr_t address;
  std::size_t allocated, reserved;  // when out_of_memory: the figures as they are when it throws
};

/// Where a pending block lies, and whether its events are all done.
struct PendingBlock {
  std::uintptr_t base;
  std::size_t offset, size;
  bool ready;
};

/// The allocator of the contract, on a device of its own.
class Allocator {
 public:
  explicit Allocator(Device device) : device_(device) {}

  Device& device() { return device_; }
  const Device& device() const { return device_; }
  const Stats& stats() const { return stats_; }
  const std::vector<Segment>& segments() const { return segments_; }

  /// `allocate(n, stream)` for n > 0: first the ready pending blocks are freed, then the request.
  Allocation allocate(std::size_t n, int stream) {
    free_ready_pending();
    return request(n, stream);
  }

  /// The request itself, once the ready pending blocks are freed.
  Allocation request(std::size_t n, int stream) {
    if (n > kLargestRequest) return out_of_memory(n);  // rounding would overflow: no device call
    const std::size_t size = round_size(n);
    const bool small = is_small(size);
    if (const auto fit = best_fit(size, small, stream); fit.found) {
      ++stats_.cache_hits;
      return {false, hand_out(fit.segment, fit.block, size), 0, 0};
    }
    const std::size_t bytes = segment_size(size);
    void* memory = device_.malloc(bytes);
    if (memory == nullptr) {
      empty_cache();
      ++stats_.oom_retries;
      memory = device_.malloc(bytes);
      if (memory == nullptr) return out_of_memory(n);
    }
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(memory);
    std::size_t at = 0;
    while (at < segments_.size() && segments_[at].base < base) ++at;
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(at),
                     Segment{base, bytes, small, stream, {Block{0, bytes, State::free, {}, {}}}});
    ++stats_.device_mallocs;
    stats_.reserved_bytes += bytes;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    return {false, hand_out(at, 0, size), 0, 0};
  }

  /// Whether the request, after the ready pending blocks were freed, would find no free block
  /// and be refused by the device: the one path on which it empties the cache and retries.
  bool needs_retry(std::size_t n, int stream) const {
    if (n > kLargestRequest) return false;
    const std::size_t size = round_size(n);
    return !best_fit(size, is_small(size), stream).found && !device_.would_give(segment_size(size));
  }

  /// False when `address` is not an allocated block's start (the call throws and changes nothing).
  bool deallocate(std::uintptr_t address) {
    const auto [s, i] = find(address, State::allocated);
    if (s == npos) return false;
    Block& b = segments_[s].blocks[i];
    stats_.allocated_bytes -= b.size;
    if (!b.uses.empty()) {
      for (int use : b.uses) b.events.push_back(device_.record_event(use));
      b.uses.clear();
      b.state = State::pending;
      return true;
    }
    release(s, i);
    return true;
  }

  /// False when `address` is not an allocated block's start.
  bool record_stream(std::uintptr_t address, int stream) {
    const auto [s, i] = find(address, State::allocated);
    if (s == npos) return false;
    Block& b = segments_[s].blocks[i];
    if (stream != segments_[s].stream && std::find(b.uses.begin(), b.uses.end(), stream) == b.uses.end())
      b.uses.push_back(stream);
    return true;
  }

  void empty_cache() {
    if (has_pending()) {
      device_.synchronize();
      free_pending([](const PendingBlock&) { return true; });
    }
    return_free_segments();
  }

  /// The destructor's one device call besides the frees: a synchronization when blocks are pending.
  bool destructor_synchronizes() const { return has_pending(); }

  std::size_t pending_bytes() const {
    std::size_t n = 0;
    for (const Segment& seg : segments_)
      for (const Block& b : seg.blocks) n += b.state == State::pending ? b.size : 0;
    return n;
  }

  bool has_pending() const { return pending_bytes() != 0; }

  std::vector<PendingBlock> pending_blocks() const {
    std::vector<PendingBlock> out;
    for (const Segment& seg : segments_)
      for (const Block& b : seg.blocks)
        if (b.state == State::pending) out.push_back({seg.base, b.offset, b.size, ready(b)});
    return out;
  }

  /// Frees the pending block at `offset` of the segment at `base`, merging it.
  void free_pending_at(std::uintptr_t base, std::size_t offset) {
    free_pending([&](const PendingBlock& p) { return p.base == base && p.offset == offset; });
  }

  void free_ready_pending() {
    free_pending([](const PendingBlock& p) { return p.ready; });
  }

  /// The segments that hold one free block and nothing else, by base.
  std::vector<std::uintptr_t> wholly_free_segments() const {
    std::vector<std::uintptr_t> out;
    for (const Segment& seg : segments_)
      if (seg.blocks.size() == 1 && seg.blocks[0].state == State::free) out.push_back(seg.base);
    return out;
  }

  void return_free_segments() {
    for (std::size_t s = 0; s < segments_.size();) {
      const Segment& seg = segments_[s];
      if (seg.blocks.size() != 1 || seg.blocks[0].state != State::free) {
        ++s;
        continue;
      }
      device_.free(reinterpret_cast<void*>(seg.base));
      ++stats_.device_frees;
      stats_.reserved_bytes -= seg.size;
      segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(s));
    }
  }

  void count_retry() { ++stats_.oom_retries; }

  /// Whether a block in `state` starts at `address`.
  bool block_at(std::uintptr_t address, State state) const { return find(address, state).first != npos; }

  /// Whether the allocated block at `address` was recorded on another stream.
  bool recorded(std::uintptr_t address) const {
    const auto [s, i] = find(address, State::allocated);
    return s != npos && !segments_[s].blocks[i].uses.empty();
  }

  /// The stream of the segment that holds `address`.
  int stream_of(std::uintptr_t address) const {
    for (const Segment& seg : segments_)
      if (address >= seg.base && address < seg.base + seg.size) return seg.stream;
    return 0;
  }

 private:
  static constexpr std::size_t npos = SIZE_MAX;

  struct Fit {
    bool found;
    std::size_t segment, block;
  };

  bool ready(const Block& b) const {
    return std::all_of(b.events.begin(), b.events.end(), [this](int e) { return device_.event_done(e); });
  }

  // The smallest free block of the stream and pool that holds `size`, the lowest address among equals.
  Fit best_fit(std::size_t size, bool small, int stream) const {
    Fit fit{false, 0, 0};
    std::size_t best_size = 0;
    std::uintptr_t best_address = 0;
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      const Segment& seg = segments_[s];
      if (seg.small != small || seg.stream != stream) continue;
      for (std::size_t i = 0; i < seg.blocks.size(); ++i) {
        const Block& b = seg.blocks[i];
        if (b.state != State::free || b.size < size) continue;
        const std::uintptr_t address = seg.base + b.offset;
        if (!fit.found || b.size < best_size || (b.size == best_size && address < best_address)) {
          fit = {true, s, i};
          best_size = b.size;
          best_address = address;
        }
      }
    }
    return fit;
  }

  // Hands out the free block `i` of segment `s` for a request of `size`, split when the rest
  // is worth keeping: at least 512 bytes in the small pool, more than 1 MiB in the large one.
  std::uintptr_t hand_out(std::size_t s, std::size_t i, std::size_t size) {
    Segment& seg = segments_[s];
    const std::size_t rest = seg.blocks[i].size - size;
    if (seg.small ? rest >= 512 : rest > MiB) {
      seg.blocks[i].size = size;
      seg.blocks.insert(seg.blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                        Block{seg.blocks[i].offset + size, rest, State::free, {}, {}});
    }
    Block& b = seg.blocks[i];
    b.state = State::allocated;
    stats_.allocated_bytes += b.size;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return seg.base + b.offset;
  }

  // The block `i` of segment `s` becomes free and merges with its free neighbours.
  void release(std::size_t s, std::size_t i) {
    std::vector<Block>& blocks = segments_[s].blocks;
    blocks[i].state = State::free;
    blocks[i].events.clear();
    if (i + 1 < blocks.size() && blocks[i + 1].state == State::free) {
      blocks[i].size += blocks[i + 1].size;
      blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    if (i > 0 && blocks[i - 1].state == State::free) {
      blocks[i - 1].size += blocks[i].size;
      blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  // Frees, one at a time, every pending block `which` chooses; merging may move the others, so
  // the search starts again after each.
  template <class Which>
  void free_pending(Which which) {
    for (bool again = true; again;) {
      again = false;
      for (std::size_t s = 0; s < segments_.size() && !again; ++s) {
        for (std::size_t i = 0; i < segments_[s].blocks.size() && !again; ++i) {
          const Block& b = segments_[s].blocks[i];
          if (b.state == State::pending && which(PendingBlock{segments_[s].base, b.offset, b.size, ready(b)})) {
            release(s, i);
            again = true;
          }
        }
      }
    }
  }

  std::pair<std::size_t, std::size_t> find(std::uintptr_t address, State state) const {
    for (std::size_t s = 0; s < segments_.size(); ++s)
      for (std::size_t i = 0; i < segments_[s].blocks.size(); ++i)
        if (segments_[s].base + segments_[s].blocks[i].offset == address && segments_[s].blocks[i].state == state)
          return {s, i};
    return {npos, npos};
  }

  Allocation out_of_memory(std::size_t) const {
    return {true, 0, stats_.allocated_bytes, stats_.reserved_bytes};
  }

  Device device_;
  std::vector<Segment> segments_;  // by base address
  Stats stats_;
};

}  // namespace caching_model
