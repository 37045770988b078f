// Stage 5 — against the model: random sequences of every call of the ring's contract, made by one
// thread (allocations that fit, that wrap to offset 0, that the contract refuses; checkpoints;
// reclaims of a step, of everything, of a position between two steps, of stale and future
// positions), run on your ring and on model.hpp side by side (model_run.cpp). After every call the
// offsets handed out, checkpoint(), in_use(), capacity() and AddressSanitizer's view of every byte
// of the buffer must agree; at the end the destructor must give the buffer back with munmap,
// unpoisoned. This file only generates the sequences: it includes no header under test, so an
// edit of ring_allocator.hpp never recompiles it.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using ring_model::Op;

// Sizes for a ring of `capacity` bytes: small blocks, blocks that soon reach the end of the
// buffer and wrap, sizes around the capacity, 0, and sizes whose sums wrap around 2^64.
rc::Gen<std::size_t> sizes(std::size_t capacity) {
  return rc::gen::weightedOneOf<std::size_t>({
      {6, rc::gen::inRange<std::size_t>(1, 65)},
      {4, rc::gen::inRange<std::size_t>(65, capacity / 2)},
      {3, rc::gen::inRange<std::size_t>(capacity / 2, capacity + 1)},
      {1, rc::gen::inRange<std::size_t>(capacity - 2, capacity + 3)},
      {1, rc::gen::just<std::size_t>(0)},
      {1, rc::gen::map(rc::gen::inRange<std::size_t>(0, 8), [](std::size_t k) { return SIZE_MAX - k; })},
  });
}

// Powers of two up to a page, and alignments the contract refuses. Large ones often: padded up
// from an offset near the end, a block then no longer fits before the end although its size does.
rc::Gen<std::size_t> alignments() {
  return rc::gen::weightedOneOf<std::size_t>({
      {5, rc::gen::map(rc::gen::inRange(0, 4), [](int k) { return std::size_t{1} << k; })},  // blocks that share granules
      {6, rc::gen::map(rc::gen::inRange(0, 13), [](int k) { return std::size_t{1} << k; })},
      {3, rc::gen::element<std::size_t>(1024, 2048, 4096)},
      {1, rc::gen::element<std::size_t>(0, 3, 48, 8192, std::size_t{1} << 63, SIZE_MAX)},
  });
}

rc::Gen<Op> ops(std::size_t capacity) {
  using K = Op::Kind;
  auto op = [](K kind, rc::Gen<std::size_t> n, rc::Gen<std::size_t> align, rc::Gen<std::size_t> pick) {
    return rc::gen::construct<Op>(rc::gen::just(kind), std::move(n), std::move(align), std::move(pick));
  };
  auto none = [] { return rc::gen::just<std::size_t>(0); };
  return rc::gen::weightedOneOf<Op>({
      {8, op(K::allocate, sizes(capacity), alignments(), none())},
      {2, op(K::allocate_default, sizes(capacity), rc::gen::just<std::size_t>(64), none())},
      {2, op(K::allocate_most, none(), alignments(), rc::gen::inRange<std::size_t>(0, 2))},
      {3, op(K::checkpoint, none(), none(), none())},
      {4, op(K::reclaim_taken, none(), none(), rc::gen::inRange<std::size_t>(0, 8))},
      {2, op(K::reclaim_all, none(), none(), none())},
      {2, op(K::reclaim_between, none(), none(),
             rc::gen::weightedOneOf<std::size_t>({{2, rc::gen::inRange<std::size_t>(0, 16)},  // inside the tail's granules
                                                  {1, rc::gen::inRange<std::size_t>(0, 2 * capacity)}}))},
      {1, op(K::reclaim_stale, none(), none(), rc::gen::inRange<std::size_t>(0, 100))},
      {1, op(K::reclaim_future, none(), none(), rc::gen::inRange<std::size_t>(0, 100))},
  });
}

// Capacities: mostly one page, where laps come quickly; two and three pages; sizes that are not
// a multiple of 4096 and sizes that are, which rounding must leave as they are; 0 and sizes that
// cannot be mapped.
rc::Gen<std::size_t> capacities() {
  return rc::gen::weightedOneOf<std::size_t>({
      {1, rc::gen::just<std::size_t>(0)},
      {6, rc::gen::element<std::size_t>(4096, 8192, 3 * 4096)},
      {1, rc::gen::element<std::size_t>(SIZE_MAX, SIZE_MAX - 4094, std::size_t{1} << 60)},
      {30, rc::gen::inRange<std::size_t>(1, 4097)},
      {8, rc::gen::inRange<std::size_t>(4097, 8193)},
      {3, rc::gen::inRange<std::size_t>(8193, 3 * 4096 + 1)},
  });
}

ALLOCLAB_MODEL_TEST(RingModel, EveryCallAgreesWithTheModel, 6, (alloclab::test::model::Budget{200, 40}), [] {
  const auto asked = *capacities();
  const std::size_t rounded = ring_model::rounded_capacity(asked).value_or(4096);
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops(rounded));
  ring_model::run(asked, sequence);
})

}  // namespace stage5_model
