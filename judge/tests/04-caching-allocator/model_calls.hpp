// The calls of exercise 04's model stage: what stage6_model.cpp generates and model_run.cpp
// makes on the caching allocator and on the model. Kept apart from caching_allocator.hpp, so that
// an edit of the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace caching_model {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// The largest request whose rounding, to 512 bytes and then its segment's to 2 MiB, fits in a
// std::size_t: SIZE_MAX rounded down to a multiple of 2 MiB. Anything larger is refused at once.
constexpr std::size_t kLargestRequest = SIZE_MAX / (2 * MiB) * (2 * MiB);

constexpr int kStreams = 3;          // the streams a sequence uses: 0, 1 and 2
constexpr std::size_t kNoLimit = 100;  // set_limit's n for "no limit"

// What the pointer of a deallocate or record_stream is: a block handed out and not freed, one of
// those recorded on another stream (any live block when none is), nullptr, a pointer into the
// middle of a live block, one whose block was freed (and not handed out again), a pending block,
// or a pointer this allocator never handed out.
enum Target { live, recorded, null, interior, freed, pending, foreign };

// One call of the contract, or one thing the device does. `pick` chooses among the pointers that
// fit the target, counted from the newest (modulo their number; with none, the op is left out);
// `fail`, when not 0, makes
// the heap refuse that allocation inside the call (the first is 1).
struct Op {
  enum Kind { allocate, deallocate, record_stream, complete, synchronize, empty_cache, set_limit } kind;
  std::size_t n;     // allocate: bytes; set_limit: MiB above what the device holds (kNoLimit: none)
  int stream;        // allocate, complete: the stream; record_stream: added to the block's stream
  std::size_t pick;  // deallocate, record_stream: which pointer
  int target;        // deallocate, record_stream: a Target
  long fail;
  Op(Kind k, std::size_t n_, int stream_, std::size_t pick_, int target_, long fail_)
      : kind(k), n(n_), stream(stream_), pick(pick_), target(target_), fail(fail_) {}
};

/// Runs `ops` on a fresh allocator over a device of 64 MiB and on the model, comparing every
/// observer after each call and the destructor's work at the end; fails the sequence
/// (RapidCheck's way) at the first difference.
void run(const std::vector<Op>& ops);

}  // namespace caching_model
