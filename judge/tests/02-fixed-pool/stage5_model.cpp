// Stage 5 — against the model: random sequences of every call of FixedPool, of SharedFixedPool
// (one call at a time) and of ObjectPool, misuse and refused heap allocations included, run on
// your pools and on model.hpp side by side (model_run.cpp). After every call the blocks handed
// out, the counts, owns(), the caller's bytes in every live block, the objects and the heap the
// pool holds must agree. This file only generates the sequences: it includes no header under
// test, so an edit of fixed_pool.hpp never recompiles it.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage5_model {

using pool_model::Op;
using pool_model::Start;

// The alignment the contract rounds strides to.
constexpr std::size_t kAlign = alignof(std::max_align_t);

// A value of [lo, hi), uniform whatever the size: RapidCheck's size grows the sequences, and
// RapidCheck's inRange would narrow every range to its low end while the size is small.
template <class T>
rc::Gen<T> uniform(T lo, T hi) {
  return rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

rc::Gen<long> failures() {
  return rc::gen::weightedOneOf<long>({{8, rc::gen::just(0L)}, {2, rc::gen::just(1L)}, {2, uniform(2L, 5L)}});
}

rc::Gen<std::size_t> block_sizes() {
  return rc::gen::weightedOneOf<std::size_t>({
      {12, uniform<std::size_t>(1, 65)},
      {4, uniform<std::size_t>(65, 300)},
      {1, uniform<std::size_t>(1000, 1100)},
      // sizes that are already a multiple of the alignment keep it as their stride
      {3, rc::gen::map(uniform<std::size_t>(1, 9), [](std::size_t k) { return k * kAlign; })},
      {1, rc::gen::just<std::size_t>(0)},
      // within a few alignments of SIZE_MAX: the stride overflows, or no heap has one block
      {1, rc::gen::map(uniform<std::size_t>(0, 40), [](std::size_t k) { return SIZE_MAX - k; })},
  });
}

rc::Gen<std::size_t> chunk_lengths() {
  return rc::gen::weightedOneOf<std::size_t>({
      {18, uniform<std::size_t>(1, 7)},
      {1, rc::gen::just<std::size_t>(0)},
      // chunks of 16-byte strides that just fit in a std::size_t, or just do not
      {1, rc::gen::map(uniform<std::size_t>(0, 3), [](std::size_t k) { return SIZE_MAX / 16 - 1 + k; })},
  });
}

// The block size and blocks_per_chunk together: mostly each from its own generator, sometimes a
// size near SIZE_MAX / k with about k blocks, whose chunk size overflows to a small number or
// just fits and is more than any heap has.
rc::Gen<std::pair<std::size_t, std::size_t>> shapes() {
  return rc::gen::weightedOneOf<std::pair<std::size_t, std::size_t>>({
      {20, rc::gen::pair(block_sizes(), chunk_lengths())},
      {4, rc::gen::map(rc::gen::tuple(uniform<std::size_t>(2, 7), uniform<std::size_t>(0, 40),
                                      rc::gen::weightedOneOf<std::size_t>({{3, rc::gen::just<std::size_t>(1)},
                                                                           {1, rc::gen::just<std::size_t>(0)},
                                                                           {1, rc::gen::just<std::size_t>(2)}})),
                       [](const std::tuple<std::size_t, std::size_t, std::size_t>& v) {
                         const auto [k, j, d] = v;
                         return std::pair<std::size_t, std::size_t>(SIZE_MAX / k - 20 + j, k - 1 + d);
                       })},
  });
}

rc::Gen<std::size_t> chunk_limits() {
  return rc::gen::weightedOneOf<std::size_t>({
      {8, uniform<std::size_t>(1, 5)},
      {4, rc::gen::just<std::size_t>(SIZE_MAX)},
      {1, rc::gen::just<std::size_t>(0)},
  });
}

rc::Gen<Op> pool_ops() {
  using K = Op::Kind;
  auto op = [](K kind, rc::Gen<int> target) {
    return rc::gen::construct<Op>(
        rc::gen::just(kind), kind == K::allocate ? failures() : rc::gen::just(0L), uniform<std::size_t>(0, 64),
        rc::gen::weightedOneOf<int>({{4, rc::gen::just(0)}, {3, uniform(-3, 4)}, {1, uniform(-8, 9)}}),
        rc::gen::weightedOneOf<int>({{4, rc::gen::just(0)}, {1, uniform(1, 5)}}), target);
  };
  return rc::gen::weightedOneOf<Op>({
      {8, op(K::allocate, rc::gen::just(0))},
      {5, op(K::deallocate, rc::gen::just(0))},
      {1, op(K::deallocate_null, rc::gen::just(0))},
      {4, op(K::owns, rc::gen::weightedOneOf<int>({{5, rc::gen::just(0)}, {3, uniform(4, 6)}, {1, uniform(1, 4)}}))},
  });
}

rc::Gen<Op> object_ops() {
  using K = Op::Kind;
  auto op = [](K kind, rc::Gen<int> target) {
    return rc::gen::construct<Op>(rc::gen::just(kind), kind == K::create ? failures() : rc::gen::just(0L),
                                  uniform<std::size_t>(0, 64), rc::gen::just(0), rc::gen::just(0), target);
  };
  return rc::gen::weightedOneOf<Op>({
      {8, op(K::create, rc::gen::weightedOneOf<int>({{5, uniform(0, 3)}, {1, rc::gen::just(3)}}))},
      {5, op(K::destroy, rc::gen::just(0))},
      {1, op(K::destroy_null, rc::gen::just(0))},
  });
}

ALLOCLAB_MODEL_TEST(PoolModel, EveryCallAgreesWithTheModel, 2, {}, [] {
  const auto subject = *rc::gen::weightedOneOf<Start::Subject>(
      {{5, rc::gen::just(Start::fixed)}, {2, rc::gen::just(Start::shared)}, {3, rc::gen::just(Start::objects)}});
  if (subject == Start::objects) {
    const Start start(subject, 0, *uniform<std::size_t>(1, 7), SIZE_MAX, *failures());
    pool_model::run(start, *rc::gen::container<std::vector<Op>>(object_ops()));
    return;
  }
  const auto [block_size, per_chunk] = *shapes();
  // Now and then the constructor's defaults: blocks_per_chunk = 1024, max_chunks = SIZE_MAX.
  const int given =
      *rc::gen::weightedOneOf<int>({{12, rc::gen::just(3)}, {1, rc::gen::just(2)}, {1, rc::gen::just(1)}});
  const Start start(subject, block_size, per_chunk, *chunk_limits(), *failures(), given);
  pool_model::run(start, *rc::gen::container<std::vector<Op>>(pool_ops()));
})

}  // namespace stage5_model
