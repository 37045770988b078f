// The seam between the engine and exercise 07: what the scheduler asks of a block manager, in
// the engine's own types. paged_manager.cpp, the only file that includes the learner's
// kv_cache_manager.hpp, implements it with this header alone, so an edit of the learner's
// header recompiles one small file, never the engine (nor the other managers of
// block_managers.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace alloclab::engine {

/// A copy of one KV block into another that the model runner must make before the step runs:
/// exercise 07's BlockCopy, as the engine receives it.
struct KvCopy {
  int src, dst;
};

/// A call of the learner's manager that threw: the message names the call, its arguments and
/// the exception, so that `serve` can say what happened instead of crashing.
struct ManagerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a manager's prefix cache did (exercise 07's PrefixCacheStats, as the engine keeps it).
struct KvCacheStats {
  std::size_t queried_tokens = 0;  // prompt tokens of every successful admit (0 while caching is off)
  std::size_t hit_tokens = 0;      // of those, the tokens whose KV admit found cached
  std::size_t evictions = 0;       // cached blocks given back to the pool to make room
  std::size_t copies = 0;          // copy-on-write copies ordered
};

/// What a manager that maps its own KV memory did with it (the `virtual` manager): the map and
/// unmap calls so far, and the bytes the system has committed to its physical memory now.
struct KvMemory {
  std::size_t map_calls = 0, unmap_calls = 0, committed_bytes = 0;
};

/// What the scheduler asks of a block manager. `admit` also gets the most tokens the sequence
/// can reach and how many parallel samples will fork from it: the paged managers ignore both
/// (they take blocks as tokens arrive), the reserving one takes everything at once.
class BlockManager {
 public:
  virtual ~BlockManager() = default;
  [[nodiscard]] virtual std::optional<int> admit(int seq, std::span<const int> tokens, int max_tokens, int samples) = 0;
  /// The blocks `admit` would need in the worst case (no prefix hit): the admission check.
  [[nodiscard]] virtual int blocks_to_admit(int tokens, int max_tokens, int samples) const = 0;
  [[nodiscard]] virtual bool append_token(int seq, int token, std::vector<KvCopy>& copies) = 0;
  virtual void fork(int parent, int child, std::vector<KvCopy>& copies) = 0;
  virtual void release(int seq) = 0;
  [[nodiscard]] virtual std::span<const int> block_table(int seq) const = 0;
  /// Where token `position` of `seq` lives in the KV buffer, counted in tokens: the engine
  /// writes each row's K and V where this says, and attention reads them back through
  /// `block_table`, so a slot that disagrees with the table shows as a wrong token.
  [[nodiscard]] virtual int slot(int seq, int position) const = 0;
  [[nodiscard]] virtual int num_free_blocks() const = 0;  // idle, plus cached blocks no request uses
  [[nodiscard]] virtual int num_idle_blocks() const = 0;  // idle in the pool
  [[nodiscard]] virtual KvCacheStats stats() const = 0;
  [[nodiscard]] virtual int held_blocks(int seq) const = 0;  // every block the sequence keeps, spares included
  /// Whether a sequence takes blocks as it grows (and so may find none left, and be preempted).
  [[nodiscard]] virtual bool grows() const = 0;
  /// What is wrong once every sequence the engine made (ids 0 to `sequences` - 1) is released:
  /// a sequence still known, a block neither free nor cached, counts that disagree. Empty when
  /// nothing is: a block lost here is KV memory lost for the life of the server.
  [[nodiscard]] virtual std::string audit(int sequences) const = 0;

  /// Whether the manager keeps each sequence's K and V contiguous in memory of its own
  /// (`contiguous_kv`), in the contiguous layout (position p at base + p * token stride), rather
  /// than in the engine's KV buffer through a block table. Such a manager's `block_table` numbers
  /// its physical blocks for the figures alone, and its `slot` is the position.
  [[nodiscard]] virtual bool contiguous() const { return false; }
  /// Where position 0 of `seq`'s K and V lies, for a contiguous manager; nullptr otherwise.
  [[nodiscard]] virtual float* contiguous_kv(int) const { return nullptr; }
  /// What a manager that maps its own memory did with it; nothing for the others, whose KV is the
  /// engine's buffer.
  [[nodiscard]] virtual std::optional<KvMemory> memory() const { return std::nullopt; }
  /// Gives every byte of a manager that maps its own memory back to the system, keeping its
  /// addresses (sleep mode), once every sequence is done; nothing for the others.
  virtual void sleep() {}
};

/// What the `virtual` manager is built with: the engine's KV budget in blocks and its block size,
/// the bytes of one token's K and V over every layer, and the engine's limits (sequences at once,
/// tokens in one sequence) that size its slices.
struct VirtualLimits {
  int num_blocks, block_tokens;
  std::size_t token_bytes;
  int max_sequences, max_tokens;
};

/// `paged` (caching off) and `prefix` (caching on): exercise 07's KVCacheManager, blocks taken
/// one at a time as tokens arrive, shared by fork and, with caching, by equal prefixes. Defined
/// in paged_manager.cpp, beside the learner's header.
[[nodiscard]] std::unique_ptr<BlockManager> make_paged_manager(int num_blocks, int block_tokens, bool prefix_caching);

/// `virtual`: exercise 08's ContiguousKVCache, each sequence's KV contiguous in a slice of one
/// reservation, physical granules mapped as it grows. Defined in virtual_manager.cpp, beside the
/// learner's header; only the programs that serve it link that file (exercise 07's engine stage
/// does not), so the engine reaches it through EngineOptions::make_virtual.
[[nodiscard]] std::unique_ptr<BlockManager> make_virtual_manager(const VirtualLimits& limits);

}  // namespace alloclab::engine
