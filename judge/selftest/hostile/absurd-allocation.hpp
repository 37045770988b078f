// Hostile: allocate() asks the heap for 16 TiB at once. The judge's memory limit refuses it,
// and the report names the limit.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: memory_mb
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>
#include <new>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n != 4097) return;
  void* huge = ::operator new((std::size_t{1} << 44) + n);
  ::operator delete(huge);
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
