// Stage 6 — against the model: random sequences of allocate (zero, small, large, huge, on three
// streams), deallocate, record_stream, streams that run, synchronize, empty_cache and a device
// limit that changes, misuse and a heap that fails inside a call included, run on your allocator
// and on model.hpp side by side (model_run.cpp). After every call the outcome, the address handed
// out, the snapshot, every statistic, pending_bytes() and what the device saw (its segments, the
// events recorded on each stream, its synchronizations) must agree; at the end, the destructor's.
// A third of the sequences allocate only 512 bytes and 1 KiB on stream 0, so that free blocks of
// one size compete and the lowest address must win.
// This file only generates the sequences: it includes no header under test, so an edit of
// caching_allocator.hpp never recompiles it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"

namespace stage6_model {

using caching_model::foreign;
using caching_model::KiB;
using caching_model::kLargestRequest;
using caching_model::kNoLimit;
using caching_model::live;
using caching_model::MiB;
using caching_model::null;
using caching_model::recorded;
using caching_model::Op;

// Sizes that meet: a few small ones often, so that free blocks of equal size compete; the
// boundaries of the pools and of the segment sizes; requests too large to round.
rc::Gen<std::size_t> sizes() {
  return rc::gen::weightedOneOf<std::size_t>({
      {1, rc::gen::just<std::size_t>(0)},
      {12, rc::gen::element<std::size_t>(512, 1 * KiB, 2 * KiB, 4 * KiB, 8 * KiB)},
      {4, rc::gen::map(rc::gen::inRange<std::size_t>(1, 17), [](std::size_t k) { return k * KiB; })},
      {3, rc::gen::element<std::size_t>(1, 512, 513, 1000, 3000, 2 * MiB - 4 * KiB)},
      {2, rc::gen::map(rc::gen::inRange<std::size_t>(1, 9), [](std::size_t k) { return k * 128 * KiB; })},
      {3, rc::gen::element<std::size_t>(MiB - 1, MiB, MiB + 1, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 19 * MiB,
                                        20 * MiB, 20 * MiB + 1)},
      {3, rc::gen::map(rc::gen::inRange<std::size_t>(3, 20), [](std::size_t k) { return k * MiB / 2; })},
      {1, rc::gen::map(rc::gen::inRange<std::size_t>(20, 49), [](std::size_t k) { return k * MiB / 2; })},
      {1, rc::gen::element<std::size_t>(std::size_t{kLargestRequest}, kLargestRequest + 1, SIZE_MAX - 511, SIZE_MAX)},
  });
}

// A third of the sequences allocate two sizes on one stream alone: free blocks of one size then
// compete often, which is where the rule that the lowest address wins shows.
rc::Gen<std::size_t> narrow_sizes() { return rc::gen::element<std::size_t>(512, 1 * KiB); }

rc::Gen<int> streams() { return rc::gen::inRange(0, caching_model::kStreams); }
// Which pointer, counted from the newest.
rc::Gen<std::size_t> picks() { return rc::gen::inRange<std::size_t>(0, 8); }

// record_stream mostly names the newest block, so that several streams meet on one block.
rc::Gen<std::size_t> newest() {
  return rc::gen::weightedOneOf<std::size_t>({{3, rc::gen::just<std::size_t>(0)}, {1, picks()}});
}

// record_stream's stream, counted from the block's own: mostly another one.
rc::Gen<int> other_streams() {
  return rc::gen::weightedOneOf<int>({{4, rc::gen::inRange(1, caching_model::kStreams)}, {1, rc::gen::just(0)}});
}
rc::Gen<long> fails() {
  return rc::gen::weightedOneOf<long>({{10, rc::gen::just(0L)}, {3, rc::gen::inRange(1L, 7L)}});
}

rc::Gen<Op> ops(bool narrow) {
  using K = Op::Kind;
  const auto none = rc::gen::just<std::size_t>(0);
  const auto zero = rc::gen::just(0);
  const auto no_fail = rc::gen::just(0L);
  return rc::gen::weightedOneOf<Op>({
      {10, narrow ? rc::gen::construct<Op>(rc::gen::just(K::allocate), narrow_sizes(), zero, none, zero, no_fail)
                  : rc::gen::construct<Op>(rc::gen::just(K::allocate), sizes(), streams(), none, zero, fails())},
      {4, rc::gen::construct<Op>(rc::gen::just(K::deallocate), none, zero, picks(), rc::gen::just<int>(live), fails())},
      {3, rc::gen::construct<Op>(rc::gen::just(K::deallocate), none, zero, picks(), rc::gen::just<int>(recorded),
                                 fails())},
      {2, rc::gen::construct<Op>(rc::gen::just(K::deallocate), none, zero, picks(), rc::gen::inRange<int>(null, foreign + 1),
                                 fails())},
      {5, rc::gen::construct<Op>(rc::gen::just(K::record_stream), none, other_streams(), newest(),
                                 rc::gen::just<int>(live), fails())},
      {1, rc::gen::construct<Op>(rc::gen::just(K::record_stream), none, other_streams(), picks(),
                                 rc::gen::inRange<int>(null, foreign + 1), no_fail)},
      {3, rc::gen::construct<Op>(rc::gen::just(K::complete), none, streams(), none, zero, no_fail)},
      {1, rc::gen::construct<Op>(rc::gen::just(K::synchronize), none, zero, none, zero, no_fail)},
      {1, rc::gen::construct<Op>(rc::gen::just(K::empty_cache), none, zero, none, zero, fails())},
      {1, rc::gen::construct<Op>(rc::gen::just(K::set_limit),
                                 rc::gen::weightedOneOf<std::size_t>({{3, rc::gen::inRange<std::size_t>(0, 24)},
                                                                      {1, rc::gen::just(kNoLimit)}}),
                                 zero, none, zero, no_fail)},
  });
}

// Sequences of up to about a hundred calls: a hole of the size a request wants, between blocks
// still live, takes a few allocations and frees in the right order to appear.
ALLOCLAB_MODEL_TEST(CachingModel, EveryCallAgreesWithTheModel, 4, (alloclab::test::model::Budget{200, 100}), [] {
  const bool narrow = *rc::gen::weightedOneOf<bool>({{2, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops(narrow));
  caching_model::run(sequence);
})

}  // namespace stage6_model
