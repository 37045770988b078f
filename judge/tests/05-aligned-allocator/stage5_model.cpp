// Stage 5 — against the model: random sequences of every call of the contract, misuse included,
// run on your header and on model.hpp side by side (model_run.cpp). A sequence works either
// allocators of several kinds (allocate, deallocate, equality, rebind, counts that overflow, a
// heap that fails) or one arena over a buffer that starts anywhere (allocate with every
// alignment, bad ones too, deallocate, release, destruction, is_equal, bad constructor
// arguments, a heap that fails while a spill is recorded). After every call the heap's calls,
// the addresses, used(), upstream_bytes() and every block the upstream handed out and got back
// must agree. This file only generates the sequences: it includes no header under test, so an
// edit of aligned_allocator.hpp never recompiles it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using aligned_model::AllocOp;
using aligned_model::ArenaOp;
using aligned_model::ArenaSetup;
using aligned_model::kAllocators;
using aligned_model::kComparedPairs;

rc::Gen<AllocOp> alloc_ops() {
  using K = AllocOp::Kind;
  const auto counts = rc::gen::weightedOneOf<std::size_t>({
      {6, rc::gen::inRange<std::size_t>(0, 20)},
      {2, rc::gen::inRange<std::size_t>(20, 2000)},
  });
  const auto huge = rc::gen::weightedOneOf<int>({{5, rc::gen::just(0)}, {1, rc::gen::inRange(1, 8)}});
  const auto fails = rc::gen::weightedOneOf<bool>({{9, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  return rc::gen::weightedOneOf<AllocOp>({
      {6, rc::gen::construct<AllocOp>(rc::gen::just(K::allocate), rc::gen::inRange<std::size_t>(0, kAllocators), counts,
                                      huge, fails)},
      {3, rc::gen::construct<AllocOp>(rc::gen::just(K::deallocate), rc::gen::inRange<std::size_t>(0, 8),
                                      rc::gen::just<std::size_t>(0), rc::gen::just(0), rc::gen::just(false))},
      {1, rc::gen::construct<AllocOp>(rc::gen::just(K::compare),
                                      rc::gen::inRange<std::size_t>(0, kComparedPairs),
                                      rc::gen::just<std::size_t>(0), rc::gen::just(0), rc::gen::just(false))},
  });
}

rc::Gen<ArenaSetup> arena_setups() {
  return rc::gen::construct<ArenaSetup>(
      rc::gen::weightedOneOf<bool>({{1, rc::gen::just(false)}, {9, rc::gen::just(true)}}),
      rc::gen::weightedOneOf<std::size_t>({
          {3, rc::gen::just<std::size_t>(0)},
          {4, rc::gen::inRange<std::size_t>(1, 64)},
          {2, rc::gen::inRange<std::size_t>(64, 4096)},
      }),
      rc::gen::weightedOneOf<std::size_t>({
          {1, rc::gen::just<std::size_t>(0)},
          {6, rc::gen::inRange<std::size_t>(1, 300)},
          {3, rc::gen::inRange<std::size_t>(300, 1025)},
      }),
      rc::gen::weightedOneOf<bool>({{7, rc::gen::just(false)}, {1, rc::gen::just(true)}}));
}

rc::Gen<std::size_t> request_sizes() {
  return rc::gen::weightedOneOf<std::size_t>({
      {1, rc::gen::just<std::size_t>(0)},  // a block that must still start inside the buffer
      {6, rc::gen::inRange<std::size_t>(1, 65)},
      {3, rc::gen::inRange<std::size_t>(65, 700)},
      {1, rc::gen::inRange<std::size_t>(700, 6000)},
      {1, rc::gen::map(rc::gen::inRange<std::size_t>(0, 8), [](std::size_t k) { return SIZE_MAX - k; })},
  });
}

rc::Gen<std::size_t> alignments() {
  return rc::gen::weightedOneOf<std::size_t>({
      {8, rc::gen::map(rc::gen::inRange(0, 13), [](int k) { return std::size_t{1} << k; })},
      {1, rc::gen::element<std::size_t>(0, 3, 6, 48, 100)},
  });
}

rc::Gen<ArenaOp> arena_ops() {
  using K = ArenaOp::Kind;
  auto op = [](K kind) {
    return rc::gen::construct<ArenaOp>(rc::gen::just(kind), request_sizes(), alignments(),
                                       rc::gen::inRange<std::size_t>(0, 8));
  };
  return rc::gen::weightedOneOf<ArenaOp>({
      {10, op(K::allocate)},
      {1, op(K::allocate_heap_fails)},
      {2, op(K::deallocate)},
      {2, op(K::release)},
      {1, op(K::rebuild)},
      {1, op(K::is_equal)},
      {1, op(K::construct)},
  });
}


ALLOCLAB_MODEL_TEST(AlignedModel, EveryCallAgreesWithTheModel, 5, {}, [] {
  if (*rc::gen::inRange(0, 4) == 0) {
    aligned_model::run_allocator(*rc::gen::container<std::vector<AllocOp>>(alloc_ops()));
  } else {
    const auto setup = *arena_setups();
    aligned_model::run_arena(setup, *rc::gen::container<std::vector<ArenaOp>>(arena_ops()));
  }
})


}  // namespace stage5_model
