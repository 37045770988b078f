// Hostile: allocate() never returns. Every test that allocates hangs until the judge's time
// limit stops the whole process group.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: timeout
// Report says: test_timeout_seconds
// Command line: no (it would wait out, or fill, the catalog's full limits)
#pragma once
#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) {
  volatile bool forever = true;
  while (forever) {
  }
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
