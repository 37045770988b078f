// Four ways to give KV memory to requests, behind one interface (block_manager.hpp), so that
// the same scheduler and model can be measured with each: `reserve` here, `paged` and `prefix`
// in paged_manager.cpp, over exercise 07's manager, and `virtual` in virtual_manager.cpp, over
// exercise 08's contiguous KV cache.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "arithmetic.hpp"
#include "block_manager.hpp"
#include "block_pool.hpp"
#include "heap_tally.hpp"

namespace alloclab::engine {

/// `reserve`: what engines did before paging (FasterTransformer, Orca). At admission a
/// request takes the blocks for its prompt plus the most tokens it may generate (the cap it
/// was sent with, since the engine cannot know where EOS falls), once per parallel sample,
/// and keeps them until it finishes. It never runs out mid-generation, so it never preempts;
/// the price is memory reserved and never written. Built over exercise 03's BlockPool.
class ReserveManager final : public BlockManager {
 public:
  ReserveManager(int num_blocks, int block_tokens) : pool_(num_blocks), block_tokens_(block_tokens) {}

  std::optional<int> admit(int seq, std::span<const int> tokens, int max_tokens, int samples) override {
    const int per = blocks_for(max_tokens);
    auto blocks = pool_.allocate(per * samples);
    if (!blocks) return std::nullopt;
    Seq s;
    s.tokens = static_cast<int>(tokens.size());
    s.table.assign(blocks->begin(), blocks->begin() + per);
    s.spare.assign(blocks->begin() + per, blocks->end());
    seqs_.emplace(seq, std::move(s));
    return 0;
  }
  int blocks_to_admit(int, int max_tokens, int samples) const override { return blocks_for(max_tokens) * samples; }
  bool append_token(int seq, int, std::vector<KvCopy>&) override {
    Seq& s = known(seq);
    if (s.tokens == static_cast<int>(s.table.size()) * block_tokens_) {  // past its reservation: cannot happen
      auto more = pool_.allocate(1);
      if (!more) return false;
      s.table.push_back(more->front());
    }
    ++s.tokens;
    return true;
  }
  /// The child takes its reservation, set aside at admission, and a copy of the parent's KV:
  /// without block sharing, a parallel sample starts as a full copy.
  void fork(int parent, int child, std::vector<KvCopy>& copies) override {
    Seq& p = known(parent);
    const auto per = p.table.size();
    if (p.spare.size() < per) throw std::logic_error("ReserveManager::fork: no reservation left for the child");
    Seq c;
    c.tokens = p.tokens;
    c.table.assign(p.spare.end() - static_cast<std::ptrdiff_t>(per), p.spare.end());
    p.spare.resize(p.spare.size() - per);
    for (int i = 0; i * block_tokens_ < p.tokens; ++i)
      copies.push_back({p.table[static_cast<std::size_t>(i)], c.table[static_cast<std::size_t>(i)]});
    copies_ += static_cast<std::size_t>(ceil_div(p.tokens, block_tokens_));
    seqs_.emplace(child, std::move(c));
  }
  void release(int seq) override {
    const auto it = seqs_.find(seq);
    if (it == seqs_.end()) unknown(seq);
    for (auto b = it->second.spare.rbegin(); b != it->second.spare.rend(); ++b) pool_.release(*b);
    for (auto b = it->second.table.rbegin(); b != it->second.table.rend(); ++b) pool_.release(*b);
    seqs_.erase(it);
  }
  std::span<const int> block_table(int seq) const override { return known(seq).table; }
  int slot(int seq, int position) const override {
    const Seq& s = known(seq);
    if (position < 0 || position >= s.tokens)
      throw std::out_of_range("ReserveManager::slot: position " + std::to_string(position) + " of a sequence of " +
                              std::to_string(s.tokens) + " tokens");
    return slot_of(s.table.data(), position, block_tokens_);
  }
  int num_free_blocks() const override { return pool_.num_free(); }
  int num_idle_blocks() const override { return pool_.num_free(); }
  KvCacheStats stats() const override { return {0, 0, 0, copies_}; }
  int held_blocks(int seq) const override {
    const Seq& s = known(seq);
    return static_cast<int>(s.table.size() + s.spare.size());
  }
  bool grows() const override { return false; }
  std::string audit(int) const override {
    if (!seqs_.empty()) return std::to_string(seqs_.size()) + " sequences still hold their reservations";
    if (pool_.num_free() != pool_.num_blocks())
      return std::to_string(pool_.num_blocks() - pool_.num_free()) + " blocks were never given back to the pool";
    return {};
  }

 private:
  struct Seq {
    int tokens = 0;
    std::vector<int> table;  // its own blocks, reserved to the cap
    std::vector<int> spare;  // the reservations of the samples still to fork
  };
  int blocks_for(int tokens) const { return ceil_div(tokens, block_tokens_); }
  // An unknown id throws std::invalid_argument, as exercise 07's manager does.
  Seq& known(int seq) {
    const auto it = seqs_.find(seq);
    if (it == seqs_.end()) unknown(seq);
    return it->second;
  }
  const Seq& known(int seq) const {
    const auto it = seqs_.find(seq);
    if (it == seqs_.end()) unknown(seq);
    return it->second;
  }
  [[noreturn]] static void unknown(int seq) {
    throw std::invalid_argument("ReserveManager: unknown sequence " + std::to_string(seq));
  }

  BlockPool pool_;
  int block_tokens_;
  std::unordered_map<int, Seq> seqs_;
  std::size_t copies_ = 0;
};

/// A block manager whose every call counts the heap allocations it makes (`allocations()`, since
/// it was built), so that `serve` can say how much of a step's heap traffic is the manager's.
class CountedManager final : public BlockManager {
 public:
  CountedManager(std::unique_ptr<BlockManager> m, std::uint64_t (*count)()) : m_(std::move(m)), count_(count) {}
  [[nodiscard]] std::uint64_t allocations() const noexcept { return allocations_; }

  std::optional<int> admit(int seq, std::span<const int> tokens, int max_tokens, int samples) override {
    HeapTally t(count_, allocations_);
    return m_->admit(seq, tokens, max_tokens, samples);
  }
  int blocks_to_admit(int tokens, int max_tokens, int samples) const override {
    HeapTally t(count_, allocations_);
    return m_->blocks_to_admit(tokens, max_tokens, samples);
  }
  bool append_token(int seq, int token, std::vector<KvCopy>& copies) override {
    HeapTally t(count_, allocations_);
    return m_->append_token(seq, token, copies);
  }
  void fork(int parent, int child, std::vector<KvCopy>& copies) override {
    HeapTally t(count_, allocations_);
    m_->fork(parent, child, copies);
  }
  void release(int seq) override {
    HeapTally t(count_, allocations_);
    m_->release(seq);
  }
  std::span<const int> block_table(int seq) const override {
    HeapTally t(count_, allocations_);
    return m_->block_table(seq);
  }
  int slot(int seq, int position) const override {
    HeapTally t(count_, allocations_);
    return m_->slot(seq, position);
  }
  int num_free_blocks() const override {
    HeapTally t(count_, allocations_);
    return m_->num_free_blocks();
  }
  int num_idle_blocks() const override {
    HeapTally t(count_, allocations_);
    return m_->num_idle_blocks();
  }
  KvCacheStats stats() const override { return m_->stats(); }
  int held_blocks(int seq) const override {
    HeapTally t(count_, allocations_);
    return m_->held_blocks(seq);
  }
  bool grows() const override { return m_->grows(); }
  std::string audit(int sequences) const override { return m_->audit(sequences); }
  bool contiguous() const override { return m_->contiguous(); }
  float* contiguous_kv(int seq) const override {
    HeapTally t(count_, allocations_);
    return m_->contiguous_kv(seq);
  }
  std::optional<KvMemory> memory() const override { return m_->memory(); }
  void sleep() override { m_->sleep(); }

 private:
  std::unique_ptr<BlockManager> m_;
  std::uint64_t (*count_)();
  mutable std::uint64_t allocations_ = 0;
};

enum class ManagerKind { prefix, paged, reserve, virtual_memory };

[[nodiscard]] inline std::optional<ManagerKind> manager_by_name(std::string_view n) noexcept {
  if (n == "prefix") return ManagerKind::prefix;
  if (n == "paged") return ManagerKind::paged;
  if (n == "reserve") return ManagerKind::reserve;
  if (n == "virtual") return ManagerKind::virtual_memory;
  return std::nullopt;
}
[[nodiscard]] inline const char* manager_name(ManagerKind k) noexcept {
  switch (k) {
    case ManagerKind::prefix: return "prefix";
    case ManagerKind::paged: return "paged";
    case ManagerKind::reserve: return "reserve";
    case ManagerKind::virtual_memory: return "virtual";
  }
  return "?";
}

/// The fewest blocks on which a manager of kind `k` can serve one request alone (`prompt`
/// tokens, `new_tokens` generated, `max_tokens` the most it may reach, `samples` forked): a
/// budget below it can never serve the request. `reserve` takes its whole reservation once per
/// sample, as `blocks_to_admit` says; a paged manager takes the blocks of the prompt and of
/// every new token, and one more per sample for the copy-on-write of the shared last block.
/// With nothing running, the engine admits without a watermark, so none is added. `virtual` is
/// counted as a paged manager: its fork copies the partly filled granule at once rather than at
/// the child's first token, one granule per sample all the same (where a granule is a block).
[[nodiscard]] inline int blocks_to_serve(ManagerKind k, int prompt, int new_tokens, int max_tokens, int samples,
                                         int block_tokens) {
  if (k == ManagerKind::reserve) return ceil_div(max_tokens, block_tokens) * samples;
  return ceil_div(prompt + new_tokens, block_tokens) + samples;
}

/// The manager of kind `k`; `virtual` is made by make_virtual_manager, with the engine's limits.
[[nodiscard]] inline std::unique_ptr<BlockManager> make_manager(ManagerKind k, int num_blocks, int block_tokens) {
  if (k == ManagerKind::virtual_memory)
    throw std::invalid_argument("make_manager: the virtual manager is made by make_virtual_manager");
  if (k == ManagerKind::reserve) return std::make_unique<ReserveManager>(num_blocks, block_tokens);
  return make_paged_manager(num_blocks, block_tokens, k == ManagerKind::prefix);
}

}  // namespace alloclab::engine
