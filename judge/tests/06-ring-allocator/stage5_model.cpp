// Stage 5 — against the model: random sequences of every call of the ring's contract, made by one
// thread (allocations that fit, that wrap to offset 0, that the contract refuses; checkpoints;
// reclaims of a step, of everything, of a position between two steps, of stale and future
// positions), run on your ring and on model.hpp side by side (model_run.cpp). After every call the
// offsets handed out, checkpoint(), in_use(), capacity() and AddressSanitizer's view of every byte
// of the buffer must agree; at the end the destructor must give the buffer back with munmap,
// unpoisoned. This file only generates the sequences: it includes no header under test, so an
// edit of ring_allocator.hpp never recompiles it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage5_model {

using alloclab::test::model::choice;
using alloclab::test::model::in_range;
using alloclab::test::model::one_of;
using ring_model::Op;
using K = Op::Kind;

// Sizes for a ring of `capacity` bytes: small blocks, blocks that soon reach the end of the
// buffer and wrap, sizes around the capacity, 0, and sizes whose sums wrap around 2^64.
std::size_t size(std::size_t capacity) {
  switch (choice({6, 4, 3, 1, 1, 1})) {
    case 0: return in_range<std::size_t>(1, 65);
    case 1: return in_range<std::size_t>(65, capacity / 2);
    case 2: return in_range<std::size_t>(capacity / 2, capacity + 1);
    case 3: return in_range<std::size_t>(capacity - 2, capacity + 3);
    case 4: return 0;
    default: return SIZE_MAX - in_range<std::size_t>(0, 8);
  }
}

// Powers of two up to a page, and alignments the contract refuses. Large ones often: padded up
// from an offset near the end, a block then no longer fits before the end although its size does.
std::size_t alignment() {
  switch (choice({5, 6, 3, 1})) {
    case 0: return std::size_t{1} << in_range(0, 4);  // blocks that share granules
    case 1: return std::size_t{1} << in_range(0, 13);
    case 2: return one_of<std::size_t>({1024, 2048, 4096});
    default: return one_of<std::size_t>({0, 3, 48, 8192, std::size_t{1} << 63, SIZE_MAX});
  }
}

rc::Gen<Op> ops(std::size_t capacity) {
  return rc::gen::exec([capacity] {
    constexpr std::array kinds{K::allocate, K::allocate_default, K::allocate_most, K::checkpoint, K::reclaim_taken,
                               K::reclaim_all, K::reclaim_between, K::reclaim_stale, K::reclaim_future};
    const K kind = kinds[choice({8, 2, 2, 3, 4, 2, 2, 1, 1})];
    switch (kind) {
      case K::allocate: {
        const std::size_t n = size(capacity);
        return Op(kind, n, alignment(), 0);
      }
      case K::allocate_default: return Op(kind, size(capacity), 64, 0);
      case K::allocate_most: {
        const std::size_t align = alignment();
        return Op(kind, 0, align, in_range<std::size_t>(0, 2));
      }
      case K::reclaim_taken: return Op(kind, 0, 0, in_range<std::size_t>(0, 8));
      case K::reclaim_between:  // mostly inside the tail's granules
        return Op(kind, 0, 0, choice({2, 1}) == 0 ? in_range<std::size_t>(0, 16) : in_range<std::size_t>(0, 2 * capacity));
      case K::reclaim_stale:
      case K::reclaim_future: return Op(kind, 0, 0, in_range<std::size_t>(0, 100));
      default: return Op(kind, 0, 0, 0);  // checkpoint, reclaim_all
    }
  });
}

// Capacities: mostly one page, where laps come quickly; two and three pages; sizes that are not
// a multiple of 4096 and sizes that are, which rounding must leave as they are; 0 and sizes that
// cannot be mapped.
std::size_t capacity() {
  switch (choice({1, 6, 1, 30, 8, 3})) {
    case 0: return 0;
    case 1: return one_of<std::size_t>({4096, 8192, 3 * 4096});
    case 2: return one_of<std::size_t>({SIZE_MAX, SIZE_MAX - 4094, std::size_t{1} << 60});
    case 3: return in_range<std::size_t>(1, 4097);
    case 4: return in_range<std::size_t>(4097, 8193);
    default: return in_range<std::size_t>(8193, 3 * 4096 + 1);
  }
}

ALLOCLAB_MODEL_TEST(RingModel, EveryCallAgreesWithTheModel, 6, (alloclab::test::model::Budget{200, 40}), [] {
  const auto asked = capacity();
  const std::size_t rounded = ring_model::rounded_capacity(asked).value_or(4096);
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops(rounded));
  ring_model::run(asked, sequence);
})

}  // namespace stage5_model
