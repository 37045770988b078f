// Hostile: allocate() calls std::abort().
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: SIGABRT
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>
#include <cstdlib>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n == 4097) std::abort();
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
