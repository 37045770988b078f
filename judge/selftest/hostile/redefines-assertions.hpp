// Hostile: an arena that hands out nothing, and assertion macros rewritten so that no test
// can fail. The judge compares the framework's macros with and without this file.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: tampering
// Report says: changes the test framework
#pragma once
#include <gtest/gtest.h>

#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) { throw 0; }
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"

#undef EXPECT_EQ
#define EXPECT_EQ(a, b) \
  if (true) {           \
  } else                \
    std::cerr
#undef ASSERT_NE
#define ASSERT_NE(a, b) \
  if (true) {           \
  } else                \
    std::cerr
