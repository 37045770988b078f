// AllocLab exercise 07, reference solution: the KV cache manager of a serving engine, with
// automatic prefix caching, over exercise 03's block pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "block_pool.hpp"

namespace alloclab {

/// Copy block `src` into block `dst` before anything is written into `dst`.
struct BlockCopy {
  int src, dst;
  bool operator==(const BlockCopy&) const = default;
};

struct PrefixCacheStats {
  std::size_t queried_tokens;  ///< prompt tokens of every successful admit (0 while prefix caching is off)
  std::size_t hit_tokens;      ///< of those, the tokens whose KV admit found cached
  std::size_t evictions;       ///< cached blocks given back to the pool to make room
  std::size_t copies;          ///< copy-on-write copies append_token ordered
};

/// Which KV blocks each request of a serving engine holds, and which of them a new prompt can
/// reuse.
///
/// Policy: a request's tokens fill its blocks in order (token `p` in block `p / block_tokens`,
/// at offset `p % block_tokens`), and it takes a new block only when its last one is full.
/// With prefix caching, every full block is findable by its whole prefix: the tokens of the
/// block and of every block before it. The key is that prefix itself, compared token for
/// token, so two prompts that differ anywhere before a block never share it, and no hash can
/// collide. A cached block carries one reference of the cache's own; when no request uses it
/// any more it stays findable and counts as free, and is evicted only when no block of the
/// pool is idle, the one unused longest first. A request gives its blocks back from its last
/// to its first, so the end of a prompt is evicted before its beginning, which other prompts
/// are likelier to share.
///
/// Errors follow the kit's policy: unknown ids and an id admitted twice throw
/// `std::invalid_argument`, a position outside a request throws `std::out_of_range`, and
/// running out of blocks is a return value (`std::nullopt`, `false`) after which nothing has
/// changed.
class KVCacheManager {
 public:
  using RequestId = int;

  KVCacheManager(int num_blocks, int block_tokens, bool prefix_caching = true)
      : pool_(checked_blocks(num_blocks)), block_tokens_(checked_tokens(block_tokens)),
        prefix_caching_(prefix_caching), key_of_(static_cast<std::size_t>(num_blocks)),
        unused_at_(static_cast<std::size_t>(num_blocks), unused_.end()) {}

  KVCacheManager(const KVCacheManager&) = delete;
  KVCacheManager& operator=(const KVCacheManager&) = delete;

  /// Blocks for request `r`'s prompt. Returns how many prompt tokens already have their KV
  /// (the cached prefix), or `std::nullopt`, with nothing changed, when the blocks cannot be
  /// had even by evicting.
  [[nodiscard]] std::optional<int> admit(RequestId r, std::span<const int> prompt) {
    if (requests_.contains(r)) bad_id(r, "admit", "is already admitted");
    if (prompt.empty()) empty_prompt(r);
    const int len = static_cast<int>(prompt.size());
    const int blocks = (len + block_tokens_ - 1) / block_tokens_;
    // The last prompt token is always computed: its logits give the first generated token.
    const int max_hits = prefix_caching_ ? (len - 1) / block_tokens_ : 0;

    std::vector<int> hits;
    for (int i = 0; i < max_hits; ++i) {
      const auto found = cached_.find(prefix(prompt, i + 1));
      if (found == cached_.end()) break;
      hits.push_back(found->second);
    }
    // A hit on a block no request uses takes it off the free list: it cannot also be evicted.
    int hits_on_unused = 0;
    for (const int b : hits) hits_on_unused += pool_.refcount(b) == 1 ? 1 : 0;
    const int need = blocks - static_cast<int>(hits.size());
    if (need > pool_.num_free() + static_cast<int>(unused_.size()) - hits_on_unused) return std::nullopt;

    Request request;
    request.tokens.assign(prompt.begin(), prompt.end());
    request.table.reserve(static_cast<std::size_t>(blocks));
    for (const int b : hits) {
      use(b);
      request.table.push_back(b);
    }
    for (int i = 0; i < need; ++i) request.table.push_back(take_block());
    for (int i = static_cast<int>(hits.size()); i < len / block_tokens_; ++i) {
      remember(request.table[static_cast<std::size_t>(i)], prefix(prompt, i + 1));
    }
    requests_.emplace(r, std::move(request));
    if (prefix_caching_) {
      stats_.queried_tokens += static_cast<std::size_t>(len);
      stats_.hit_tokens += hits.size() * static_cast<std::size_t>(block_tokens_);
    }
    return static_cast<int>(hits.size()) * block_tokens_;
  }

  /// Room for one more token of `r`: a new block when its last one is full, a private copy
  /// (added to `copies`) when its last block is partly filled and shared after a `fork`.
  /// `false`, with nothing changed, when no block can be had.
  [[nodiscard]] bool append_token(RequestId r, int token, std::vector<BlockCopy>& copies) {
    Request& request = lookup(r, "append_token");
    const int n = static_cast<int>(request.tokens.size());
    const bool needs_block = n % block_tokens_ == 0;
    const bool shared = !needs_block && pool_.refcount(request.table.back()) > 1;
    if ((needs_block || shared) && pool_.num_free() + static_cast<int>(unused_.size()) == 0) return false;
    room_for_one_more(request.tokens);
    if (needs_block) {
      room_for_one_more(request.table);
      request.table.push_back(take_block());
    } else if (shared) {
      room_for_one_more(copies);
      const int old = request.table.back();
      const int fresh = take_block();
      pool_.release(old);  // shared, so it stays in use by the others
      request.table.back() = fresh;
      copies.push_back({old, fresh});
      ++stats_.copies;
    }
    request.tokens.push_back(token);
    if ((n + 1) % block_tokens_ == 0) {
      remember(request.table.back(), prefix(request.tokens, (n + 1) / block_tokens_));
    }
    return true;
  }

  /// `child` gets `parent`'s tokens and block table, every block shared.
  void fork(RequestId parent, RequestId child) {
    const Request& from = lookup(parent, "fork");
    if (requests_.contains(child)) bad_id(child, "fork", "is already admitted");
    Request copy = from;
    requests_.emplace(child, std::move(copy));
    for (const int b : from.table) use(b);
  }

  /// Gives up `r`'s blocks, from its last to its first.
  void release(RequestId r) {
    const auto found = requests_.find(r);
    if (found == requests_.end()) bad_id(r, "release", "is unknown");
    const std::vector<int>& table = found->second.table;
    for (auto b = table.rbegin(); b != table.rend(); ++b) {
      pool_.release(*b);
      if (!key_of_[static_cast<std::size_t>(*b)].empty() && pool_.refcount(*b) == 1) {
        unused_at_[static_cast<std::size_t>(*b)] = unused_.insert(unused_.end(), *b);
      }
    }
    requests_.erase(found);
  }

  [[nodiscard]] std::span<const int> block_table(RequestId r) const { return lookup(r, "block_table").table; }
  [[nodiscard]] int num_tokens(RequestId r) const {
    return static_cast<int>(lookup(r, "num_tokens").tokens.size());
  }
  /// Where token `position` of `r` lives in the KV buffer, counted in tokens.
  [[nodiscard]] int slot(RequestId r, int position) const {
    const Request& request = lookup(r, "slot");
    if (position < 0 || position >= static_cast<int>(request.tokens.size())) outside(r, position);
    return request.table[static_cast<std::size_t>(position / block_tokens_)] * block_tokens_ +
           position % block_tokens_;
  }
  [[nodiscard]] int num_free_blocks() const noexcept { return pool_.num_free() + static_cast<int>(unused_.size()); }
  [[nodiscard]] int num_cached_blocks() const noexcept { return static_cast<int>(cached_.size()); }
  [[nodiscard]] PrefixCacheStats stats() const noexcept { return stats_; }
  [[nodiscard]] const BlockPool& pool() const noexcept { return pool_; }

 private:
  struct Request {
    std::vector<int> tokens;
    std::vector<int> table;
  };

  struct PrefixHash {
    std::size_t operator()(const std::vector<int>& tokens) const noexcept {
      std::uint64_t h = 14695981039346656037ull;  // FNV-1a over the tokens' values
      for (const int t : tokens) h = (h ^ static_cast<std::uint32_t>(t)) * 1099511628211ull;
      return static_cast<std::size_t>(h);
    }
  };

  /// Room for one more element, taken before anything changes (so a bad_alloc changes
  /// nothing), growing the capacity geometrically: reserve(size() + 1) would reallocate and
  /// copy the whole vector on every token.
  template <class T>
  static void room_for_one_more(std::vector<T>& v) {
    if (v.size() == v.capacity()) v.reserve(std::max<std::size_t>(2 * v.capacity(), 8));
  }

  std::vector<int> prefix(std::span<const int> tokens, int blocks) const {
    return {tokens.begin(), tokens.begin() + blocks * block_tokens_};
  }

  /// A block for one request: an idle one, else the cached block unused longest.
  int take_block() {
    if (pool_.num_free() == 0) {
      const int victim = unused_.front();
      unused_.pop_front();
      unused_at_[static_cast<std::size_t>(victim)] = unused_.end();
      cached_.erase(key_of_[static_cast<std::size_t>(victim)]);
      key_of_[static_cast<std::size_t>(victim)].clear();
      pool_.release(victim);  // the cache's own reference: the block is idle now
      ++stats_.evictions;
    }
    return pool_.allocate(1)->front();
  }

  /// One more reference to block `b`, which a request now uses.
  void use(int b) {
    auto& at = unused_at_[static_cast<std::size_t>(b)];
    if (at != unused_.end()) {
      unused_.erase(at);
      at = unused_.end();
    }
    pool_.retain(b);
  }

  /// Makes full block `b` findable by `key`, unless another block already is (one block per key).
  void remember(int b, std::vector<int> key) {
    if (!prefix_caching_ || cached_.contains(key)) return;
    key_of_[static_cast<std::size_t>(b)] = key;
    cached_.emplace(std::move(key), b);
    pool_.retain(b);  // the cache's own reference
  }

  const Request& lookup(RequestId r, const char* what) const {
    const auto found = requests_.find(r);
    if (found == requests_.end()) bad_id(r, what, "is unknown");
    return found->second;
  }
  Request& lookup(RequestId r, const char* what) {
    return const_cast<Request&>(std::as_const(*this).lookup(r, what));
  }

  static int checked_blocks(int num_blocks) {
    if (num_blocks < 0) bad_size("num_blocks must not be negative");
    return num_blocks;
  }
  static int checked_tokens(int block_tokens) {
    if (block_tokens <= 0) bad_size("block_tokens must be positive");
    return block_tokens;
  }

  [[noreturn, gnu::noinline, gnu::cold]] static void bad_size(const char* what) {
    throw std::invalid_argument(std::string("KVCacheManager: ") + what);
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void bad_id(RequestId r, const char* what, const char* why) {
    throw std::invalid_argument(std::string("KVCacheManager::") + what + ": request " + std::to_string(r) + " " + why);
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void empty_prompt(RequestId r) {
    throw std::invalid_argument("KVCacheManager::admit: request " + std::to_string(r) + " has an empty prompt");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void outside(RequestId r, int position) {
    throw std::out_of_range("KVCacheManager::slot: position " + std::to_string(position) + " is outside request " +
                            std::to_string(r));
  }

  BlockPool pool_;
  int block_tokens_;
  bool prefix_caching_;
  std::unordered_map<RequestId, Request> requests_;
  std::unordered_map<std::vector<int>, int, PrefixHash> cached_;  // whole prefix -> block
  std::vector<std::vector<int>> key_of_;                         // block -> its key; empty when not cached
  std::list<int> unused_;                                        // cached blocks no request uses, unused longest first
  std::vector<std::list<int>::iterator> unused_at_;              // block -> its place in unused_, or end()
  PrefixCacheStats stats_{};
};

}  // namespace alloclab
