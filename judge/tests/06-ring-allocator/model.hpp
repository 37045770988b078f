// The ring's contract, as one thread sees it, written as the simplest code that can be right:
// positions that only grow, a list of what each successful allocate did, and no cleverness. The
// model stage (stage5_model.cpp) makes every call on this and on the header under test, and
// compares what the contract lets a caller observe.
//
// The model works in offsets. The contract fixes the address (aligned up to `align`), but the
// buffer is page-aligned and no alignment above a page is accepted, so an offset is aligned
// exactly when its address is; the test checks that the buffer is page-aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace ring_model {

constexpr std::size_t kPage = 4096;

/// No process's address space holds a mapping this large (x86-64 gives user space 2^47 bytes, or
/// 2^56 with five-level paging): a constructor asked for it must throw std::bad_alloc.
constexpr std::size_t kUnmappable = std::size_t{1} << 60;

/// The capacity a ring built with `asked` has: `asked` rounded up to whole pages. nullopt when
/// the constructor must throw: std::invalid_argument for 0, std::bad_alloc for a size that
/// cannot be rounded up in a size_t or cannot be mapped.
inline std::optional<std::size_t> rounded_capacity(std::size_t asked) {
  if (asked == 0 || asked >= kUnmappable) return std::nullopt;
  return (asked + kPage - 1) / kPage * kPage;
}

/// Why allocate refuses a request, or `none` when it hands a block out.
enum class Refusal { none, zero_bytes, more_than_capacity, not_a_power_of_two, above_a_page, no_room };

/// What a call of allocate does, computed before it is made.
struct Placement {
  Refusal refusal = Refusal::none;
  std::uint64_t from = 0;   // the head before the call
  std::size_t offset = 0;   // the head's offset, head % capacity
  std::size_t skipped = 0;  // bytes jumped over at the end of the buffer when the block wraps
  std::size_t padding = 0;  // bytes before the block to align it
  std::size_t start = 0;    // the block's offset
  std::size_t n = 0;
  std::uint64_t end = 0;    // the head after the call, if it hands the block out
  bool wrapped() const { return skipped != 0; }  // offset 0 never wraps: n <= capacity
};

/// What AddressSanitizer must think of one byte of the buffer, from the most recent position
/// that maps to it (a position before the head and at most one lap behind it).
enum class Byte : unsigned char {
  untouched,  // no position maps to it yet: the head has never reached it
  skipped,    // in the end of the buffer that a wrapping block jumped over
  padding,    // before a block, to align it
  live,       // in a block handed out and not reclaimed
  reclaimed,  // in a block reclaimed before the last allocate that handed a block out
  reclaimed_lately,  // in a block reclaimed since then: the contract lets it be poisoned or not yet
};

class Ring {
 public:
  /// `capacity` is already rounded (rounded_capacity).
  explicit Ring(std::size_t capacity) : capacity_(capacity) {}

  /// What allocate(n, align) would do, without doing it.
  Placement place(std::size_t n, std::size_t align) const {
    Placement p;
    p.from = head_;
    p.n = n;
    if (n == 0) return refuse(p, Refusal::zero_bytes);
    if (n > capacity_) return refuse(p, Refusal::more_than_capacity);
    if (align == 0 || (align & (align - 1)) != 0) return refuse(p, Refusal::not_a_power_of_two);
    if (align > kPage) return refuse(p, Refusal::above_a_page);
    p.offset = static_cast<std::size_t>(head_ % capacity_);
    p.start = (p.offset + align - 1) / align * align;
    if (p.start + n > capacity_) {  // would cross the end: offset 0, which meets any alignment
      p.skipped = capacity_ - p.offset;
      p.start = 0;
    } else {
      p.padding = p.start - p.offset;
    }
    p.end = head_ + p.skipped + p.padding + n;
    if (p.end - tail_ > capacity_) return refuse(p, Refusal::no_room);
    return p;
  }

  /// Makes the call: the block's offset, or nullopt for a refusal (which changes nothing).
  std::optional<std::size_t> allocate(std::size_t n, std::size_t align) {
    const Placement p = place(n, align);
    if (p.refusal != Refusal::none) return std::nullopt;
    head_ = p.end;
    reclaimed_poisoned_ = tail_;
    placements_.push_back(p);
    // Forget what no offset maps to any more: wholly more than a lap behind the head.
    while (!placements_.empty() && placements_.front().end + capacity_ <= head_) placements_.erase(placements_.begin());
    return p.start;
  }

  /// Why reclaim(c) is ignored, if it is.
  enum class Ignored { no, not_after_the_tail, after_the_head };
  Ignored ignores(std::uint64_t c) const {
    if (c <= tail_) return Ignored::not_after_the_tail;
    if (c > head_) return Ignored::after_the_head;
    return Ignored::no;
  }

  void reclaim(std::uint64_t c) {
    if (ignores(c) == Ignored::no) tail_ = c;
  }

  std::uint64_t checkpoint() const { return head_; }
  std::uint64_t tail() const { return tail_; }
  std::size_t in_use() const { return static_cast<std::size_t>(head_ - tail_); }
  std::size_t capacity() const { return capacity_; }

  /// Every byte of the buffer, by offset, into `bytes` (resized to capacity()): what the last
  /// position that maps to it was used for.
  void bytes(std::vector<Byte>& bytes) const {
    bytes.resize(capacity_);
    Byte* at = bytes.data();  // plain indexing and memset: this runs after every call, unoptimised
    std::memset(at, static_cast<int>(Byte::untouched), capacity_);
    const std::uint64_t lap_ago = head_ > capacity_ ? head_ - capacity_ : 0;
    auto mark = [&](std::uint64_t from, std::uint64_t to, Byte what) {
      for (std::uint64_t pos = from < lap_ago ? lap_ago : from; pos < to; ++pos) {
        Byte b = what;
        if (what == Byte::live && pos < tail_) b = pos < reclaimed_poisoned_ ? Byte::reclaimed : Byte::reclaimed_lately;
        at[pos % capacity_] = b;
      }
    };
    for (const Placement& p : placements_) {
      mark(p.from, p.from + p.skipped, Byte::skipped);
      mark(p.from + p.skipped, p.from + p.skipped + p.padding, Byte::padding);
      mark(p.end - p.n, p.end, Byte::live);
    }
  }

 private:
  static Placement refuse(Placement p, Refusal why) {
    p.refusal = why;
    return p;
  }

  std::size_t capacity_;
  std::uint64_t head_ = 0, tail_ = 0;
  // The tail when the last block was handed out: the contract has every byte reclaimed before
  // it poisoned by then ("at the latest once the producer's next allocate has run").
  std::uint64_t reclaimed_poisoned_ = 0;
  std::vector<Placement> placements_;  // the successful calls, oldest first, back to a lap ago
};

}  // namespace ring_model
