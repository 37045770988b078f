// Hostile: a file with a syntax error: nothing can be built, so nothing can pass.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: not built
// Report says: does not compile
#pragma once
#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) { return n +; }
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
