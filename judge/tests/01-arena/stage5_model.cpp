// Stage 5 — against the model: random sequences of allocate, alloc_array, reset, mark and rewind,
// misuse included, run on your arena and on model.hpp side by side (model_run.cpp). After every
// call the offsets handed out, used(), peak(), capacity() and AddressSanitizer's view of every
// byte must agree. This file only generates the sequences: it includes no header under test, so
// an edit of arena.hpp never recompiles it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using arena_model::Op;

rc::Gen<std::size_t> sizes() {
  return rc::gen::weightedOneOf<std::size_t>({
      {6, rc::gen::inRange<std::size_t>(0, 100)},
      {2, rc::gen::inRange<std::size_t>(100, 1100)},
      {1, rc::gen::map(rc::gen::inRange<std::size_t>(0, 8), [](std::size_t k) { return SIZE_MAX - k; })},
  });
}

rc::Gen<std::size_t> alignments() {
  return rc::gen::weightedOneOf<std::size_t>({
      {8, rc::gen::map(rc::gen::inRange(0, 14), [](int k) { return std::size_t{1} << k; })},
      {1, rc::gen::element<std::size_t>(0, 3, 6, 48, 4095)},
      // Beyond a page: only in the arena of a MiB below does the address's alignment, not the
      // offset's, decide where such a block lands, whatever page the buffer starts on.
      {1, rc::gen::map(rc::gen::inRange(14, 21), [](int k) { return std::size_t{1} << k; })},
  });
}

rc::Gen<std::size_t> counts() {
  return rc::gen::weightedOneOf<std::size_t>({
      {6, rc::gen::inRange<std::size_t>(0, 20)},
      {1, rc::gen::map(rc::gen::inRange<std::size_t>(0, 4), [](std::size_t k) { return SIZE_MAX / 64 + k; })},
  });
}

rc::Gen<Op> ops() {
  using K = Op::Kind;
  auto op = [](rc::Gen<K> kind) {
    return rc::gen::construct<Op>(kind, sizes(), alignments(), rc::gen::inRange<std::size_t>(0, 4));
  };
  return rc::gen::weightedOneOf<Op>({
      {6, op(rc::gen::just(K::allocate))},
      {1, rc::gen::construct<Op>(rc::gen::just(K::alloc_words), counts(), rc::gen::just<std::size_t>(8),
                                 rc::gen::just<std::size_t>(0))},
      {1, rc::gen::construct<Op>(rc::gen::just(K::alloc_lines), counts(), rc::gen::just<std::size_t>(64),
                                 rc::gen::just<std::size_t>(0))},
      {1, op(rc::gen::just(K::reset))},
      {2, op(rc::gen::just(K::mark))},
      {2, op(rc::gen::just(K::rewind))},
  });
}

rc::Gen<std::size_t> capacities() {
  return rc::gen::weightedOneOf<std::size_t>({
      {3, rc::gen::just<std::size_t>(0)},
      {40, rc::gen::inRange<std::size_t>(1, 300)},
      {20, rc::gen::inRange<std::size_t>(300, 2049)},
      {10, rc::gen::just<std::size_t>(4096)},
      {2, rc::gen::just<std::size_t>((std::size_t{1} << 20) + 4096)},
  });
}

ALLOCLAB_MODEL_TEST(ArenaModel, EveryCallAgreesWithTheModel, 1, {}, [] {
  const auto capacity = *capacities();
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops());
  arena_model::run(capacity, sequence);
})

}  // namespace stage5_model
