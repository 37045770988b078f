// AllocLab exercise 07, reference solution: the KV cache manager of a serving engine, with
// automatic prefix caching, over exercise 03's block pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
/// Policy: a request's tokens fill its blocks in order (token `p` in block `p / block_tokens`,
/// at offset `p % block_tokens`), and it takes a new block only when its last one is full.
/// With prefix caching, every full block is findable by its whole prefix: the tokens of the
/// block and of every block before it. The key is that prefix itself, compared token for
/// token, so two prompts that differ anywhere before a block never share it, and no hash can
/// collide. One block per key: a full block whose key another block already holds is not
/// cached. A cached block carries one reference of the cache's own; when no request uses it
/// any more it stays findable and counts as free, and is evicted only when no block of the
/// pool is idle, the one unused longest first. A request gives its blocks back from its last
/// to its first, so the end of a prompt is evicted before its beginning, which other prompts
/// are likelier to share.
///
/// Errors follow the kit's policy: unknown ids and an id admitted twice throw
/// `std::invalid_argument`, a position outside a request throws `std::out_of_range`, and
/// running out of blocks is a return value (`std::nullopt`, `false`) after which nothing has
/// changed. Every member that throws changes nothing, a `std::bad_alloc` from the heap
/// included: each one first does everything that allocates (a request's tables, the cache's
/// new entries, the idle blocks it takes from the pool), undoes that if a later allocation
/// fails, and only then makes the changes that cannot fail (hits, evictions, references).
class KVCacheManager {
 public:
  using RequestId = int;

  KVCacheManager(int num_blocks, int block_tokens, bool prefix_caching = true)
      : pool_(checked_blocks(num_blocks)), block_tokens_(checked_tokens(block_tokens)),
        prefix_caching_(prefix_caching), entry_of_(static_cast<std::size_t>(num_blocks), nullptr),
        links_(static_cast<std::size_t>(num_blocks) + 1, Links{kNotListed, kNotListed}) {
    // The list of unused cached blocks is a ring through a sentinel, the index num_blocks.
    links_.back() = Links{num_blocks, num_blocks};
  }

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
      const auto found = cache_.find(prefix(prompt, i + 1));
      if (found == cache_.end()) break;
      hits.push_back(found->second);
    }
    // A hit on a block no request uses takes it off the unused list: it cannot also be evicted.
    int hits_on_unused = 0;
    for (const int b : hits) hits_on_unused += listed(b) ? 1 : 0;
    const int need = blocks - static_cast<int>(hits.size());
    if (need > num_free_blocks() - hits_on_unused) return std::nullopt;

    // 1. Everything that allocates, while nothing has changed yet.
    Request request;
    request.tokens.assign(prompt.begin(), prompt.end());
    request.table.reserve(static_cast<std::size_t>(blocks));
    const int full = prefix_caching_ ? len / block_tokens_ : 0;
    const int first_new = static_cast<int>(hits.size());
    NewEntries entries(cache_, new_slots_, static_cast<std::size_t>(full - first_new));  // first_new <= full
    std::vector<int> idle;
    auto place = requests_.end();
    try {
      for (int i = first_new; i < full; ++i) entries.add(prefix(prompt, i + 1));
      place = requests_.emplace(r, std::move(request)).first;
      idle = *pool_.allocate(std::min(need, pool_.num_free()));  // the idle blocks first
    } catch (...) {
      if (place != requests_.end()) requests_.erase(place);
      entries.undo();
      throw;
    }

    // 2. Nothing below allocates or throws.
    std::vector<int>& table = place->second.table;
    for (const int b : hits) {
      use(b);
      table.push_back(b);
    }
    for (const int b : idle) table.push_back(b);
    while (static_cast<int>(table.size()) < blocks) table.push_back(take_unused(entries));
    for (int i = first_new; i < full; ++i) {
      entries.fill(static_cast<std::size_t>(i - first_new), table[static_cast<std::size_t>(i)], *this);
    }
    if (prefix_caching_) {
      stats_.queried_tokens += static_cast<std::size_t>(len);
      stats_.hit_tokens += hits.size() * static_cast<std::size_t>(block_tokens_);
    }
    return first_new * block_tokens_;
  }

  /// Room for one more token of `r`: a new block when its last one is full, a private copy
  /// (appended to `copies`, whose earlier elements stay) when its last block is partly filled
  /// and shared after a `fork`. With prefix caching on, a block that the token fills becomes
  /// findable in the cache: the request's last block, the copy after a copy-on-write. `false`,
  /// with nothing changed, when no block can be had.
  [[nodiscard]] bool append_token(RequestId r, int token, std::vector<BlockCopy>& copies) {
    Request& request = lookup(r, "append_token");
    const int n = static_cast<int>(request.tokens.size());
    const bool needs_block = n % block_tokens_ == 0;
    const bool shared = !needs_block && pool_.refcount(request.table.back()) > 1;
    const bool takes = needs_block || shared;
    if (takes && num_free_blocks() == 0) return false;
    const bool fills = (n + 1) % block_tokens_ == 0;

    // 1. Everything that allocates.
    room_for_one_more(request.tokens);
    if (needs_block) room_for_one_more(request.table);
    if (shared) room_for_one_more(copies);
    NewEntries entries(cache_, new_slots_, fills && prefix_caching_ ? 1 : 0);  // most tokens fill no block
    request.tokens.push_back(token);  // room made: cannot throw, and taken back if anything below does
    int fresh = -1;
    try {
      if (fills && prefix_caching_) entries.add(request.tokens);  // the key: the tokens so far, `token` last
      if (takes && pool_.num_free() > 0) fresh = pool_.allocate(1)->front();
    } catch (...) {
      request.tokens.pop_back();
      entries.undo();
      throw;
    }

    // 2. Nothing below allocates or throws.
    if (takes && fresh < 0) fresh = take_unused(entries);
    if (needs_block) {
      request.table.push_back(fresh);
    } else if (shared) {
      const int old = request.table.back();
      pool_.release(old);  // partly filled, so never cached: the others keep it in use
      request.table.back() = fresh;
      copies.push_back({old, fresh});
      ++stats_.copies;
    }
    if (fills && prefix_caching_) entries.fill(0, request.table.back(), *this);
    return true;
  }

  /// `child` gets `parent`'s tokens and block table, every block shared.
  void fork(RequestId parent, RequestId child) {
    const Request& from = lookup(parent, "fork");
    if (requests_.contains(child)) bad_id(child, "fork", "is already admitted");
    requests_.emplace(child, from);  // may throw: nothing is retained yet
    for (const int b : from.table) pool_.retain(b);  // every block is in use by the parent: none is listed
  }

  /// Gives up `r`'s blocks, from its last to its first.
  void release(RequestId r) {
    const auto found = requests_.find(r);
    if (found == requests_.end()) bad_id(r, "release", "is unknown");
    const std::vector<int>& table = found->second.table;
    for (auto b = table.rbegin(); b != table.rend(); ++b) {
      pool_.release(*b);
      // Only the cache's reference is left: the block stays findable, and counts as free.
      if (entry_of_[static_cast<std::size_t>(*b)] != nullptr && pool_.refcount(*b) == 1) list_newest(*b);
    }
    requests_.erase(found);
  }

  /// `r`'s blocks in token order; the view is valid until the next call that changes `r`.
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
  [[nodiscard]] int num_free_blocks() const noexcept { return pool_.num_free() + unused_; }
  [[nodiscard]] int num_cached_blocks() const noexcept { return static_cast<int>(cache_.size()); }
  [[nodiscard]] PrefixCacheStats stats() const noexcept { return stats_; }
  [[nodiscard]] const BlockPool& pool() const noexcept { return pool_; }

 private:
  struct Request {
    std::vector<int> tokens;
    std::vector<int> table;
  };

  // Hash and equality take any run of tokens (`is_transparent`), so that a lookup needs no key
  // of its own: find(span) looks a prefix up where it lies, and only a new entry copies it.
  struct PrefixHash {
    using is_transparent = void;
    std::size_t operator()(std::span<const int> tokens) const noexcept {
      std::uint64_t h = 14695981039346656037ull;  // FNV-1a over the tokens' values
      for (const int t : tokens) h = (h ^ static_cast<std::uint32_t>(t)) * 1099511628211ull;
      return static_cast<std::size_t>(h);
    }
  };

  struct PrefixEqual {
    using is_transparent = void;
    bool operator()(std::span<const int> a, std::span<const int> b) const noexcept {
      return std::ranges::equal(a, b);
    }
  };

  using Cache = std::unordered_map<std::vector<int>, int, PrefixHash, PrefixEqual>;  // whole prefix -> block
  using Entry = Cache::value_type;  // a rehash moves no entry: pointers to them stay valid

  static constexpr int kNoBlock = -1;    // an entry made ready for a block not yet known
  static constexpr int kNotListed = -1;  // the links of a block not on the unused list

  /// The cache entries one call will fill, one per new full block: inserted before anything
  /// changes (inserting allocates), erased again by undo() if a later allocation fails. Their
  /// list is the manager's, kept from call to call, so that a call reuses the room the last
  /// one made instead of allocating its own.
  class NewEntries {
   public:
    struct Slot {
      Entry* entry;
      bool inserted;
    };

    NewEntries(Cache& cache, std::vector<Slot>& slots, std::size_t n) : cache_(cache), slots_(slots) {
      slots_.clear();
      slots_.reserve(n);
    }

    /// The entry for `key`: the one another block already holds, or a new one, which copies it.
    void add(std::span<const int> key) {
      auto at = cache_.find(key);
      const bool inserted = at == cache_.end();
      if (inserted) at = cache_.try_emplace(std::vector<int>(key.begin(), key.end()), kNoBlock).first;
      slots_.push_back({&*at, inserted});  // reserved: cannot throw
    }

    /// True when `e` is one of this call's keys (an eviction then keeps the entry for it).
    [[nodiscard]] bool holds(const Entry* e) const noexcept {
      return std::any_of(slots_.begin(), slots_.end(), [e](const Slot& s) { return s.entry == e; });
    }

    /// Block `b` takes key `i` unless another block holds it.
    void fill(std::size_t i, int b, KVCacheManager& m) noexcept {
      Entry* e = slots_[i].entry;
      if (e->second != kNoBlock) return;  // one block per key
      e->second = b;
      m.entry_of_[static_cast<std::size_t>(b)] = e;
      m.pool_.retain(b);  // the cache's own reference
    }

    void undo() noexcept {
      for (const Slot& s : slots_) {
        if (s.inserted) cache_.erase(cache_.find(s.entry->first));
      }
    }

   private:
    Cache& cache_;
    std::vector<Slot>& slots_;
  };

  std::span<const int> prefix(std::span<const int> tokens, int blocks) const {
    return tokens.first(static_cast<std::size_t>(blocks * block_tokens_));
  }

  /// Evicts the cached block unused longest and hands it to the caller: the cache's reference
  /// becomes the caller's, so the pool sees no change. Its entry goes, unless it is one of the
  /// caller's own new keys, which then waits for the block that will hold it.
  int take_unused(const NewEntries& mine) noexcept {
    const int victim = links_.back().newer;  // the oldest
    unlist(victim);
    Entry*& e = entry_of_[static_cast<std::size_t>(victim)];
    if (mine.holds(e)) {
      e->second = kNoBlock;
    } else {
      cache_.erase(cache_.find(e->first));
    }
    e = nullptr;
    ++stats_.evictions;
    return victim;
  }

  /// One more reference to block `b`, which a request now uses.
  void use(int b) noexcept {
    if (listed(b)) unlist(b);
    pool_.retain(b);
  }

  // The unused cached blocks, a doubly linked ring by block number through the sentinel (the
  // last element of links_): its `newer` is the block unused longest, its `older` the latest.
  struct Links {
    int older, newer;
  };
  Links& links(int b) noexcept { return links_[static_cast<std::size_t>(b)]; }
  [[nodiscard]] bool listed(int b) const noexcept { return links_[static_cast<std::size_t>(b)].older != kNotListed; }
  void list_newest(int b) noexcept {
    const int sentinel = static_cast<int>(links_.size()) - 1;
    const int latest = links_.back().older;
    links(b) = Links{latest, sentinel};
    links(latest).newer = b;
    links_.back().older = b;
    ++unused_;
  }
  void unlist(int b) noexcept {
    const Links at = links(b);
    links(at.older).newer = at.newer;
    links(at.newer).older = at.older;
    links(b) = Links{kNotListed, kNotListed};
    --unused_;
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

  /// Room for one more element, taken before anything changes (so that a bad_alloc changes
  /// nothing), growing the capacity geometrically: reserve(size() + 1) would reallocate and
  /// copy the whole vector at every token.
  template <class T>
  static void room_for_one_more(std::vector<T>& v) {
    if (v.size() == v.capacity()) v.reserve(std::max<std::size_t>(2 * v.capacity(), 8));
  }

  BlockPool pool_;
  int block_tokens_;
  bool prefix_caching_;
  std::unordered_map<RequestId, Request> requests_;
  Cache cache_;
  std::vector<Entry*> entry_of_;  // block -> its cache entry; nullptr when not cached
  std::vector<Links> links_;      // the unused list, by block number, sentinel last
  int unused_ = 0;                // blocks on the unused list
  PrefixCacheStats stats_{};
  std::vector<NewEntries::Slot> new_slots_;  // NewEntries' list, kept for its room
};

}  // namespace alloclab
