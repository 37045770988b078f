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

class Arena {
 public:
  Arena(std::size_t capacity, std::uintptr_t base) : capacity_(capacity), base_(base) {}

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

 private:
  void reclaim_from(std::size_t offset) {
    used_ = offset;
    // A block wholly past the cursor is gone; one a stale marker cuts through keeps its head.
    std::erase_if(live_, [&](const Block& b) { return b.offset >= offset; });
    for (Block& b : live_) b.n = std::min(b.n, offset - b.offset);
  }

  std::size_t capacity_;
  std::uintptr_t base_;
  std::size_t used_ = 0, peak_ = 0;
  std::vector<Block> live_;
};

/// The contract's rule for an alignment: a power of two.
inline bool valid_alignment(std::size_t align) { return align != 0 && (align & (align - 1)) == 0; }

}  // namespace arena_model
