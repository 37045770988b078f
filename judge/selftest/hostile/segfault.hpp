// Hostile: allocate() writes to an address no program owns.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: SEGV
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <cstddef>
#include <cstdint>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n == 4097) *reinterpret_cast<volatile std::size_t*>(std::uintptr_t{16}) = n;
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
