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
#include "model_draws.hpp"

namespace stage6_model {

using alloclab::test::model::choice;
using alloclab::test::model::in_range;
using alloclab::test::model::one_of;
using caching_model::foreign;
using caching_model::KiB;
using caching_model::kLargestRequest;
using caching_model::kNoLimit;
using caching_model::live;
using caching_model::MiB;
using caching_model::null;
using caching_model::recorded;
using caching_model::Op;
using K = Op::Kind;

// Sizes that meet: a few small ones often, so that free blocks of equal size compete; the
// boundaries of the pools and of the segment sizes; requests too large to round.
std::size_t size() {
  switch (choice({1, 12, 4, 3, 2, 3, 3, 1, 1})) {
    case 0: return 0;
    case 1: return one_of<std::size_t>({512, 1 * KiB, 2 * KiB, 4 * KiB, 8 * KiB});
    case 2: return in_range<std::size_t>(1, 17) * KiB;
    case 3: return one_of<std::size_t>({1, 512, 513, 1000, 3000, 2 * MiB - 4 * KiB});
    case 4: return in_range<std::size_t>(1, 9) * 128 * KiB;
    case 5:
      return one_of<std::size_t>({MiB - 1, MiB, MiB + 1, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 19 * MiB, 20 * MiB,
                                  20 * MiB + 1});
    case 6: return in_range<std::size_t>(3, 20) * MiB / 2;
    case 7: return in_range<std::size_t>(20, 49) * MiB / 2;
    default: return one_of<std::size_t>({std::size_t{kLargestRequest}, kLargestRequest + 1, SIZE_MAX - 511, SIZE_MAX});
  }
}

int stream() { return in_range(0, caching_model::kStreams); }
// Which pointer, counted from the newest.
std::size_t pick() { return in_range<std::size_t>(0, 8); }
// record_stream's stream, counted from the block's own: mostly another one.
int other_stream() { return choice({4, 1}) == 0 ? in_range(1, caching_model::kStreams) : 0; }
// A target among null, interior, freed, pending and foreign: misuse.
int wrong_target() { return in_range<int>(null, foreign + 1); }
long fail() { return choice({10, 3}) == 0 ? 0 : in_range(1L, 7L); }

// A third of the sequences allocate two sizes on one stream alone (`narrow`): free blocks of one
// size then compete often, which is where the rule that the lowest address wins shows.
rc::Gen<Op> ops(bool narrow) {
  return rc::gen::exec([narrow] {
    switch (choice({10, 4, 3, 2, 5, 1, 3, 1, 1, 1})) {
      case 0: {
        if (narrow) return Op(K::allocate, one_of<std::size_t>({512, 1 * KiB}), 0, 0, 0, 0);
        const std::size_t n = size();
        const int on = stream();
        return Op(K::allocate, n, on, 0, 0, fail());
      }
      case 1: {
        const std::size_t which = pick();
        return Op(K::deallocate, 0, 0, which, live, fail());
      }
      case 2: {
        const std::size_t which = pick();
        return Op(K::deallocate, 0, 0, which, recorded, fail());
      }
      case 3: {
        const std::size_t which = pick();
        const int target = wrong_target();
        return Op(K::deallocate, 0, 0, which, target, fail());
      }
      case 4: {
        // record_stream mostly names the newest block, so that several streams meet on one block.
        const int other = other_stream();
        const std::size_t which = choice({3, 1}) == 0 ? 0 : pick();
        return Op(K::record_stream, 0, other, which, live, fail());
      }
      case 5: {
        const int other = other_stream();
        const std::size_t which = pick();
        return Op(K::record_stream, 0, other, which, wrong_target(), 0);
      }
      case 6: return Op(K::complete, 0, stream(), 0, 0, 0);
      case 7: return Op(K::synchronize, 0, 0, 0, 0, 0);
      case 8: return Op(K::empty_cache, 0, 0, 0, 0, fail());
      default: return Op(K::set_limit, choice({3, 1}) == 0 ? in_range<std::size_t>(0, 24) : kNoLimit, 0, 0, 0, 0);
    }
  });
}

// Sequences of up to about a hundred calls: a hole of the size a request wants, between blocks
// still live, takes a few allocations and frees in the right order to appear.
ALLOCLAB_MODEL_TEST(CachingModel, EveryCallAgreesWithTheModel, 4, (alloclab::test::model::Budget{200, 100}), [] {
  const bool narrow = choice({2, 1}) == 1;
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops(narrow));
  caching_model::run(sequence);
})

}  // namespace stage6_model
