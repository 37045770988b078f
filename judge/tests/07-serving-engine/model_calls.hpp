// The calls of exercise 07's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the manager and on the model. Kept apart from the manager's header, so that an edit of
// the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <limits>
#include <vector>

namespace kv_model {

// One call of the contract. Requests are named by `pick`: 0 to 3 pick among the requests the
// model says are admitted (by index), 4 names an id that is not admitted, so that a sequence
// stays meaningful when shrinking deletes a call before it; admit and fork's child take the
// smallest id not admitted unless `pick` is 4, which names one that is (misuse). An admit's
// prompt is the first `keep` tokens of an earlier token sequence (`base`, 0 for none: a prompt
// admitted before, or a request's tokens) followed by `tail_length` tokens, 0 or 1, the bits of
// `tail_bits` from the lowest, so that prompts share prefixes and hit (plain numbers shrink much
// faster than a vector would). `lead` > 0 starts the prompt with one of the runs of
// prefix_collisions.hpp instead of an earlier sequence's tokens, so that prompts whose first
// tokens a weak hash cannot tell apart come up; `wide`
// adds kWide[wide] to each tail token and to append's token, so that tokens past 16 bits come
// up beside the ones they equal in their low bits. `fail` > 0 makes the fail-th heap allocation
// inside the call throw std::bad_alloc.
struct Op {
  enum Kind { admit, append, fork, release, slot } kind;
  int pick;
  int other;  // fork's child (a pick), slot's position, append's token
  int base;
  int keep;
  int tail_length;
  int tail_bits;
  int fail;
  int lead = 0;
  int wide = 0;
  Op(Kind k, int pick_, int other_, int base_, int keep_, int tail_length_, int tail_bits_, int fail_)
      : kind(k), pick(pick_), other(other_), base(base_), keep(keep_), tail_length(tail_length_),
        tail_bits(tail_bits_), fail(fail_) {}
};

/// What `wide` adds to a token: 0, or an offset past 16 bits (the low 16 bits of each are 0).
inline constexpr int kWide[] = {0, 1 << 16, std::numeric_limits<int>::min()};

constexpr int kUnknown = 4;  // a pick that names an id not admitted (or, for a new id, one that is)

/// Runs `ops` on a fresh manager of `blocks` blocks of `block_tokens` tokens and on the model,
/// comparing every observer after each call; fails the sequence (RapidCheck's way) at the first
/// difference. Sizes the contract refuses check that the constructor throws, and nothing more.
void run(int blocks, int block_tokens, bool caching, const std::vector<Op>& ops);

}  // namespace kv_model
