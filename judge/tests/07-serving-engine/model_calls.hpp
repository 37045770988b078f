// The calls of exercise 07's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the manager and on the model. Kept apart from the manager's header, so that an edit of
// the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <utility>
#include <vector>

namespace kv_model {

// One call of the contract. Requests are named by `pick`: 0 to 3 pick among the requests the
// model says are admitted (by index), 4 names an id that is not admitted, so that a sequence
// stays meaningful when shrinking deletes a call before it; admit and fork's child take the
// smallest id not admitted unless `pick` is 4, which names one that is (misuse). An admit's
// prompt is the first `keep` tokens of an earlier token sequence (`base`, 0 for none: a prompt
// admitted before, or a request's tokens) followed by `tail`, so that prompts share prefixes and
// hit. `fail` > 0 makes the fail-th heap allocation inside the call throw std::bad_alloc.
struct Op {
  enum Kind { admit, append, fork, release, slot } kind;
  int pick;
  int other;  // fork's child (a pick), slot's position, append's token
  int base;
  int keep;
  std::vector<int> tail;
  int fail;
  Op(Kind k, int pick_, int other_, int base_, int keep_, std::vector<int> tail_, int fail_)
      : kind(k), pick(pick_), other(other_), base(base_), keep(keep_), tail(std::move(tail_)), fail(fail_) {}
};

constexpr int kUnknown = 4;  // a pick that names an id not admitted (or, for a new id, one that is)

/// Runs `ops` on a fresh manager of `blocks` blocks of `block_tokens` tokens and on the model,
/// comparing every observer after each call; fails the sequence (RapidCheck's way) at the first
/// difference. Sizes the contract refuses check that the constructor throws, and nothing more.
void run(int blocks, int block_tokens, bool caching, const std::vector<Op>& ops);

}  // namespace kv_model
