// Hostile: a static initializer ends the program with status 0 before any test starts.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: problem
// Report says: status 0 before writing its report
#pragma once
#include <cstddef>
#include <cstdlib>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) {}
inline bool frees_its_buffer() { return true; }
inline const bool gone = (std::_Exit(0), true);
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
