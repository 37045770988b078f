// The contract of exercise 05 as the simplest code that can be right: numbers instead of
// pointers, lists instead of bookkeeping. The model stage (stage5_model.cpp) runs every call on
// this and on the header under test, and compares what the contract lets a caller observe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace aligned_model {

/// The contract's rule for an alignment: a power of two.
inline bool valid_alignment(std::size_t align) { return align != 0 && (align & (align - 1)) == 0; }

/// AlignedAllocator<T, Align>, as far as its calls can be seen from outside: it asks the heap.
struct Allocator {
  std::size_t align;       // Align
  std::size_t type_size;   // sizeof(T)
  std::size_t type_align;  // alignof(T)

  /// Every block starts on a multiple of the larger of Align and alignof(T), and goes back with it.
  std::size_t alignment() const { return std::max(align, type_align); }

  /// The bytes allocate(n) asks the aligned operator new for, in one call; nullopt when
  /// n * sizeof(T) does not fit in a std::size_t: then it throws std::bad_array_new_length and
  /// asks the heap for nothing.
  std::optional<std::size_t> bytes(std::size_t n) const {
    if (n > std::numeric_limits<std::size_t>::max() / type_size) return std::nullopt;
    return n * type_size;
  }

  /// Any two instances with the same Align compare equal, whatever their T.
  bool operator==(const Allocator& other) const { return align == other.align; }
};

/// A block the upstream resource handed out: how it was asked for, and whether it is still held.
struct UpstreamBlock {
  std::size_t bytes, alignment;
  bool held;
};

/// The test's upstream resource: it hands out whatever it is asked for up to `limit` bytes and
/// `max_blocks` blocks in all, and refuses the rest with std::bad_alloc. A null upstream
/// (std::pmr::null_memory_resource()) refuses everything.
class Upstream {
 public:
  Upstream(bool null, std::size_t limit, std::size_t max_blocks) : null_(null), limit_(limit), max_blocks_(max_blocks) {}

  bool refuses(std::size_t bytes) const { return null_ || bytes > limit_ || blocks_.size() == max_blocks_; }

  /// The index of the block handed out, or nullopt when the request is refused.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment) {
    if (refuses(bytes)) {
      if (!null_) ++refused_;
      return std::nullopt;
    }
    blocks_.push_back({bytes, alignment, true});
    return blocks_.size() - 1;
  }

  void deallocate(std::size_t index) { blocks_[index].held = false; }

  /// Every block handed out so far, oldest first.
  const std::vector<UpstreamBlock>& blocks() const { return blocks_; }
  std::size_t refused() const { return refused_; }

 private:
  bool null_;
  std::size_t limit_, max_blocks_;
  std::vector<UpstreamBlock> blocks_;
  std::size_t refused_ = 0;
};

/// ArenaResource over `size` bytes at the address `buffer` (0 for no buffer).
class Arena {
 public:
  Arena(std::uintptr_t buffer, std::size_t size, Upstream& upstream) : buffer_(buffer), size_(size), upstream_(&upstream) {}

  enum class Where { buffer, upstream, refused };
  struct Placement {
    Where where;
    std::size_t offset;   // from the buffer's start, when the block comes from the buffer
    std::size_t padding;  // from the cursor to the first aligned address
    std::size_t left;     // what is left of the buffer past the cursor
  };

  /// Where a request goes, without going there. `alignment` must be valid: the caller checks.
  /// The block comes from the buffer when it can start inside it (padding < left: the end of
  /// the buffer is not the arena's, and with no buffer it is the null pointer) and the request
  /// fits in what is left after the padding; otherwise the request goes upstream, which may
  /// refuse it.
  Placement place(std::size_t bytes, std::size_t alignment) const {
    // The address is aligned, not the offset: the caller's buffer may start anywhere.
    const std::uintptr_t here = buffer_ + used_;
    const std::size_t padding = (alignment - here % alignment) % alignment;
    const std::size_t left = size_ - used_;
    if (padding < left && bytes <= left - padding) return {Where::buffer, used_ + padding, padding, left};
    return {upstream_->refuses(bytes) ? Where::refused : Where::upstream, 0, padding, left};
  }

  /// Carries out what place() said. A refused request changes nothing here, and the upstream
  /// counts it.
  void allocate(const Placement& placement, std::size_t bytes, std::size_t alignment) {
    switch (placement.where) {
      case Where::buffer:
        used_ = placement.offset + bytes;
        break;
      case Where::upstream:
        held_.push_back(*upstream_->allocate(bytes, alignment));
        upstream_bytes_ += bytes;
        break;
      case Where::refused:
        (void)upstream_->allocate(bytes, alignment);
        break;
    }
  }

  /// A spill whose record could not be made: the upstream's block goes straight back, and the
  /// arena is as it was.
  void spill_unrecorded(std::size_t bytes, std::size_t alignment) {
    upstream_->deallocate(*upstream_->allocate(bytes, alignment));
  }

  /// Every upstream block held goes back (in any order), and the buffer is rewound.
  void release() {
    for (std::size_t index : held_) upstream_->deallocate(index);
    held_.clear();
    upstream_bytes_ = 0;
    used_ = 0;
  }

  std::size_t used() const { return used_; }
  std::size_t upstream_bytes() const { return upstream_bytes_; }

 private:
  std::uintptr_t buffer_;
  std::size_t size_;
  Upstream* upstream_;
  std::size_t used_ = 0;
  std::size_t upstream_bytes_ = 0;
  std::vector<std::size_t> held_;  // the upstream's indices of the blocks held
};

}  // namespace aligned_model
