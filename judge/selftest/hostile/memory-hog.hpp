// Hostile: allocate() touches memory, 16 MiB at a time, and never gives it back, until the
// judge's limit on the resident size stops the program. The report names the limit.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: memory_mb
// Command line: no (it would wait out, or fill, the catalog's full limits)
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n != 4097) return;
  for (;;) {
    void* chunk = std::malloc(std::size_t{16} << 20);
    if (chunk == nullptr) continue;  // keep asking: the limit, not malloc, must end this
    std::memset(chunk, 0x5A, std::size_t{16} << 20);
  }
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
