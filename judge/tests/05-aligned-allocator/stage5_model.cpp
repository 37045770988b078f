// Stage 5 — against the model: random sequences of every call of the contract, misuse included,
// run on your header and on model.hpp side by side (model_run.cpp). A sequence works either
// allocators of several kinds (allocate, deallocate, equality, rebind, counts that overflow, a
// heap that fails) or one arena over a buffer that starts anywhere (allocate with every
// alignment, bad ones too, deallocate, release, destruction, is_equal, bad constructor
// arguments, a heap that fails while a spill is recorded). After every call the heap's calls,
// the addresses, used(), upstream_bytes() and every block the upstream handed out and got back
// must agree. This file only generates the sequences: it includes no header under test, so an
// edit of aligned_allocator.hpp never recompiles it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage5_model {

using aligned_model::AllocOp;
using aligned_model::ArenaOp;
using aligned_model::ArenaSetup;
using aligned_model::kAllocators;
using aligned_model::kComparedPairs;
using alloclab::test::model::choice;
using alloclab::test::model::in_range;
using alloclab::test::model::one_of;
using alloclab::test::model::uniform_in;

rc::Gen<AllocOp> alloc_ops() {
  using K = AllocOp::Kind;
  return rc::gen::exec([] {
    switch (choice({6, 3, 1})) {
      case 0: {
        const auto which = in_range<std::size_t>(0, kAllocators);
        const std::size_t n = choice({6, 2}) == 0 ? in_range<std::size_t>(0, 20) : in_range<std::size_t>(20, 2000);
        // Now and then a count within 3 of the largest whose bytes fit, or 1 to 3 past it: drawn
        // from the whole range at any size, since these are boundaries, not sizes that grow.
        const int huge = choice({5, 1}) == 0 ? 0 : uniform_in(1, 8);
        const bool fails = choice({9, 1}) == 1;
        return AllocOp(K::allocate, which, n, huge, fails);
      }
      case 1: return AllocOp(K::deallocate, in_range<std::size_t>(0, 8), 0, 0, false);
      default: return AllocOp(K::compare, in_range<std::size_t>(0, kComparedPairs), 0, 0, false);
    }
  });
}

ArenaSetup arena_setup() {
  const bool buffer = choice({1, 9}) == 1;
  std::size_t offset = 0;
  switch (choice({3, 4, 2})) {
    case 0: break;
    case 1: offset = in_range<std::size_t>(1, 64); break;
    default: offset = in_range<std::size_t>(64, 4096);
  }
  std::size_t size = 0;
  switch (choice({1, 6, 3})) {
    case 0: break;
    case 1: size = in_range<std::size_t>(1, 300); break;
    default: size = in_range<std::size_t>(300, 1025);
  }
  const bool null_upstream = choice({7, 1}) == 1;
  return ArenaSetup(buffer, offset, size, null_upstream);
}

std::size_t request_size() {
  switch (choice({1, 6, 3, 1, 1})) {
    case 0: return 0;  // a block that must still start inside the buffer
    case 1: return in_range<std::size_t>(1, 65);
    case 2: return in_range<std::size_t>(65, 700);
    case 3: return in_range<std::size_t>(700, 6000);
    default: return SIZE_MAX - in_range<std::size_t>(0, 8);
  }
}

std::size_t alignment() {
  return choice({8, 1}) == 0 ? std::size_t{1} << in_range(0, 13) : one_of<std::size_t>({0, 3, 6, 48, 100});
}

rc::Gen<ArenaOp> arena_ops() {
  using K = ArenaOp::Kind;
  return rc::gen::exec([] {
    const K kind = std::array{K::allocate, K::allocate_heap_fails, K::deallocate, K::release, K::rebuild, K::is_equal,
                              K::construct}[choice({10, 1, 2, 2, 1, 1, 1})];
    const std::size_t bytes = request_size();
    const std::size_t align = alignment();
    return ArenaOp(kind, bytes, align, in_range<std::size_t>(0, 8));
  });
}

ALLOCLAB_MODEL_TEST(AlignedModel, EveryCallAgreesWithTheModel, 5, {}, [] {
  if (in_range(0, 4) == 0) {
    aligned_model::run_allocator(*rc::gen::container<std::vector<AllocOp>>(alloc_ops()));
  } else {
    const ArenaSetup setup = arena_setup();
    aligned_model::run_arena(setup, *rc::gen::container<std::vector<ArenaOp>>(arena_ops()));
  }
})

}  // namespace stage5_model
