// The calls of exercise 01's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the arena and on the model. Kept apart from the arena's header, like every test file
// but the seam (arena_under_test.cpp), so that an edit of the header recompiles neither.
#pragma once

#include <cstddef>
#include <vector>

namespace arena_model {

// One call of the contract. `pick` chooses a marker among those taken so far; one past the last
// stands for a marker from beyond the cursor.
struct Op {
  enum Kind { allocate, alloc_words, alloc_lines, reset, mark, rewind } kind;
  std::size_t n;      // bytes, or the count of alloc_array
  std::size_t align;  // allocate's alignment: a power of two, or a value the contract refuses
  std::size_t pick;
  Op(Kind k, std::size_t n_, std::size_t align_, std::size_t pick_) : kind(k), n(n_), align(align_), pick(pick_) {}
};

/// Runs `ops` on a fresh arena of `capacity` bytes and on the model, comparing every observer
/// after each call; fails the sequence (RapidCheck's way) at the first difference.
void run(std::size_t capacity, const std::vector<Op>& ops);

}  // namespace arena_model
