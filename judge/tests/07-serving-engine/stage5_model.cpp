// Stage 5 — against the model: random sequences of admit, append_token, fork, release and slot,
// misuse and failing heap allocations included, with prefix caching on and off, run on your
// manager and on model.hpp side by side (model_run.cpp). After every call each request's tokens,
// block table and slots, the free and cached counts, the stats, every block's reference count,
// the pool's idle blocks and the copies ordered must agree. This file only generates the
// sequences: it includes no header under test, so an edit of kv_cache_manager.hpp never
// recompiles it.
#include <cstddef>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using kv_model::kUnknown;
using kv_model::Op;

rc::Gen<int> picks() {
  return rc::gen::weightedOneOf<int>({{12, rc::gen::inRange(0, kUnknown)}, {1, rc::gen::just(kUnknown)}});
}

rc::Gen<int> failures() {
  return rc::gen::weightedOneOf<int>({{12, rc::gen::just(0)}, {1, rc::gen::inRange(1, 9)}});
}

rc::Gen<Op> ops() {
  using K = Op::Kind;
  auto none = rc::gen::just(0);
  auto op = [&](K kind, rc::Gen<int> pick, rc::Gen<int> other, rc::Gen<int> fail) {
    return rc::gen::construct<Op>(rc::gen::just(kind), pick, other, none, none, none, none, fail);
  };
  return rc::gen::weightedOneOf<Op>({
      {5, rc::gen::construct<Op>(rc::gen::just(K::admit), picks(), none, rc::gen::inRange(0, 5),
                                 rc::gen::inRange(0, 13), rc::gen::inRange(0, 4), rc::gen::inRange(0, 8), failures())},
      {8, op(K::append, picks(), rc::gen::inRange(0, 2), failures())},
      {3, op(K::fork, picks(), picks(), failures())},
      {5, op(K::release, picks(), none, failures())},
      {1, op(K::slot, picks(), rc::gen::inRange(-1, 14), none)},
  });
}

ALLOCLAB_MODEL_TEST(KVCacheModel, EveryCallAgreesWithTheModel, 7, (alloclab::test::model::Budget{150, 100}), [] {
  const int blocks = *rc::gen::weightedOneOf<int>(
      {{1, rc::gen::just(-1)}, {4, rc::gen::inRange(0, 3)}, {24, rc::gen::inRange(3, 9)}});
  const int block_tokens = *rc::gen::weightedOneOf<int>(
      {{1, rc::gen::just(0)}, {12, rc::gen::just(1)}, {12, rc::gen::just(2)}, {6, rc::gen::inRange(3, 5)}});
  const bool caching = *rc::gen::arbitrary<bool>();
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops());
  kv_model::run(blocks, block_tokens, caching, sequence);
})

}  // namespace stage5_model
