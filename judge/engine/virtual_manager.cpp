// The engine's `virtual` block manager: exercise 08's ContiguousKVCache behind the engine's
// BlockManager interface, as vAttention serves: each sequence's K and V lie contiguous in a slice
// of one reservation (position p at data(seq) + p * token bytes), physical granules are mapped
// into the slice as the sequence grows, and attention reads them with no block table. This is the
// only file of the engine that includes exercise 08's header, as paged_manager.cpp is for 07's.
//
// The physical budget is the paged managers' in bytes: the engine's KV blocks, regrouped into
// granules. Every call into the cache is guarded (guarded_calls.hpp).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arithmetic.hpp"
#include "block_manager.hpp"
#include "guarded_calls.hpp"
#include "virtual_memory.hpp"

namespace alloclab::engine {
namespace {

template <class Call, class Said>
decltype(auto) guarded(Call&& call, Said&& said) {
  return seam::guarded("ContiguousKVCache", std::forward<Call>(call), std::forward<Said>(said));
}

using seam::request;

/// Blocks in one granule: the fewest whose bytes are whole pages. The granule is the engine's
/// block, rounded up to pages, so that it is the same unit of physical memory as the paged
/// managers' block wherever a block is whole pages (the default model's 16-token block is 32 KiB,
/// eight pages: one block, one granule). `--compare` then sets contiguity against a block table,
/// not one granularity against another. A page is the least the system maps, so a block smaller
/// than a page (the tiny model's) shares its granule with the blocks that follow it in the same
/// sequence. A GPU maps 2 MiB granules, far more than a block: fewer, costlier maps, and more of
/// the last granule of each sequence unwritten.
int blocks_per_granule(int block_tokens, std::size_t token_bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t block = static_cast<std::size_t>(block_tokens) * token_bytes;
  int k = 1;
  while (block * static_cast<std::size_t>(k) % page != 0) ++k;
  return k;
}

class VirtualManager final : public BlockManager {
 public:
  explicit VirtualManager(const VirtualLimits& l)
      : per_granule_(blocks_per_granule(l.block_tokens, l.token_bytes)), block_tokens_(l.block_tokens),
        granule_tokens_(per_granule_ * l.block_tokens) {
    const std::size_t granule = static_cast<std::size_t>(granule_tokens_) * l.token_bytes;
    const std::size_t granules = static_cast<std::size_t>(l.num_blocks / per_granule_);
    memory_ = guarded([&] { return std::make_unique<PhysicalMemory>(granule, granules); },
                      [&] { return "PhysicalMemory(" + std::to_string(granule) + ", " + std::to_string(granules) + ")"; });
    cache_ = guarded(
        [&] {
          return std::make_unique<ContiguousKVCache>(*memory_, static_cast<std::size_t>(l.max_sequences),
                                                     static_cast<std::size_t>(l.max_tokens), l.token_bytes);
        },
        [&] {
          return "ContiguousKVCache(memory, " + std::to_string(l.max_sequences) + " sequences, " +
                 std::to_string(l.max_tokens) + " tokens, " + std::to_string(l.token_bytes) + " bytes a token)";
        });
    // The most blocks one sequence can list: block_table allocates nothing in a steady step.
    table_.reserve(static_cast<std::size_t>(ceil_div(l.max_tokens, block_tokens_)));
    held_.reserve(static_cast<std::size_t>(l.max_sequences));
  }

  /// A prompt whose parallel samples will fork needs, beyond its own granules, a copy of its
  /// partly filled one per other sample: the forks come at the end of the step, after the other
  /// admissions of the step, so admission sets those granules aside (`promised_`).
  std::optional<int> admit(int seq, std::span<const int> tokens, int, int samples) override {
    const int len = static_cast<int>(tokens.size());
    const std::size_t copies = fork_copies(len, samples);
    if (granules(len) + copies > available()) return std::nullopt;
    const bool ok = guarded(
        [&] {
          spare_no_extras(0, granules(len));
          return kept(
              [&] { return cache_->admit(seq, static_cast<std::size_t>(len)); }, [&] { cache_->release(seq); },
              promised_ + copies);
        },
        [&] { return "admit(" + request(seq) + ", " + std::to_string(len) + " tokens)"; });
    if (!ok) return std::nullopt;
    promised_ += copies;
    held_.push_back(guarded([&] { return cache_->slice_of(seq); }, [&] { return "slice_of(" + request(seq) + ")"; }));
    return 0;
  }
  int blocks_to_admit(int tokens, int, int samples) const override {
    return static_cast<int>(granules(tokens) + fork_copies(tokens, samples)) * per_granule_;
  }
  bool append_token(int seq, int, std::vector<KvCopy>&) override {
    return guarded([&] { return cache_->grow(seq, cache_->num_tokens(seq) + 1); },
                   [&] { return "grow(" + request(seq) + ", one token more)"; });
  }
  /// The cache aliases the parent's full granules and copies its partly filled one itself: the
  /// engine copies nothing.
  void fork(int parent, int child, std::vector<KvCopy>&) override {
    guarded(
        [&] {
          const std::size_t tokens = cache_->num_tokens(parent);
          const bool copy = tokens % static_cast<std::size_t>(granule_tokens_) != 0;
          spare_no_extras(tokens / static_cast<std::size_t>(granule_tokens_), granules(static_cast<int>(tokens)));
          const std::size_t still = copy && promised_ > 0 ? promised_ - 1 : promised_;
          if (!kept([&] { return cache_->fork(parent, child); }, [&] { cache_->release(child); }, still))
            throw std::logic_error("no slice or granule for the child, though admission set one aside");
          copies_ += copy;
          promised_ = still;
          held_.push_back(cache_->slice_of(child));
        },
        [&] { return "fork(" + request(parent) + ", " + request(child) + ")"; });
  }
  void release(int seq) override {
    guarded(
        [&] {
          const std::size_t slice = cache_->slice_of(seq);
          cache_->release(seq);
          std::erase(held_, slice);
        },
        [&] { return "release(" + request(seq) + ")"; });
  }
  /// The physical blocks the sequence's tokens lie in, numbered granule by granule: what the
  /// figures count (shared granules once), never what attention reads. Valid until the next call.
  std::span<const int> block_table(int seq) const override {
    return guarded(
        [&] {
          const std::size_t tokens = cache_->num_tokens(seq), first = cache_->slice_of(seq) * cache_->slice_granules();
          table_.clear();
          for (std::size_t b = 0; b < ceil_div(tokens, static_cast<std::size_t>(block_tokens_)); ++b) {
            const std::size_t at = first + b / static_cast<std::size_t>(per_granule_);
            const std::optional<std::size_t> g = cache_->range().mapped(at);
            if (!g)
              throw std::logic_error("slot " + std::to_string(at) + " holds tokens of " + request(seq) +
                                     " and has no granule mapped");
            table_.push_back(static_cast<int>(*g) * per_granule_ + static_cast<int>(b % static_cast<std::size_t>(per_granule_)));
          }
          return std::span<const int>(table_);
        },
        [&] { return "block_table(" + request(seq) + ")"; });
  }
  int slot(int seq, int position) const override {
    const std::size_t tokens = guarded([&] { return cache_->num_tokens(seq); },
                                       [&] { return "num_tokens(" + request(seq) + ")"; });
    if (position < 0 || static_cast<std::size_t>(position) >= tokens)
      throw std::out_of_range("VirtualManager::slot: position " + std::to_string(position) + " of a sequence of " +
                              std::to_string(tokens) + " tokens");
    return position;
  }
  int num_free_blocks() const override { return static_cast<int>(available()) * per_granule_; }
  int num_idle_blocks() const override { return static_cast<int>(memory_->num_free()) * per_granule_; }
  KvCacheStats stats() const override { return {0, 0, 0, copies_}; }
  /// Every granule its slice maps, those past its tokens too: a slice taken from an idle one
  /// keeps what its last sequence mapped, and nobody else can have it until this one is done.
  int held_blocks(int seq) const override {
    return guarded(
        [&] {
          const std::size_t first = cache_->slice_of(seq) * cache_->slice_granules();
          int mapped = 0;
          for (std::size_t i = 0; i < cache_->slice_granules(); ++i) mapped += cache_->range().mapped(first + i).has_value();
          return mapped * per_granule_;
        },
        [&] { return "held_blocks(" + request(seq) + ")"; });
  }
  bool grows() const override { return true; }
  bool contiguous() const override { return true; }
  float* contiguous_kv(int seq) const override {
    return guarded([&] { return reinterpret_cast<float*>(cache_->data(seq)); },
                   [&] { return "data(" + request(seq) + ")"; });
  }
  std::optional<KvMemory> memory() const override {
    return guarded([&] { return KvMemory{cache_->range().map_calls(), cache_->range().unmap_calls(),
                                         memory_->committed_bytes()}; },
                   [&] { return std::string("committed_bytes()"); });
  }
  void sleep() override {
    guarded([&] { cache_->sleep(); }, [&] { return std::string("sleep()"); });
  }

  std::string audit(int) const override {
    return guarded([&] { return audited(); }, [&] { return std::string("its observers, once every request was done,"); });
  }

 private:
  std::string audited() const {
    if (const std::size_t n = cache_->num_sequences(); n != 0)
      return std::to_string(n) + " released requests still hold a slice: num_sequences() must be 0 once every request "
             "is released";
    const std::size_t mapped = cache_->mapped_granules(), idle = cache_->idle_granules(), used = memory_->num_in_use();
    if (mapped != idle)
      return std::to_string(mapped - idle) + " mapped granules lie outside the idle slices once every request is "
             "released: no later sequence can reuse them";
    if (used != mapped)
      return std::to_string(used) + " granules are in use and " + std::to_string(mapped) + " slots mapped once every "
             "request is released: " + (used > mapped ? "a granule created or retained and never released is lost to "
                                                        "every later request"
                                                      : "a granule mapped twice with no fork left to share it");
    if (promised_ != 0) return std::to_string(promised_) + " granules set aside for forks that never came";
    const std::size_t committed = memory_->committed_bytes(), bound = used * memory_->granule_bytes();
    if (committed > bound)
      return "the system has " + std::to_string(committed) + " bytes committed to the physical memory, more than the " +
             std::to_string(bound) + " of its granules in use: a released granule's memory was not given back";
    return {};
  }

  /// Runs `take` (an admit or a fork), which must leave `promised` granules to be had. The cache
  /// takes the idle slice with the most granules mapped already: the granules that slice maps past
  /// what the sequence needs stay mapped for it to grow into, and are no longer anyone else's.
  /// When they were granules set aside, or the other idle slices lack what the slice needs, the
  /// sequence lets go (`undo`), every idle granule is given back (trim), and it takes a slice of
  /// nothing but free memory: exactly the granules it needs, which admission checked are there.
  template <class Take, class Undo>
  bool kept(Take take, Undo undo, std::size_t promised) {
    if (take()) {
      if (memory_->num_free() + cache_->idle_granules() >= promised) return true;
      undo();
    }
    cache_->trim();
    return take();
  }

  /// A sequence never holds granules past its tokens. The slice the cache takes for a sequence
  /// whose own granules are slots [from, to) (the contract: the free slice with the most of those
  /// already mapped, the lowest among equals) keeps whatever it maps past `to`, and nobody else
  /// can have it while the sequence runs: in a chat trace, a prompt admitted into the slice of a
  /// finished answer would hold the answer's granules, unwritten, for its whole life. So when
  /// that slice maps more than the sequence needs, every idle granule is given back first
  /// (trim); an idle slice that maps no more is reused as it is, its granules mapped already.
  void spare_no_extras(std::size_t from, std::size_t to) {
    const std::size_t n = cache_->slice_granules();
    std::optional<std::size_t> best;
    std::size_t best_mapped = 0;
    for (std::size_t slice = 0; slice < cache_->max_sequences(); ++slice) {
      if (held(slice)) continue;
      std::size_t m = 0;
      for (std::size_t i = from; i < to; ++i) m += cache_->range().mapped(slice * n + i).has_value();
      if (!best || m > best_mapped) best = slice, best_mapped = m;
    }
    if (!best) return;
    for (std::size_t i = to; i < n; ++i)
      if (cache_->range().mapped(*best * n + i)) {
        cache_->trim();
        return;
      }
  }
  /// Whether a running sequence holds `slice`.
  bool held(std::size_t slice) const {
    for (const std::size_t s : held_)
      if (s == slice) return true;
    return false;
  }

  std::size_t granules(int tokens) const {
    return static_cast<std::size_t>(ceil_div(tokens, granule_tokens_));
  }
  std::size_t fork_copies(int tokens, int samples) const {
    return tokens % granule_tokens_ != 0 ? static_cast<std::size_t>(samples - 1) : 0;
  }
  /// Granules a sequence can have: free ones, and those of idle slices, less those set aside.
  std::size_t available() const {
    const std::size_t have = guarded([&] { return memory_->num_free() + cache_->idle_granules(); },
                                     [&] { return std::string("idle_granules()"); });
    return have > promised_ ? have - promised_ : 0;
  }

  int per_granule_, block_tokens_, granule_tokens_;
  std::unique_ptr<PhysicalMemory> memory_;
  std::unique_ptr<ContiguousKVCache> cache_;  // destroyed first: it unmaps into memory_
  mutable std::vector<int> table_;            // block_table's answer
  std::vector<std::size_t> held_;             // the slices of the running sequences
  std::size_t promised_ = 0;                  // granules set aside for the partly filled granules of forks to come
  std::size_t copies_ = 0;                    // partly filled granules the cache copied at fork
};

}  // namespace

std::unique_ptr<BlockManager> make_virtual_manager(const VirtualLimits& limits) {
  return std::make_unique<VirtualManager>(limits);
}

}  // namespace alloclab::engine
