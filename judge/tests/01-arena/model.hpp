// The arena's contract as the simplest code that can be right: offsets instead of pointers, a
// list of live blocks, no cleverness. The model stage (stage5_model.cpp) runs every call on this
// and on the header under test, and compares what the contract lets a caller observe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace arena_model {

struct Block {
  std::size_t offset, n;  // from the buffer's start
};

/// What AddressSanitizer can show of the buffer once an arena has poisoned and unpoisoned
/// exactly what the contract says. ASan keeps, per granule of 8 bytes, how many of its first
/// bytes are addressable, so it rounds a region that starts or ends inside a granule: unpoisoning
/// makes the granule's bytes before the region's end addressable too, and poisoning a granule's
/// end leaves it alone unless the granule's addressable bytes all lie in the region. So padding
/// that shares a granule with a later block stays addressable, even after a rewind reclaims that
/// block: the rewind poisons from the marker on, past the padding. The model stage lets a byte
/// that is not live stay addressable only where this says so.
class Shadow {
 public:
  explicit Shadow(std::size_t bytes) : addressable_((bytes + 7) / 8, 0) {}

  void unpoison(std::size_t from, std::size_t to) {
    if (from >= to) return;
    for (std::size_t g = from / 8; g * 8 < to; ++g) {
      const std::size_t end = std::min<std::size_t>(to - g * 8, 8);
      addressable_[g] = end == 8 ? 8 : std::max(addressable_[g], end);
    }
  }

  void poison(std::size_t from, std::size_t to) {
    if (from >= to) return;
    for (std::size_t g = from / 8; g * 8 < to; ++g) {
      const std::size_t start = from > g * 8 ? from - g * 8 : 0, end = std::min<std::size_t>(to - g * 8, 8);
      std::size_t& k = addressable_[g];
      if (end == 8 || (k < 8 && k <= end)) k = std::min(k, start);
    }
  }

  bool poisoned(std::size_t byte) const { return byte % 8 >= addressable_[byte / 8]; }

 private:
  std::vector<std::size_t> addressable_;  // per granule: how many of its first bytes
};

class Arena {
 public:
  Arena(std::size_t capacity, std::uintptr_t base) : capacity_(capacity), base_(base), shadow_(capacity) {}

  /// The offset of the block handed out, or nullopt when the request does not fit (the
  /// arena then stays as it was). `align` must be a power of two: the caller checks.
  std::optional<std::size_t> allocate(std::size_t n, std::size_t align) {
    // The address is aligned, not the offset: padding depends on where the buffer lies.
    const std::uintptr_t here = base_ + used_;
    const std::size_t padding = (align - here % align) % align;
    const std::size_t left = capacity_ - used_;
    if (padding > left || n > left - padding) return std::nullopt;
    const std::size_t offset = used_ + padding;
    used_ = offset + n;
    peak_ = std::max(peak_, used_);
    live_.push_back({offset, n});
    shadow_.unpoison(offset, offset + n);
    return offset;
  }

  void reset() { reclaim_from(0); }

  std::size_t mark() const { return used_; }

  /// A marker beyond the cursor is ignored; any other brings the cursor back to it.
  void rewind(std::size_t marker) {
    if (marker <= used_) reclaim_from(marker);
  }

  std::size_t used() const { return used_; }
  std::size_t peak() const { return peak_; }
  std::size_t capacity() const { return capacity_; }
  /// The blocks handed out and not reclaimed, in the order they were handed out.
  const std::vector<Block>& live() const { return live_; }
  /// What ASan can show of the buffer when the arena poisons exactly as the contract says.
  const Shadow& shadow() const { return shadow_; }

 private:
  void reclaim_from(std::size_t offset) {
    shadow_.poison(offset, used_);
    used_ = offset;
    // A block wholly past the cursor is gone; one a stale marker cuts through keeps its head.
    std::erase_if(live_, [&](const Block& b) { return b.offset >= offset; });
    for (Block& b : live_) b.n = std::min(b.n, offset - b.offset);
  }

  std::size_t capacity_;
  std::uintptr_t base_;
  std::size_t used_ = 0, peak_ = 0;
  std::vector<Block> live_;
  Shadow shadow_;
};

/// The contract's rule for an alignment: a power of two.
inline bool valid_alignment(std::size_t align) { return align != 0 && (align & (align - 1)) == 0; }

}  // namespace arena_model
