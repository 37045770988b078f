// Stage 5 — against the model: random sequences of every call of BlockPool and PagedKVCache,
// misuse and a failing heap included, run on your header and on model.hpp side by side
// (model_run.cpp). After every call, everything a caller can observe must agree: what each call
// returned or threw, num_free(), every refcount(), and for every live sequence its length, its
// block table, the bytes of each token and where each token lies in the cache's buffer. This file
// only generates the sequences: it includes no header under test, so an edit of block_pool.hpp
// never recompiles it.
#include <array>
#include <climits>
#include <cstddef>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage5_model {

using alloclab::test::model::choice;
using alloclab::test::model::uniform_in;
using block_pool_model::Op;
using K = Op::Kind;

// 0: the heap works; k: the k-th heap allocation inside the call fails.
int failure() { return static_cast<int>(choice({21, 1, 1, 1})); }
// Which one of the blocks or sequences a call names: most often the first, which model_run.cpp
// makes the one where the call has most to show.
int pick() { return static_cast<int>(choice({4, 2, 1, 1, 1, 1})); }
// Mostly a block in use or a live sequence; sometimes a free block or a freed sequence, or a
// number outside the pool or an id never given out.
int which() { return static_cast<int>(choice({8, 1, 1})); }
int misuse() { return 1 + static_cast<int>(choice({1, 1})); }
int count() { return std::array{0, 1, 2, 3, 4, -1, INT_MIN}[choice({2, 4, 2, 1, 1, 1, 1})]; }

// The calls of one sequence: of the pool and the cache (`pool` and `cache` both), or of one of them
// only, so that a sequence of the cache's calls is long enough for its longer stories (a fork,
// appends, a free, an append that must copy).
rc::Gen<Op> ops(bool pool, bool cache) {
  return rc::gen::exec([pool, cache] {
    const std::size_t p = pool ? 1 : 0, c = cache ? 1 : 0;
    constexpr std::array kinds{K::allocate, K::retain, K::release, K::make_writable, K::refcount, K::new_pool,
                               K::create, K::append, K::fork, K::free, K::length, K::token, K::block_table,
                               K::new_cache};
    const K kind = kinds[choice({3 * p, 2 * p, 3 * p, 3 * p, 1 * p, 1 * p,  // the pool's calls
                                 4 * c, 10 * c, 6 * c, 6 * c, 1 * c, 1 * c, 1 * c, 1 * c})];
    switch (kind) {
      case K::allocate: {
        const int n = count();
        const int picked = pick();
        return Op(kind, n, picked, 0, failure());
      }
      case K::refcount: return Op(kind, 0, pick(), 2, 0);
      case K::new_pool: {
        const int n = uniform_in(0, block_pool_model::kPoolSizeCases);
        const int picked = pick();
        return Op(kind, n, picked, 0, failure());
      }
      case K::create: {
        const int picked = pick();
        return Op(kind, 0, picked, 0, failure());
      }
      case K::length:
      case K::block_table: {
        const int picked = pick();
        return Op(kind, 0, picked, misuse(), 0);
      }
      case K::token: {
        const int n = uniform_in(0, 5);
        const int picked = pick();
        return Op(kind, n, picked, static_cast<int>(choice({1, 1, 1})), 0);
      }
      case K::new_cache: {
        const int n = uniform_in(0, block_pool_model::kCacheSizeCases);
        const int picked = pick();
        return Op(kind, n, picked, 0, failure());
      }
      default: {  // retain, release, make_writable, append, fork, free
        const int picked = pick();
        const int named = which();
        return Op(kind, 0, picked, named, failure());
      }
    }
  });
}

// 200 sequences of up to 60 calls each, the first as long as the last: the cache's stories are
// long (a copy-on-write into a block a free just gave back takes seven calls at least), and the
// short sequences RapidCheck starts with would miss them.
ALLOCLAB_MODEL_TEST(BlockPoolModel, EveryCallAgreesWithTheModel, 3, (alloclab::test::model::Budget{200, 60}), [] {
  const int pool_blocks = uniform_in(0, 7);
  // Few blocks, so that they run out and come back often; blocks of 2 or 3 tokens, so that a
  // forked sequence's last block is often partly filled.
  const int cache_blocks = std::array{2, 3, 1, 4}[choice({6, 3, 1, 1})];
  const int block_tokens = std::array{2, 3, 1}[choice({4, 2, 1})];
  const auto token_bytes = static_cast<std::size_t>(uniform_in(1, 5));
  const std::size_t calls_of = choice({1, 3, 1});  // both classes, the cache's only, the pool's only
  const auto sequence = *rc::gen::resize(60, rc::gen::container<std::vector<Op>>(ops(calls_of != 1, calls_of != 2)));
  block_pool_model::run(pool_blocks, cache_blocks, block_tokens, token_bytes, sequence);
})

}  // namespace stage5_model
