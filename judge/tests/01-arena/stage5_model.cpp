// Stage 5 — against the model: random sequences of allocate, alloc_array, reset, mark and rewind,
// misuse included, run on your arena and on model.hpp side by side (model_run.cpp). After every
// call the offsets handed out, used(), peak(), capacity() and AddressSanitizer's view of every
// byte must agree. This file only generates the sequences: it includes no header under test, so
// an edit of arena.hpp never recompiles it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage5_model {

using alloclab::test::model::choice;
using alloclab::test::model::in_range;
using alloclab::test::model::one_of;
using arena_model::Op;
using K = Op::Kind;

std::size_t size() {
  switch (choice({6, 2, 1})) {
    case 0: return in_range<std::size_t>(0, 100);
    case 1: return in_range<std::size_t>(100, 1100);
    default: return SIZE_MAX - in_range<std::size_t>(0, 8);
  }
}

std::size_t alignment() {
  switch (choice({8, 1, 1})) {
    case 0: return std::size_t{1} << in_range(0, 14);
    case 1: return one_of<std::size_t>({0, 3, 6, 48, 4095});
    // Beyond a page: only in the arena of a MiB below does the address's alignment, not the
    // offset's, decide where such a block lands, whatever page the buffer starts on.
    default: return std::size_t{1} << in_range(14, 21);
  }
}

std::size_t count() {
  return choice({6, 1}) == 0 ? in_range<std::size_t>(0, 20) : SIZE_MAX / 64 + in_range<std::size_t>(0, 4);
}

rc::Gen<Op> ops() {
  return rc::gen::exec([] {
    const K kind =
        std::array{K::allocate, K::alloc_words, K::alloc_lines, K::reset, K::mark, K::rewind}[choice({6, 1, 1, 1, 2, 2})];
    if (kind == K::alloc_words) return Op(kind, count(), 8, 0);
    if (kind == K::alloc_lines) return Op(kind, count(), 64, 0);
    const std::size_t n = size();
    const std::size_t align = alignment();
    return Op(kind, n, align, in_range<std::size_t>(0, 4));
  });
}

std::size_t capacity() {
  switch (choice({3, 40, 20, 10, 2})) {
    case 0: return 0;
    case 1: return in_range<std::size_t>(1, 300);
    case 2: return in_range<std::size_t>(300, 2049);
    case 3: return 4096;
    default: return (std::size_t{1} << 20) + 4096;
  }
}

ALLOCLAB_MODEL_TEST(ArenaModel, EveryCallAgreesWithTheModel, 1, {}, [] {
  const auto asked = capacity();
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops());
  arena_model::run(asked, sequence);
})

}  // namespace stage5_model
