// The calls of exercise 08's model stage: what stage7_model.cpp generates and model_run.cpp
// makes on the header and on the model. Kept apart from the header, so that an edit of it
// recompiles only model_run.cpp, not the generators.
#pragma once

#include <cstddef>
#include <vector>

namespace vm_model {

// One call. Requests are named by `pick`: 0 to 3 pick among the requests the model says are
// admitted (by index), kUnknown names an id that is not, so that a sequence stays meaningful
// when shrinking deletes a call before it; admit and fork's child take the smallest id not
// admitted unless their pick is kUnknown, which names one that is (misuse).
//   admit:   `other` tokens, max_tokens at most; kOverMax for max_tokens + 1.
//   grow:    `other` tokens more; kShrink for one fewer, kOverMax for max_tokens + 1.
//   fork:    `other` is the child's pick.
//   sleep:   bit i of `other` keeps the i-th admitted request; a `pick` of kUnknown keeps an
//            unknown id as well (misuse).
//   write, read: token `other % num_tokens` of the picked request (none when it has no token).
//   hold:    another user of the same physical memory creates a granule;
//   drop:    ... and releases the `other`-th it holds.
struct Op {
  enum Kind { admit, grow, fork, release, trim, sleep, wake, write, read, hold, drop } kind;
  int pick;
  int other;
};

constexpr int kUnknown = 4;
constexpr int kOverMax = -1;
constexpr int kShrink = -2;

/// The sizes of one sequence's memory and cache: a cache of `sequences` slices of `max_tokens`
/// tokens of `token_eighths` eighths of a page each, over granules of `granule_pages` pages, as
/// many as `granule_eighths` eighths of the reservation's slots (one at least): fewer granules
/// than slots, so that pressure, reclamation and refusals are frequent.
struct Setup {
  std::size_t granule_pages, granule_eighths, sequences, max_tokens, token_eighths;
};

/// Runs `ops` on a fresh PhysicalMemory and ContiguousKVCache and on the model, comparing every
/// observer after each call; fails the sequence (RapidCheck's way) at the first difference.
void run(const Setup& setup, const std::vector<Op>& ops);

}  // namespace vm_model
