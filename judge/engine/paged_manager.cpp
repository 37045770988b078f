// The engine's `paged` and `prefix` block managers: exercise 07's KVCacheManager behind the
// engine's BlockManager interface. This is the only file of the engine that includes the
// learner's header, so that an edit of it recompiles this file alone, not the model, the kernels
// and the scheduler; what crosses the seam is converted field by field into the engine's types.
//
// Every call into the manager is guarded (guarded_calls.hpp): an exception it throws leaves here
// as a ManagerError that names the call and its arguments.
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arithmetic.hpp"
#include "block_manager.hpp"
#include "guarded_calls.hpp"
#include "kv_cache_manager.hpp"

namespace alloclab::engine {
namespace {

/// Runs one call of the learner's manager; `said` describes it, and is only built when it throws.
template <class Call, class Said>
decltype(auto) guarded(Call&& call, Said&& said) {
  return seam::guarded("KVCacheManager", std::forward<Call>(call), std::forward<Said>(said));
}

using seam::request;

class PagedManager final : public BlockManager {
 public:
  PagedManager(int num_blocks, int block_tokens, bool prefix_caching)
      : m_(num_blocks, block_tokens, prefix_caching), num_blocks_(num_blocks), block_tokens_(block_tokens) {}

  std::optional<int> admit(int seq, std::span<const int> tokens, int, int) override {
    return guarded([&] { return m_.admit(seq, tokens); },
                   [&] { return "admit(" + request(seq) + ", a " + std::to_string(tokens.size()) + "-token prompt)"; });
  }
  int blocks_to_admit(int tokens, int, int) const override { return ceil_div(tokens, block_tokens_); }
  bool append_token(int seq, int token, std::vector<KvCopy>& copies) override {
    // The manager sees the copies ordered earlier in the step, as the contract says, and may only
    // append to them. Both vectors keep their capacity: no heap allocation in a steady state.
    ordered_.clear();
    for (const KvCopy& c : copies) ordered_.push_back({c.src, c.dst});
    const bool ok = guarded([&] { return m_.append_token(seq, token, ordered_); },
                            [&] { return "append_token(" + request(seq) + ", token " + std::to_string(token) + ")"; });
    copies.clear();
    for (const BlockCopy& c : ordered_) copies.push_back({c.src, c.dst});
    return ok;
  }
  void fork(int parent, int child, std::vector<KvCopy>&) override {
    guarded([&] { m_.fork(parent, child); }, [&] { return "fork(" + request(parent) + ", " + request(child) + ")"; });
  }
  void release(int seq) override {
    guarded([&] { m_.release(seq); }, [&] { return "release(" + request(seq) + ")"; });
  }
  std::span<const int> block_table(int seq) const override {
    return guarded([&] { return m_.block_table(seq); }, [&] { return "block_table(" + request(seq) + ")"; });
  }
  int slot(int seq, int position) const override {
    return guarded([&] { return m_.slot(seq, position); },
                   [&] { return "slot(" + request(seq) + ", position " + std::to_string(position) + ")"; });
  }
  int num_free_blocks() const override { return m_.num_free_blocks(); }
  int num_idle_blocks() const override { return m_.pool().num_free(); }
  KvCacheStats stats() const override {
    const PrefixCacheStats s = m_.stats();
    return {s.queried_tokens, s.hit_tokens, s.evictions, s.copies};
  }
  int held_blocks(int seq) const override { return static_cast<int>(block_table(seq).size()); }
  bool grows() const override { return true; }

  std::string audit(int sequences) const override {
    std::string held;
    int count = 0;
    for (int seq = 0; seq < sequences; ++seq) {
      try {
        (void)m_.block_table(seq);
      } catch (const std::invalid_argument&) {
        continue;  // released and forgotten, as it should be
      } catch (...) {
      }
      if (count++ < 3) held += (held.empty() ? "" : ", ") + std::to_string(seq);
    }
    if (count)
      return std::to_string(count) + " released requests are still known to the manager (" + held +
             (count > 3 ? ", ..." : "") + "): block_table() of a released request must throw std::invalid_argument";
    const int free = m_.num_free_blocks(), idle = m_.pool().num_free(), cached = m_.num_cached_blocks();
    if (free != num_blocks_)
      return "num_free_blocks() is " + std::to_string(free) + " of " + std::to_string(num_blocks_) +
             " once every request is released: " + std::to_string(num_blocks_ - free) +
             " blocks are neither idle nor cached, lost to every later request";
    if (idle + cached != num_blocks_)
      return "the pool has " + std::to_string(idle) + " idle blocks and the cache " + std::to_string(cached) +
             " cached ones, " + std::to_string(idle + cached) + " in all, not the " + std::to_string(num_blocks_) +
             " blocks num_free_blocks() reports";
    for (int b = 0; b < num_blocks_; ++b)
      if (m_.pool().refcount(b) > 1)
        return "block " + std::to_string(b) + " still has " + std::to_string(m_.pool().refcount(b)) +
               " references once every request is released: a cached block keeps only the cache's own";
    return {};
  }

 private:
  KVCacheManager m_;
  int num_blocks_, block_tokens_;
  std::vector<BlockCopy> ordered_;  // the step's copies, in the manager's type
};

}  // namespace

std::unique_ptr<BlockManager> make_paged_manager(int num_blocks, int block_tokens, bool prefix_caching) {
  return std::make_unique<PagedManager>(num_blocks, block_tokens, prefix_caching);
}

}  // namespace alloclab::engine
