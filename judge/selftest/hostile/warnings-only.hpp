// Hostile: a correct arena that compiles with a warning (an unused variable). The learner's
// build does not treat warnings as errors: it passes, and the report shows the warning.
// Judge: exercise 1, stage 1
// Verdict: passed
// Report says: warning(s) in your file
#pragma once
#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  std::size_t doubled = n * 2;
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
