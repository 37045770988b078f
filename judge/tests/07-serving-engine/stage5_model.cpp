// Stage 5 — against the model: random sequences of admit, append_token, fork, release and slot,
// misuse and failing heap allocations included, with prefix caching on and off, run on your
// manager and on model.hpp side by side (model_run.cpp). After every call each request's tokens,
// block table and slots, the free and cached counts, the stats, every block's reference count,
// the pool's idle blocks and the copies ordered must agree. This file only generates the
// sequences: it includes no header under test, so an edit of kv_cache_manager.hpp never
// recompiles it.
#include <array>
#include <cstddef>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"
#include "prefix_collisions.hpp"

namespace stage5_model {

using alloclab::test::model::choice;
using alloclab::test::model::in_range;
using alloclab::test::kv::kCollisions;
using alloclab::test::model::uniform_in;
using kv_model::kUnknown;
using kv_model::Op;
using K = Op::Kind;

int pick() { return choice({12, 1}) == 0 ? in_range(0, kUnknown) : kUnknown; }

int wide() { return static_cast<int>(choice({10, 1, 1})); }

int failure() { return choice({6, 1}) == 0 ? 0 : uniform_in(1, 7); }

rc::Gen<Op> ops() {
  return rc::gen::exec([] {
    const K kind = std::array{K::admit, K::append, K::fork, K::release, K::slot}[choice({5, 8, 3, 5, 1})];
    const int which = pick();
    switch (kind) {
      case K::admit: {
        const int base = in_range(0, 5);
        const int keep = in_range(0, 13);
        const int tail_length = in_range(0, 4);
        const int tail_bits = in_range(0, 8);
        Op op(kind, which, 0, base, keep, tail_length, tail_bits, failure());
        op.lead = choice({2, 1}) == 0 ? 0 : uniform_in<int>(1, 2 * kCollisions.size() + 1);
        op.wide = wide();
        return op;
      }
      case K::append: {
        const int other = in_range(0, 2);
        Op op(kind, which, other, 0, 0, 0, 0, failure());
        op.wide = wide();
        return op;
      }
      case K::fork: {
        const int other = pick();
        return Op(kind, which, other, 0, 0, 0, 0, failure());
      }
      case K::release: return Op(kind, which, 0, 0, 0, 0, 0, failure());
      default: return Op(kind, which, in_range(-1, 14), 0, 0, 0, 0, 0);  // slot
    }
  });
}

ALLOCLAB_MODEL_TEST(KVCacheModel, EveryCallAgreesWithTheModel, 7, (alloclab::test::model::Budget{500, 100}), [] {
  const std::size_t blocks_of = choice({1, 4, 24});
  const int blocks = blocks_of == 0 ? -1 : blocks_of == 1 ? in_range(0, 3) : in_range(3, 9);
  const std::size_t tokens_of = choice({1, 14, 8, 10});
  const int block_tokens = tokens_of < 3 ? static_cast<int>(tokens_of) : in_range(3, 5);
  const bool caching = *rc::gen::arbitrary<bool>();
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops());
  kv_model::run(blocks, block_tokens, caching, sequence);
})

}  // namespace stage5_model
