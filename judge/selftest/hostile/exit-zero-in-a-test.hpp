// Hostile: allocate() ends the whole test program with status 0, so a judge that trusted the
// exit status would see success. No test may count as passed without its result.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: exit status 0
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>
#include <cstdlib>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n == 4097) std::exit(0);
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
