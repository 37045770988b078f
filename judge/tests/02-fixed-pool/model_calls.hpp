// The calls of exercise 02's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the pools and on the model. Kept apart from the pool's header, so that an edit of
// the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pool_model {

/// What a sequence is about: which class, and its constructor's arguments (an ObjectPool takes
/// `per_chunk` alone). A pool's constructor is called with the first `given` of its three
/// arguments; the others are then the defaults, 1024 and SIZE_MAX.
struct Start {
  enum Subject { fixed, shared, objects } subject;
  std::size_t block_size, per_chunk, max_chunks;
  long fail;  // the heap allocation inside the constructor that is refused (0: none)
  int given;
  // Where the heap puts the blocks the pool takes (model_heap.hpp): the n-th block taken inside
  // the pool's calls goes below every block before it when below[n] is set, else above.
  std::vector<bool> below;
  Start(Subject s, std::size_t b, std::size_t p, std::size_t m, long f, int g = 3)
      : subject(s), block_size(b), per_chunk(g < 2 ? 1024 : p), max_chunks(g < 3 ? SIZE_MAX : m), fail(f), given(g) {}
};

/// One call of the contract. `pick` chooses a live block (deallocate, destroy) or a block handed
/// out before (owns), and is create's value. For owns, `target` says what is asked about: 0 a
/// place `steps` strides and `into` bytes from that block, 1 nullptr, 2 another pool's block, 3 a
/// local variable, 4 (5) a place `into` bytes past the stride after the highest (before the
/// lowest) block its chunk has handed out. For create, `target` says what follows the value:
/// 0 Tag{}, 1 tag, 2 std::as_const(tag), 3 Refuse{} (the constructor throws), 4 `steps` (an int),
/// and 5 says that create gets no argument at all.
struct Op {
  enum Kind { allocate, deallocate, deallocate_null, owns, create, destroy, destroy_null } kind;
  long fail;  // allocate, create: the heap allocation inside the call that is refused (0: none)
  std::size_t pick;
  int steps;
  int into;  // 0: the start; 1, 2, 3, 4: 1 byte, a pointer's size, half a stride, a stride less 1
  int target;
  Op(Kind k, long f, std::size_t p, int s, int i, int t) : kind(k), fail(f), pick(p), steps(s), into(i), target(t) {}
};

/// Runs `ops` on a fresh pool built from `start` and on the model, comparing every observer
/// after each call; fails the sequence (RapidCheck's way) at the first difference.
void run(const Start& start, const std::vector<Op>& ops);

}  // namespace pool_model
