// Hostile: the reference arena, but its constructor never returns. Every test constructs an
// arena, so every test of every stage hangs: the judge must see that the hang is shared and
// spend one time limit on the whole exercise, not one per test (test_hangs.py checks the
// bound with the catalog's own limit; here one stage is judged, as for every hostile file).
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: timeout
// Report says: test_timeout_seconds
// Command line: no (it would wait out the catalog's full limit)
#pragma once

#include <cstddef>

#define Arena ReferenceArena
#include "../../../solutions/01-arena/arena.hpp"
#undef Arena

namespace alloclab {

class Arena : public ReferenceArena {
 public:
  explicit Arena(std::size_t capacity) : ReferenceArena(never_returns(capacity)) {}

 private:
  static std::size_t never_returns(std::size_t capacity) {
    volatile bool forever = true;
    while (forever) {
    }
    return capacity;
  }
};

}  // namespace alloclab
