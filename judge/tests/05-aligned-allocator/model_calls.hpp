// The calls of exercise 05's model stage: what stage5_model.cpp generates and model_run.cpp
// makes on the header under test and on the model. Kept apart from the header, so that an edit
// of the header recompiles only model_run.cpp, not the generators.
#pragma once

#include <cstddef>
#include <vector>

namespace aligned_model {

/// How many allocators a sequence chooses from (model_run.cpp lists them: AlignedAllocator of
/// several T and Align, and allocators rebound from them), and how many pairs of them with the
/// same Align it compares.
constexpr std::size_t kAllocators = 6;
constexpr std::size_t kComparedPairs = 8;

/// One call of AlignedAllocator's contract.
struct AllocOp {
  enum Kind { allocate, deallocate, compare } kind;
  std::size_t which;  // the allocator (allocate), the live block (deallocate), the pair (compare)
  std::size_t n;      // allocate's count
  int huge;           // 0: n as it is; 1 to 7: the count is SIZE_MAX / sizeof(T) + huge - 4
  bool heap_fails;    // every operator new fails during the call
  AllocOp(Kind k, std::size_t which_, std::size_t n_, int huge_, bool fails)
      : kind(k), which(which_), n(n_), huge(huge_), heap_fails(fails) {}
};

/// The arena a sequence starts with.
struct ArenaSetup {
  bool buffer;         // false: no buffer, (nullptr, 0)
  std::size_t offset;  // where the buffer starts, from a page boundary
  std::size_t size;
  bool null_upstream;  // std::pmr::null_memory_resource() upstream, instead of one that keeps the books
  ArenaSetup(bool buffer_, std::size_t offset_, std::size_t size_, bool null)
      : buffer(buffer_), offset(offset_), size(size_), null_upstream(null) {}
};

/// One call of ArenaResource's contract.
struct ArenaOp {
  enum Kind { allocate, allocate_heap_fails, deallocate, release, rebuild, is_equal, construct } kind;
  std::size_t bytes;
  std::size_t alignment;  // a power of two, or a value the contract refuses
  std::size_t pick;       // the live block (deallocate), the other resource (is_equal), the arguments (construct)
  ArenaOp(Kind k, std::size_t bytes_, std::size_t alignment_, std::size_t pick_)
      : kind(k), bytes(bytes_), alignment(alignment_), pick(pick_) {}
};

/// Runs `ops` on fresh allocators and on the model, comparing every observer after each call;
/// fails the sequence (RapidCheck's way) at the first difference.
void run_allocator(const std::vector<AllocOp>& ops);

/// Runs `ops` on a fresh arena made as `setup` says and on the model, likewise.
void run_arena(const ArenaSetup& setup, const std::vector<ArenaOp>& ops);

}  // namespace aligned_model
