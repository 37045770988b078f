// The engine's `paged` and `prefix` block managers: exercise 07's KVCacheManager behind the
// engine's BlockManager interface. This is the only file of the engine that includes the
// learner's header, so that an edit of it recompiles this file alone, not the model, the kernels
// and the scheduler; what crosses the seam is converted field by field into the engine's types.
#include <memory>
#include <span>
#include <vector>

#include "block_managers.hpp"
#include "kv_cache_manager.hpp"

namespace alloclab::engine {
namespace {

class PagedManager final : public BlockManager {
 public:
  PagedManager(int num_blocks, int block_tokens, bool prefix_caching)
      : m_(num_blocks, block_tokens, prefix_caching), block_tokens_(block_tokens) {}

  std::optional<int> admit(int seq, std::span<const int> tokens, int, int) override { return m_.admit(seq, tokens); }
  int blocks_to_admit(int tokens, int, int) const override { return (tokens + block_tokens_ - 1) / block_tokens_; }
  bool append_token(int seq, int token, std::vector<KvCopy>& copies) override {
    // The manager sees the copies ordered earlier in the step, as the contract says, and may only
    // append to them. Both vectors keep their capacity: no heap allocation in a steady state.
    ordered_.clear();
    for (const KvCopy& c : copies) ordered_.push_back({c.src, c.dst});
    const bool ok = m_.append_token(seq, token, ordered_);
    copies.clear();
    for (const BlockCopy& c : ordered_) copies.push_back({c.src, c.dst});
    return ok;
  }
  void fork(int parent, int child, std::vector<KvCopy>&) override { m_.fork(parent, child); }
  void release(int seq) override { m_.release(seq); }
  std::span<const int> block_table(int seq) const override { return m_.block_table(seq); }
  int num_free_blocks() const override { return m_.num_free_blocks(); }
  int num_idle_blocks() const override { return m_.pool().num_free(); }
  KvCacheStats stats() const override {
    const PrefixCacheStats s = m_.stats();
    return {s.queried_tokens, s.hit_tokens, s.evictions, s.copies};
  }
  int held_blocks(int seq) const override { return static_cast<int>(m_.block_table(seq).size()); }
  bool grows() const override { return true; }

 private:
  KVCacheManager m_;
  int block_tokens_;
  std::vector<BlockCopy> ordered_;  // the step's copies, in the manager's type
};

}  // namespace

std::unique_ptr<BlockManager> make_paged_manager(int num_blocks, int block_tokens, bool prefix_caching) {
  return std::make_unique<PagedManager>(num_blocks, block_tokens, prefix_caching);
}

}  // namespace alloclab::engine
