// Hostile: a correct arena whose destructor never frees its buffer. Every test passes, and
// LeakSanitizer reports the leaks when the test program exits: the stage must still fail.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: problem
// Report says: LeakSanitizer
#pragma once
#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) {}
inline bool frees_its_buffer() { return false; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
