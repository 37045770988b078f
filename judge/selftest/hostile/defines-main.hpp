// Hostile: brings its own main(), which runs only the framework's canary and none of the
// stage's tests. Its report is complete and shows no failure: only comparing the tests that
// ran with the tests the suite contains reveals that nothing was tested.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: not run
// Report says: did not run
#pragma once
#include <gtest/gtest.h>

#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) { throw 0; }
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"

// Weak, so that each of the test program's translation units may carry it and the linker
// still prefers it to the framework's own main().
__attribute__((weak)) int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(filter, "AllocLabCanary.*");
  return RUN_ALL_TESTS();
}
