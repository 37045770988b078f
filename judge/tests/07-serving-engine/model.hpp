// The KV cache manager's contract as the simplest code that can be right: the block pool as a
// vector of counts and a stack of idle blocks, the requests and the cache as vectors searched
// from the front, the unused cached blocks as a vector in the order they became unused. The
// model stage (stage5_model.cpp) runs every call on this and on the header under test, and
// compares what the contract lets a caller observe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace kv_model {

struct Copy {
  int src, dst;
  bool operator==(const Copy&) const = default;
};

struct Stats {
  std::size_t queried_tokens = 0, hit_tokens = 0, evictions = 0, copies = 0;
};

/// How a call that takes a request id ended, as the contract tells endings apart.
enum class Ending { done, refused, invalid_argument, out_of_range };

class Manager {
 public:
  struct Request {
    int id;
    std::vector<int> tokens, table;
  };

  /// The caller checks the sizes: num_blocks >= 0, block_tokens > 0.
  Manager(int num_blocks, int block_tokens, bool prefix_caching)
      : block_tokens_(block_tokens), caching_(prefix_caching), count_(static_cast<std::size_t>(num_blocks), 0) {
    // A new pool hands its blocks out in ascending order: block 0 on top of the stack.
    for (int b = num_blocks - 1; b >= 0; --b) idle_.push_back(b);
  }

  /// The tokens admit reports as cached (`hits`), or `refused` when the blocks cannot be had.
  Ending admit(int r, const std::vector<int>& prompt, int& hits_tokens) {
    if (find(r) != nullptr || prompt.empty()) return Ending::invalid_argument;
    const int len = static_cast<int>(prompt.size());
    const int blocks = (len + block_tokens_ - 1) / block_tokens_;
    // The leading full blocks whose whole prefix is cached, never the block of the last token.
    std::vector<int> hits;
    const int most = caching_ ? (len - 1) / block_tokens_ : 0;
    for (int i = 0; i < most; ++i) {
      const int b = cached_block(prefix(prompt, i + 1));
      if (b < 0) break;
      hits.push_back(b);
    }
    int hits_on_unused = 0;
    for (const int b : hits) hits_on_unused += is_unused(b) ? 1 : 0;
    const int need = blocks - static_cast<int>(hits.size());
    if (need > num_free_blocks() - hits_on_unused) return Ending::refused;

    Request request{r, prompt, {}};
    for (const int b : hits) {
      std::erase(unused_, b);  // used again
      ++count(b);
      request.table.push_back(b);
    }
    for (int i = 0; i < need; ++i) request.table.push_back(take());
    if (caching_) {
      for (int i = 0; i < len / block_tokens_; ++i) {
        cache(prefix(prompt, i + 1), request.table[static_cast<std::size_t>(i)]);
      }
      stats_.queried_tokens += static_cast<std::size_t>(len);
      stats_.hit_tokens += hits.size() * static_cast<std::size_t>(block_tokens_);
    }
    requests_.push_back(std::move(request));
    hits_tokens = static_cast<int>(hits.size()) * block_tokens_;
    return Ending::done;
  }

  Ending append_token(int r, int token, std::vector<Copy>& copies) {
    Request* request = find_mutable(r);
    if (request == nullptr) return Ending::invalid_argument;
    const int n = static_cast<int>(request->tokens.size());
    const bool needs_block = n % block_tokens_ == 0;
    const bool shared = !needs_block && count(request->table.back()) > 1;
    if ((needs_block || shared) && num_free_blocks() == 0) return Ending::refused;
    if (needs_block) {
      request->table.push_back(take());
    } else if (shared) {
      const int old = request->table.back();
      drop(old);
      const int fresh = take();
      request->table.back() = fresh;
      copies.push_back({old, fresh});
      ++stats_.copies;
    }
    request->tokens.push_back(token);
    // A block that the token fills becomes findable, with prefix caching on.
    if (caching_ && (n + 1) % block_tokens_ == 0) cache(request->tokens, request->table.back());
    return Ending::done;
  }

  Ending fork(int parent, int child) {
    const Request* from = find(parent);
    if (from == nullptr || find(child) != nullptr) return Ending::invalid_argument;
    Request copy = *from;
    copy.id = child;
    for (const int b : copy.table) ++count(b);
    requests_.push_back(std::move(copy));
    return Ending::done;
  }

  Ending release(int r) {
    const Request* request = find(r);
    if (request == nullptr) return Ending::invalid_argument;
    for (auto b = request->table.rbegin(); b != request->table.rend(); ++b) drop(*b);
    std::erase_if(requests_, [r](const Request& q) { return q.id == r; });
    return Ending::done;
  }

  const Request* find(int r) const {
    for (const Request& q : requests_) {
      if (q.id == r) return &q;
    }
    return nullptr;
  }
  /// The slot of token `position`, or nullopt when the position is outside the request.
  std::optional<int> slot(const Request& q, int position) const {
    if (position < 0 || position >= static_cast<int>(q.tokens.size())) return std::nullopt;
    return q.table[static_cast<std::size_t>(position / block_tokens_)] * block_tokens_ + position % block_tokens_;
  }
  const std::vector<Request>& requests() const { return requests_; }
  int num_free_blocks() const { return static_cast<int>(idle_.size() + unused_.size()); }
  int num_cached_blocks() const { return static_cast<int>(cache_.size()); }
  int idle_blocks() const { return static_cast<int>(idle_.size()); }
  int refcount(int b) const { return count_[static_cast<std::size_t>(b)]; }
  int num_blocks() const { return static_cast<int>(count_.size()); }
  const Stats& stats() const { return stats_; }
  /// The key under which the cache finds block `b`, or nullopt when it does not.
  std::optional<std::vector<int>> key_of(int b) const {
    for (const auto& [key, block] : cache_) {
      if (block == b) return key;
    }
    return std::nullopt;
  }
  bool caching() const { return caching_; }
  int block_tokens() const { return block_tokens_; }

 private:
  Request* find_mutable(int r) {
    for (Request& q : requests_) {
      if (q.id == r) return &q;
    }
    return nullptr;
  }
  int& count(int b) { return count_[static_cast<std::size_t>(b)]; }

  std::vector<int> prefix(const std::vector<int>& tokens, int blocks) const {
    return {tokens.begin(), tokens.begin() + blocks * block_tokens_};
  }
  int cached_block(const std::vector<int>& key) const {
    for (const auto& [k, b] : cache_) {
      if (k == key) return b;
    }
    return -1;
  }
  bool is_cached(int b) const {
    return std::any_of(cache_.begin(), cache_.end(), [b](const auto& entry) { return entry.second == b; });
  }
  bool is_unused(int b) const { return std::find(unused_.begin(), unused_.end(), b) != unused_.end(); }

  /// One block for a request: the top of the pool's idle stack, else the cached block unused
  /// longest, whose key is forgotten (the cache's reference becomes the request's).
  int take() {
    if (!idle_.empty()) {
      const int b = idle_.back();
      idle_.pop_back();
      count(b) = 1;
      return b;
    }
    const int b = unused_.front();
    unused_.erase(unused_.begin());
    std::erase_if(cache_, [b](const auto& entry) { return entry.second == b; });
    ++stats_.evictions;
    return b;
  }

  /// One reference fewer: at 0 the block is idle on top of the stack; a cached block left with
  /// the cache's reference alone becomes unused, the latest.
  void drop(int b) {
    if (--count(b) == 0) {
      idle_.push_back(b);
    } else if (count(b) == 1 && is_cached(b)) {
      unused_.push_back(b);
    }
  }

  /// One block per key: block `b` takes `key` unless a block holds it already. Called once the
  /// call's blocks are taken, so a key that the call's own eviction freed goes to `b`.
  void cache(const std::vector<int>& key, int b) {
    if (cached_block(key) >= 0) return;
    cache_.emplace_back(key, b);
    ++count(b);
  }

  int block_tokens_;
  bool caching_;
  std::vector<int> count_;
  std::vector<int> idle_;    // the pool's idle blocks, the next one handed out last
  std::vector<int> unused_;  // cached blocks no request uses, unused longest first
  std::vector<std::pair<std::vector<int>, int>> cache_;  // whole prefix -> block
  std::vector<Request> requests_;
  Stats stats_;
};

}  // namespace kv_model
