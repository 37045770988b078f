// Stage 5 — against the model: random sequences of every call of FixedPool, of SharedFixedPool
// (one call at a time) and of ObjectPool, misuse and refused heap allocations included, run on
// your pools and on model.hpp side by side (model_run.cpp), with each block the pools take put
// above or below the others as the sequence draws (model_heap.hpp). After every call the blocks
// handed out, the counts, owns(), the caller's bytes in every live block, the objects and the heap
// the pool holds must agree. This file only generates the sequences: it includes no header under
// test, so an edit of fixed_pool.hpp never recompiles it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage5_model {

using alloclab::test::model::choice;
using alloclab::test::model::uniform_in;
using pool_model::Op;
using pool_model::Start;
using K = Op::Kind;

// The alignment the contract rounds strides to.
constexpr std::size_t kAlign = alignof(std::max_align_t);

// Which heap allocation inside a call is refused (0: none).
long failure() {
  switch (choice({8, 2, 2})) {
    case 0: return 0;
    case 1: return 1;
    default: return uniform_in(2L, 5L);
  }
}

std::size_t block_size() {
  switch (choice({12, 4, 1, 3, 1, 1})) {
    case 0: return uniform_in<std::size_t>(1, 65);
    case 1: return uniform_in<std::size_t>(65, 300);
    case 2: return uniform_in<std::size_t>(1000, 1100);
    // a size that is already a multiple of the alignment keeps it as its stride
    case 3: return uniform_in<std::size_t>(1, 9) * kAlign;
    case 4: return 0;
    // within a few alignments of SIZE_MAX: the stride overflows, or no heap has one block
    default: return SIZE_MAX - uniform_in<std::size_t>(0, 40);
  }
}

std::size_t chunk_length() {
  switch (choice({18, 1, 1})) {
    case 0: return uniform_in<std::size_t>(1, 7);
    case 1: return 0;
    // chunks of 16-byte strides that just fit in a std::size_t, or just do not
    default: return SIZE_MAX / 16 - 1 + uniform_in<std::size_t>(0, 3);
  }
}

// The block size and blocks_per_chunk together: mostly each drawn alone, sometimes a size near
// SIZE_MAX / k with about k blocks, whose chunk size overflows to a small number or just fits
// and is more than any heap has.
std::pair<std::size_t, std::size_t> shape() {
  if (choice({20, 4}) == 0) {
    const std::size_t size = block_size();
    return {size, chunk_length()};
  }
  const auto k = uniform_in<std::size_t>(2, 7);
  const auto j = uniform_in<std::size_t>(0, 40);
  const std::size_t d = std::array<std::size_t, 3>{1, 0, 2}[choice({3, 1, 1})];
  return {SIZE_MAX / k - 20 + j, k - 1 + d};
}

// max_chunks: a few, the default, 0, or about SIZE_MAX / blocks_per_chunk, the largest limits
// whose count of blocks fits in a std::size_t and the first ones past them, where a limit compared
// in blocks (max_chunks * blocks_per_chunk) wraps around to a small number.
std::size_t chunk_limit(std::size_t per_chunk) {
  switch (choice({8, 4, 1, 2})) {
    case 0: return uniform_in<std::size_t>(1, 5);
    case 1: return SIZE_MAX;
    case 2: return 0;
    default:
      if (per_chunk < 2) return SIZE_MAX - uniform_in<std::size_t>(0, 3);
      return SIZE_MAX / per_chunk - 1 + uniform_in<std::size_t>(0, 4);
  }
}

// Where the heap puts each block the pool takes (model_heap.hpp): mostly above every block before
// it, as a heap whose addresses grow would, one in three below them all, for as many blocks as
// RapidCheck's size. It shrinks by moving one placement at a time above. One generator for the
// whole list: a generator per placement made the stage a fifth slower.
std::vector<bool> placements() {
  const rc::Gen<std::vector<bool>> below([](const rc::Random& random, int size) {
    rc::Random bits(random);
    std::vector<bool> drawn(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < drawn.size(); ++i) drawn[i] = bits.next() % 3 == 0;
    return rc::shrinkable::shrinkRecur(std::move(drawn), [](const std::vector<bool>& v) {
      std::vector<std::size_t> below_at;
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i]) below_at.push_back(i);
      return rc::seq::map(rc::seq::fromContainer(std::move(below_at)), [v](std::size_t i) {
        std::vector<bool> above = v;
        above[i] = false;
        return above;
      });
    });
  });
  return *below;
}

// owns: how many strides from the block the place asked about lies, and how many bytes into its
// stride (model_calls.hpp); what is asked about: mostly such a place, else past the chunk's
// highest block or before its lowest, or nullptr, another pool's block, a local variable.
int steps() {
  switch (choice({4, 3, 1})) {
    case 0: return 0;
    case 1: return uniform_in(-3, 4);
    default: return uniform_in(-8, 9);
  }
}
int into() { return choice({4, 1}) == 0 ? 0 : uniform_in(1, 5); }
int owns_target() {
  switch (choice({5, 3, 1})) {
    case 0: return 0;
    case 1: return uniform_in(4, 6);
    default: return uniform_in(1, 4);
  }
}

rc::Gen<Op> pool_ops() {
  return rc::gen::exec([] {
    const K kind = std::array{K::allocate, K::deallocate, K::deallocate_null, K::owns}[choice({8, 5, 1, 4})];
    const long fail = kind == K::allocate ? failure() : 0;
    const auto pick = uniform_in<std::size_t>(0, 64);
    const int strides = steps();
    const int bytes = into();
    return Op(kind, fail, pick, strides, bytes, kind == K::owns ? owns_target() : 0);
  });
}

rc::Gen<Op> object_ops() {
  return rc::gen::exec([] {
    const K kind = std::array{K::create, K::destroy, K::destroy_null}[choice({8, 5, 1})];
    const long fail = kind == K::create ? failure() : 0;
    const auto pick = uniform_in<std::size_t>(0, 64);
    // create: the Tag passed as a temporary, an lvalue or a const lvalue; now and then a Refuse{},
    // whose constructor throws, an int, or no argument at all.
    int target = 0;
    if (kind == K::create) {
      switch (choice({5, 1, 2})) {
        case 0: target = uniform_in(0, 3); break;
        case 1: target = 3; break;
        default: target = uniform_in(4, 6); break;
      }
    }
    const int plain = kind == K::create ? steps() : 0;
    return Op(kind, fail, pick, plain, 0, target);
  });
}

ALLOCLAB_MODEL_TEST(PoolModel, EveryCallAgreesWithTheModel, 2, {}, [] {
  const auto subject = std::array{Start::fixed, Start::shared, Start::objects}[choice({5, 2, 3})];
  if (subject == Start::objects) {
    const auto per_chunk = uniform_in<std::size_t>(1, 7);
    Start start(subject, 0, per_chunk, SIZE_MAX, failure());
    const auto ops = *rc::gen::container<std::vector<Op>>(object_ops());
    start.below = placements();
    pool_model::run(start, ops);
    return;
  }
  const auto [block_size, per_chunk] = shape();
  // Now and then the constructor's defaults: blocks_per_chunk = 1024, max_chunks = SIZE_MAX.
  const int given = std::array{3, 2, 1}[choice({12, 1, 1})];
  const std::size_t max_chunks = chunk_limit(per_chunk);
  Start start(subject, block_size, per_chunk, max_chunks, failure(), given);
  const auto ops = *rc::gen::container<std::vector<Op>>(pool_ops());
  start.below = placements();
  pool_model::run(start, ops);
})

}  // namespace stage5_model
