// Hostile: allocate() recurses without end until the stack runs out.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: stack-overflow
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>

namespace alloclab_hostile {
inline volatile bool keep_going = true;

inline std::size_t dive(std::size_t depth) {
  volatile char frame[512];
  frame[depth % sizeof frame] = static_cast<char>(depth);
  return keep_going ? dive(depth + 1) + frame[0] : depth;
}

inline void on_allocate(std::size_t n) {
  if (n == 4097) (void)dive(n);
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
