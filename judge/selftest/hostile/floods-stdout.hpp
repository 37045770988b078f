// Hostile: a correct arena that prints 8 MiB to standard output. The judge keeps only the
// head and tail of it, says so naming the limit, and still judges the tests: they pass.
// Judge: exercise 1, stage 1
// Verdict: passed
// Report says: output_bytes
#pragma once
#include <cstddef>
#include <cstdio>

namespace alloclab_hostile {
inline void on_allocate(std::size_t) {
  static bool flooded = false;
  if (flooded) return;
  flooded = true;
  for (int i = 0; i < 8 * 1024; ++i) std::printf("%01023d\n", i);
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
