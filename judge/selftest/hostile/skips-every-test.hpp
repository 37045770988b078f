// Hostile: a static initializer registers a global test environment that skips every test,
// so none fails. A skipped test has not passed.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: not run
// Report says: never started
#pragma once
#include <gtest/gtest.h>

#include <cstddef>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) { throw 0; }
inline bool frees_its_buffer() { return true; }

class SkipEverything : public ::testing::Environment {
 public:
  void SetUp() override { GTEST_SKIP() << "nothing to see here"; }
};
inline ::testing::Environment* const skipper = ::testing::AddGlobalTestEnvironment(new SkipEverything);
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
