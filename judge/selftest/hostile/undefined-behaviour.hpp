// Hostile: allocate() overflows a signed integer, which UndefinedBehaviorSanitizer reports.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: UndefinedBehaviorSanitizer
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <climits>
#include <cstddef>

namespace alloclab_hostile {
inline volatile int counter = INT_MAX;

inline void on_allocate(std::size_t n) {
  if (n == 4097) counter = counter + static_cast<int>(n % 2 + 1);
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
