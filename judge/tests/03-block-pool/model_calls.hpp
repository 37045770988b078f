// The calls of exercise 03's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the pool, the cache and the model. Kept apart from block_pool.hpp, so that an edit of
// the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <cstddef>
#include <vector>

namespace block_pool_model {

// One call. `which` says what `pick` chooses among: 0 a block in use or a live sequence (when
// there is none, the call is left out), 1 a free block or a freed sequence (when there is none, a
// number of the next kind serves), 2 a number outside the pool or an id no live sequence has.
// `fail` > 0 makes that heap allocation inside the call fail.
struct Op {
  enum Kind {
    allocate, retain, release, make_writable, refcount, new_pool,
    create, append, fork, free, length, token, block_table, new_cache
  } kind;
  int n;  // allocate's count, token's position (when `which` is 0), or a constructor's sizes
  int pick;
  int which;
  int fail;
  Op(Kind k, int n_, int pick_, int which_, int fail_) : kind(k), n(n_), pick(pick_), which(which_), fail(fail_) {}
};

// How many constructor calls of each class model_run.cpp knows (op.n picks one): sizes that
// are valid, not positive, or whose buffer size overflows.
constexpr int kPoolSizeCases = 5;
constexpr int kCacheSizeCases = 11;

/// Runs `ops` on a fresh `BlockPool(pool_blocks)`, a fresh `PagedKVCache(cache_blocks,
/// block_tokens, token_bytes)` and the model, comparing every observer after each call; fails the
/// sequence (RapidCheck's way) at the first difference.
void run(int pool_blocks, int cache_blocks, int block_tokens, std::size_t token_bytes, const std::vector<Op>& ops);

}  // namespace block_pool_model
