// Stage 5 — against the model: random sequences of every call of BlockPool and PagedKVCache,
// misuse and a failing heap included, run on your header and on model.hpp side by side
// (model_run.cpp). After every call, everything a caller can observe must agree: what each call
// returned or threw, num_free(), every refcount(), and for every live sequence its length, its
// block table, the bytes of each token and where each token lies in the cache's buffer. This file
// only generates the sequences: it includes no header under test, so an edit of block_pool.hpp
// never recompiles it.
#include <climits>
#include <cstddef>
#include <utility>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using block_pool_model::Op;

// An int in [min, max), each as likely, shrinking towards min. RapidCheck's inRange draws from a
// range that grows with the size of the case, so that a small case only sees values near min:
// these draw from the whole range whatever the size.
rc::Gen<int> uniform(int min, int max) { return rc::gen::resize(100, rc::gen::inRange(min, max)); }

// One of the values, each as often as its weight, shrinking towards the ones listed first. Not
// RapidCheck's element or weightedOneOf, which never shrink their choice, nor a map of a
// uniform number, which would try many shrinks that give the same value: each try replays the
// whole sequence of calls.
rc::Gen<int> weighted(std::vector<std::pair<int, int>> weights_and_values) {
  std::vector<int> weights, values;
  int total = 0;
  for (const auto& [weight, value] : weights_and_values) {
    weights.push_back(weight);
    values.push_back(value);
    total += weight;
  }
  const rc::Gen<int> index([weights, total](const rc::Random& random, int) {
    int k = static_cast<int>(rc::Random(random).next() % static_cast<rc::Random::Number>(total));
    std::size_t i = 0;
    while (k >= weights[i]) k -= weights[i++];
    return rc::shrinkable::shrinkRecur(static_cast<int>(i), [](int j) { return rc::shrink::towards(j, 0); });
  });
  return rc::gen::map(index, [values](int i) { return values[static_cast<std::size_t>(i)]; });
}

// 0: the heap works; k: the k-th heap allocation inside the call fails.
rc::Gen<int> failures() { return weighted({{21, 0}, {1, 1}, {1, 2}, {1, 3}}); }
// Which one of the blocks or sequences a call names: most often the first, which model_run.cpp
// makes the one where the call has most to show.
rc::Gen<int> picks() { return weighted({{4, 0}, {2, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}}); }
// Mostly a block in use or a live sequence; sometimes a free block or a freed sequence, or a
// number outside the pool or an id never given out.
rc::Gen<int> whiches() { return weighted({{8, 0}, {1, 1}, {1, 2}}); }
rc::Gen<int> misuse() { return weighted({{1, 1}, {1, 2}}); }
rc::Gen<int> counts() { return weighted({{2, 0}, {4, 1}, {2, 2}, {1, 3}, {1, 4}, {1, -1}, {1, INT_MIN}}); }

// The calls of one sequence: of the pool and the cache (`pool` and `cache` both), or of one of them
// only, so that a sequence of the cache's calls is long enough for its longer stories (a fork,
// appends, a free, an append that must copy).
rc::Gen<Op> ops(bool pool, bool cache) {
  using K = Op::Kind;
  auto op = [](K kind, rc::Gen<int> n, rc::Gen<int> which, rc::Gen<int> fail) {
    return rc::gen::construct<Op>(rc::gen::just(kind), std::move(n), picks(), std::move(which), std::move(fail));
  };
  const auto none = [] { return rc::gen::just(0); };
  const std::size_t p = pool ? 1 : 0, c = cache ? 1 : 0;
  return rc::gen::weightedOneOf<Op>({
      {3 * p, op(K::allocate, counts(), none(), failures())},
      {2 * p, op(K::retain, none(), whiches(), failures())},
      {3 * p, op(K::release, none(), whiches(), failures())},
      {3 * p, op(K::make_writable, none(), whiches(), failures())},
      {1 * p, op(K::refcount, none(), rc::gen::just(2), none())},
      {1 * p, op(K::new_pool, uniform(0, block_pool_model::kPoolSizeCases), none(), failures())},
      {4 * c, op(K::create, none(), none(), failures())},
      {10 * c, op(K::append, none(), whiches(), failures())},
      {6 * c, op(K::fork, none(), whiches(), failures())},
      {6 * c, op(K::free, none(), whiches(), failures())},
      {1 * c, op(K::length, none(), misuse(), none())},
      {1 * c, op(K::token, uniform(0, 5), weighted({{1, 0}, {1, 1}, {1, 2}}), none())},
      {1 * c, op(K::block_table, none(), misuse(), none())},
      {1 * c, op(K::new_cache, uniform(0, block_pool_model::kCacheSizeCases), none(), failures())},
  });
}

// 200 sequences of up to 60 calls each, the first as long as the last: the cache's stories are
// long (a copy-on-write into a block a free just gave back takes seven calls at least), and the
// short sequences RapidCheck starts with would miss them.
ALLOCLAB_MODEL_TEST(BlockPoolModel, EveryCallAgreesWithTheModel, 3, (alloclab::test::model::Budget{200, 60}), [] {
  const int pool_blocks = *uniform(0, 7);
  // Few blocks, so that they run out and come back often; blocks of 2 or 3 tokens, so that a
  // forked sequence's last block is often partly filled.
  const int cache_blocks = *weighted({{6, 2}, {3, 3}, {1, 1}, {1, 4}});
  const int block_tokens = *weighted({{4, 2}, {2, 3}, {1, 1}});
  const auto token_bytes = static_cast<std::size_t>(*uniform(1, 5));
  const int calls_of = *weighted({{1, 0}, {3, 1}, {1, 2}});  // both classes, the cache's only, the pool's only
  const auto sequence = *rc::gen::resize(60, rc::gen::container<std::vector<Op>>(ops(calls_of != 1, calls_of != 2)));
  block_pool_model::run(pool_blocks, cache_blocks, block_tokens, token_bytes, sequence);
})

}  // namespace stage5_model
