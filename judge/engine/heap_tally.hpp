// Who allocated from the heap: a scope that adds the allocations made while it lives to a count.
#pragma once

#include <cstdint>

namespace alloclab::engine {

/// Counts the heap allocations made while it lives into `into` (nothing without a counter): the
/// engine attributes each step's allocations to whoever made them.
class HeapTally {
 public:
  HeapTally(std::uint64_t (*count)(), std::uint64_t& into) noexcept
      : count_(count), into_(into), start_(count ? count() : 0) {}
  HeapTally(const HeapTally&) = delete;
  HeapTally& operator=(const HeapTally&) = delete;
  ~HeapTally() {
    if (count_) into_ += count_() - start_;
  }

 private:
  std::uint64_t (*count_)();
  std::uint64_t& into_;
  std::uint64_t start_;
};

}  // namespace alloclab::engine
