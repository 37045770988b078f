// The calls of exercise 06's model stage: what stage5_model.cpp generates and model_run.cpp makes
// on the ring and on the model. Kept apart from the ring's header, like every test file but the
// seam (ring_under_test.cpp), so that an edit of the header recompiles neither.
#pragma once

#include <cstddef>
#include <vector>

namespace ring_model {

// One call of the contract. `pick` chooses a checkpoint among those taken so far, or says how far
// a stale position lies before the tail, a future one after the head, or a position into the
// bytes in use.
struct Op {
  enum Kind {
    allocate,          // r.allocate(n, align)
    allocate_default,  // r.allocate(n): the default alignment, 64
    allocate_most,     // r.allocate(n, align) with n the largest size that fits now (pick 0) or one more (pick 1)
    checkpoint,        // auto cK = r.checkpoint();
    reclaim_taken,     // r.reclaim(cK), a checkpoint taken earlier (stale once a later one is reclaimed)
    reclaim_all,       // r.reclaim(r.checkpoint())
    reclaim_between,   // a position strictly between the tail and the head, often inside a block
    reclaim_stale,     // at or before the last reclaimed position: ignored
    reclaim_future,    // after the head: ignored
  } kind;
  std::size_t n;
  std::size_t align;
  std::size_t pick;
  Op(Kind k, std::size_t n_, std::size_t align_, std::size_t pick_) : kind(k), n(n_), align(align_), pick(pick_) {}
};

/// Builds a ring with `asked` bytes and runs `ops` on it and on the model, comparing every
/// observer after each call; fails the sequence (RapidCheck's way) at the first difference.
void run(std::size_t asked, const std::vector<Op>& ops);

}  // namespace ring_model
