// AllocLab exercise 07: a serving engine's KV cache manager, with automatic prefix caching.
//
// Read chapters/07-serving-engine.md first. Fill in the bodies below, stage by stage, and judge
// your work with `python3 judge/judge.py test 7` (`python3 judge/judge.py hint 7` when stuck).
// Keep every declaration as it is: the tests and the engine call exactly these names and
// signatures. You may add private members and helpers.
//
// The manager owns a BlockPool, exercise 03's: it numbers the blocks and counts their
// references. The judge builds these tests against the reference block pool, so an unfinished
// exercise 03 never fails this one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "block_pool.hpp"

namespace alloclab {

/// Copy block `src` into block `dst` before anything is written into `dst`.
struct BlockCopy {
  int src, dst;
  bool operator==(const BlockCopy&) const = default;
};

/// What the prefix cache did, counted since the manager was built.
struct PrefixCacheStats {
  std::size_t queried_tokens;  ///< prompt tokens of every successful admit (0 while prefix caching is off)
  std::size_t hit_tokens;      ///< of those, the tokens whose KV admit found cached
  std::size_t evictions;       ///< cached blocks given back to the pool to make room
  std::size_t copies;          ///< copy-on-write copies append_token ordered
};

/// Which KV blocks each request of a serving engine holds, and which of them a new prompt can
/// reuse.
///
/// Token `p` of a request lives in block `block_table(r)[p / block_tokens]`, at offset
/// `p % block_tokens`; a request takes a new block only when its last one is full.
///
/// Prefix caching (stage 3): the KV of a token depends on every token before it, so a full
/// block may be reused only by a prompt that equals it **and everything before it**. The
/// cache's key for a block is therefore the whole prefix up to the block's end, compared token
/// for token (a token is any int; a digest alone lets two prefixes that collide share KV). One
/// block per key: a full block whose key another block still holds, once the call's own
/// evictions are done, is not cached. A cached block
/// holds one reference of the cache's own; when no request uses it any more (its count is 1)
/// it stays findable and counts as free. With prefix caching off, nothing is ever cached.
///
/// Taking blocks: a call takes the blocks it needs one at a time, for the request's blocks in
/// token order. Each is the pool's next idle block (the top of its stack: the block given back
/// last) while any is idle; only when none is idle is a cached block evicted, the one unused
/// longest first. A table therefore lists a prompt's hits, then its idle blocks, then the blocks
/// it evicted.
///
/// Errors: an unknown id throws std::invalid_argument; running out of blocks is a return
/// value (`std::nullopt`, `false`) after which nothing has changed. Every member that throws
/// changes nothing, a std::bad_alloc from the heap included (the tests make the heap fail on
/// purpose): do everything that allocates first, then the steps that cannot be undone.
class KVCacheManager {
 public:
  using RequestId = int;

  /// Stage 1. A manager of `num_blocks` blocks of `block_tokens` tokens each, all idle.
  /// TODO: num_blocks < 0 or block_tokens <= 0 throws std::invalid_argument (0 blocks is allowed).
  /// `prefix_caching` false: no block is ever cached, and admit never hits (stages 1 and 2).
  KVCacheManager(int num_blocks, [[maybe_unused]] int block_tokens, [[maybe_unused]] bool prefix_caching = true)
      : pool_(num_blocks) {}

  KVCacheManager(const KVCacheManager&) = delete;
  KVCacheManager& operator=(const KVCacheManager&) = delete;

  /// Stage 1. Gives request `r` ceil(len / block_tokens) blocks for its prompt and returns the
  /// number of prompt tokens whose KV is already there (0 with prefix caching off).
  /// TODO: std::nullopt, and nothing changed at all (no block taken, no eviction, no stats),
  /// when the blocks cannot be had, even by evicting.
  /// TODO: an id already admitted, or an empty prompt, throws std::invalid_argument.
  /// Stage 3. The leading full blocks whose whole prefix is cached are reused: retained, not
  /// copied, and made recently used. At most (len - 1) / block_tokens blocks hit: the last
  /// prompt token is always computed, since its logits give the first generated token. The
  /// result is hits * block_tokens. With prefix caching on, every full prompt block becomes
  /// findable in the cache (unless another block holds its key already).
  /// A hit on a cached block no request uses does not count as a free block too.
  /// TODO: add len to stats().queried_tokens and the hit tokens to stats().hit_tokens, on a
  /// successful admit only, and only with prefix caching on.
  [[nodiscard]] std::optional<int> admit([[maybe_unused]] RequestId r, [[maybe_unused]] std::span<const int> prompt) {
    return std::nullopt;
  }

  /// Stage 1. Makes room for one more token of `r` and stores `token`: a new block when the
  /// last one is full (or with none).
  /// Stage 2. When the last block is partly filled and shared (after a fork), a private copy
  /// first: drop this request's reference to the shared block, take a new one, and append
  /// {shared, new} to `copies` (never clear it: the engine gathers a whole step's copies in
  /// it) and count it in stats().copies.
  /// TODO: false, with nothing changed, when a block is needed and none can be had.
  /// Stage 3. With prefix caching on, a block that the token fills becomes findable in the
  /// cache, under the request's own tokens, whether or not the blocks before it are still
  /// cached; after a copy-on-write, that block is the copy.
  [[nodiscard]] bool append_token([[maybe_unused]] RequestId r, [[maybe_unused]] int token,
                                  [[maybe_unused]] std::vector<BlockCopy>& copies) {
    return false;
  }

  /// Stage 2. `child` gets `parent`'s tokens and block table, every block retained once more
  /// (parallel sampling, beam search). Nothing is copied until someone writes.
  /// TODO: an unknown parent, or a child id already admitted, throws std::invalid_argument.
  void fork([[maybe_unused]] RequestId parent, [[maybe_unused]] RequestId child) {}

  /// Stage 1. Gives up every block of `r`, from its last block to its first, and forgets `r`.
  /// Stage 3. A cached block that no request uses any more stays findable and counts as free;
  /// releasing last to first makes the end of a prompt unused before its beginning.
  void release([[maybe_unused]] RequestId r) {}

  /// Stage 1. `r`'s blocks in token order (valid until the next call that changes `r`).
  [[nodiscard]] std::span<const int> block_table([[maybe_unused]] RequestId r) const { return {}; }

  /// Stage 1. How many tokens `r` holds: its prompt and every appended token.
  [[nodiscard]] int num_tokens([[maybe_unused]] RequestId r) const { return 0; }

  /// Stage 1. Where token `position` of `r` lives in the KV buffer, counted in tokens:
  /// `block_table(r)[position / block_tokens] * block_tokens + position % block_tokens`.
  /// TODO: a position outside [0, num_tokens(r)) throws std::out_of_range.
  [[nodiscard]] int slot([[maybe_unused]] RequestId r, [[maybe_unused]] int position) const { return 0; }

  /// Stage 1. Blocks a request could get: idle in the pool, plus cached blocks no request uses.
  [[nodiscard]] int num_free_blocks() const noexcept { return 0; }

  /// Stage 1. 0 while prefix caching is off.
  /// Stage 3. The keys the cache holds, one per cached block, in use or not: a block whose
  /// earlier blocks were evicted stays cached and counts, though no prompt hits it until its
  /// whole prefix is cached again.
  [[nodiscard]] int num_cached_blocks() const noexcept { return 0; }

  /// Stage 1. Every count 0 while prefix caching is off and no request was forked.
  /// Stages 2 and 3. What the cache did so far.
  [[nodiscard]] PrefixCacheStats stats() const noexcept { return {}; }

  /// Stage 1. The pool that numbers the blocks and counts their references.
  [[nodiscard]] const BlockPool& pool() const noexcept { return pool_; }

 private:
  BlockPool pool_;
  // TODO: your state: the block size, each request's tokens and block table, the cache (whole
  // prefix -> block), and the order in which cached blocks became unused.
};

}  // namespace alloclab
