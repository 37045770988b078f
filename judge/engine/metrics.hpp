// What the served engine measures as it runs: latency, the timeline, KV utilization, where the
// steps' time went, whose heap allocations each step made, and what became of the KV memory.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "block_managers.hpp"
#include "results.hpp"
#include "sequence.hpp"
#include "trace.hpp"

namespace alloclab::engine {

/// The served engine's figures. Everything a step records has its room before the first step, so
/// measuring adds no heap allocation to a steady step.
class Metrics {
 public:
  /// `heap_count` reads the process's heap allocation counter (none: no heap figures).
  Metrics(const Trace& trace, const CountedManager& manager, int kv_blocks, int block_tokens,
          std::uint64_t (*heap_count)())
      : manager_(manager), kv_blocks_(kv_blocks), block_tokens_(block_tokens), heap_count_(heap_count),
        stamp_(static_cast<std::size_t>(kv_blocks), -1), filled_(static_cast<std::size_t>(kv_blocks), 0) {
    std::size_t samples = 0, generated = 0;
    for (const TraceRequest& r : trace.requests) {
      samples += static_cast<std::size_t>(r.samples);
      generated += static_cast<std::size_t>(r.samples) * static_cast<std::size_t>(r.new_tokens);
    }
    // Every step samples at least one token it keeps, so the trace takes at most `generated` steps.
    stats_.timeline.reserve(generated);
    for (auto* per_step : {&heap_per_step_, &manager_heap_per_step_, &allocator_heap_per_step_, &faults_per_step_,
                           &maps_per_step_, &unmaps_per_step_})
      per_step->reserve(generated);
    arrived_step_.resize(trace.requests.size());
    arrived_seconds_.resize(trace.requests.size());
    Latency& l = stats_.latency;
    l.ttft_steps.reserve(trace.requests.size());
    l.ttft_seconds.reserve(trace.requests.size());
    l.tpot_steps.reserve(samples);
    l.tpot_seconds.reserve(samples);
  }

  /// The run begins: seconds count from here, and heap allocations from here on are the steps'.
  void start() {
    start_ = std::chrono::steady_clock::now();
    heap_mark_ = heap_count_ ? heap_count_() : 0;
    manager_mark_ = manager_.allocations();
    faults_mark_ = minor_faults();
    if (const auto m = manager_.memory()) {
      memory_mark_ = *m;
      committed_peak_ = m->committed_bytes;
    }
  }

  /// Seconds since the run began.
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void arrived(int request, int step) {
    arrived_step_[static_cast<std::size_t>(request)] = step;
    arrived_seconds_[static_cast<std::size_t>(request)] = seconds();
  }

  /// A prompt of `tokens` admitted, `cached` of them found in the prefix cache.
  void admitted(int tokens, int cached) {
    admitted_prompt_tokens_ += static_cast<std::size_t>(tokens);
    hit_tokens_ += static_cast<std::size_t>(cached);
    stats_.split.prefill_tokens += tokens - cached;
  }

  void preempted() { ++stats_.preemptions; }

  /// Time to first token: from the request's arrival to `step`, both counted, which sampled it
  /// at `at` seconds.
  void first_token(const Sequence& s, int step, double at) {
    const auto r = static_cast<std::size_t>(s.request);
    stats_.latency.ttft_steps.push_back(step - arrived_step_[r] + 1);
    stats_.latency.ttft_seconds.push_back(at - arrived_seconds_[r]);
  }

  /// Time per output token, once a sample of more than one token has its last.
  void finished(const Sequence& s, int step, double at) {
    if (const int n = s.target_len - s.prompt_len; n > 1) {
      stats_.latency.tpot_steps.push_back(static_cast<double>(step - s.first_step) / (n - 1));
      stats_.latency.tpot_seconds.push_back((at - s.first_seconds) / (n - 1));
    }
  }

  /// The step's row of the timeline, and its KV utilization: tokens whose K and V are stored,
  /// over the capacity of the blocks the running sequences hold, a block shared by several
  /// sequences counted once. `reserved` and `allocated`: the caching allocator's bytes.
  void record(std::span<Sequence* const> running, int batch, int preempted, std::size_t reserved,
              std::size_t allocated) {
    stats_.peak_running = std::max(stats_.peak_running, static_cast<int>(running.size()));
    const int free_all = manager_.num_free_blocks(), idle = manager_.num_idle_blocks();
    stats_.timeline.push_back({kv_blocks_ - free_all, free_all - idle, idle, batch, preempted, reserved, allocated});
    ++stamp_now_;
    long stored = 0, held = 0;
    for (const Sequence* s : running) {
      const std::span<const int> table = manager_.block_table(s->id);
      held += manager_.held_blocks(s->id) - static_cast<long>(table.size());  // spare reservations
      for (std::size_t i = 0; i < table.size(); ++i) {
        const auto b = static_cast<std::size_t>(table[i]);
        const int filled = std::clamp(s->computed - static_cast<int>(i) * block_tokens_, 0, block_tokens_);
        if (stamp_[b] != stamp_now_) {
          stamp_[b] = stamp_now_;
          filled_[b] = filled;
          stored += filled;
          ++held;
        } else if (filled > filled_[b]) {
          stored += filled - filled_[b];
          filled_[b] = filled;
        }
      }
    }
    if (held > 0) {
      util_sum_ += static_cast<double>(stored) / (static_cast<double>(held) * block_tokens_);
      ++util_steps_;
    }
  }

  /// Where the step's `seconds` went: to a step that computed a prompt, or to one that only decoded.
  void timed(std::span<Sequence* const> decode, bool prefilled, double seconds) {
    TimeSplit& split = stats_.split;
    split.decode_tokens += static_cast<long>(decode.size());
    if (prefilled) {
      ++split.prefill_steps;
      split.prefill_seconds += seconds;
      return;
    }
    ++split.decode_steps;
    split.decode_seconds += seconds;
    split.decode_step_rows += static_cast<long>(decode.size());
    for (const Sequence* s : decode) split.decode_step_context += static_cast<long>(s->tokens.size()) - 1;
  }

  /// Each step's heap allocations, from the end of the step before to the end of this one (so the
  /// arrivals between are the step's too), and whose they were: the KV cache manager's calls, the
  /// kit's allocators growing (`allocators`: the sequence pool, the caching allocator), and the
  /// engine's own.
  void count_heap(std::uint64_t allocators) {
    if (!heap_count_) return;
    const std::uint64_t now = heap_count_(), manager = manager_.allocations();
    heap_per_step_.push_back(now - heap_mark_);
    manager_heap_per_step_.push_back(manager - manager_mark_);
    allocator_heap_per_step_.push_back(allocators);
    heap_mark_ = now;
    manager_mark_ = manager;
  }

  /// Each step's minor page faults and the manager's map and unmap calls, counted as the heap is;
  /// the most bytes committed to a manager's own memory at the end of a step.
  void count_memory() {
    const std::uint64_t faults = minor_faults();
    faults_per_step_.push_back(faults - faults_mark_);
    faults_mark_ = faults;
    if (const auto m = manager_.memory()) {
      maps_per_step_.push_back(m->map_calls - memory_mark_.map_calls);
      unmaps_per_step_.push_back(m->unmap_calls - memory_mark_.unmap_calls);
      committed_peak_ = std::max(committed_peak_, m->committed_bytes);
      memory_mark_ = *m;
    }
  }

  /// The minor page faults of the whole process so far (both threads: the runner's first writes
  /// to new KV pages are among them).
  static std::uint64_t minor_faults() noexcept {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<std::uint64_t>(u.ru_minflt);
  }

  /// The figures of the whole run: the steps, the batches, the cache's hits and copies, the heap.
  void summarize(RunStats& stats) const {
    stats = stats_;
    stats.steps = static_cast<int>(stats_.timeline.size());
    double batch = 0;
    for (const StepRecord& r : stats_.timeline) batch += r.batch;
    stats.mean_batch = stats.steps ? batch / stats.steps : 0;
    stats.kv_utilization = util_steps_ ? util_sum_ / util_steps_ : 0;
    stats.prefix_hit_rate = admitted_prompt_tokens_
                                ? static_cast<double>(hit_tokens_) / static_cast<double>(admitted_prompt_tokens_)
                                : 0;
    stats.copies = manager_.stats().copies;
    stats.heap_allocations_per_step = steady_state_mean(heap_per_step_);
    stats.heap.kv_cache_manager = steady_state_mean(manager_heap_per_step_);
    stats.heap.allocators = steady_state_mean(allocator_heap_per_step_);
    stats.heap.engine =
        std::max(0.0, stats.heap_allocations_per_step - stats.heap.kv_cache_manager - stats.heap.allocators);
    stats.memory.minor_faults_per_step = steady_state_mean(faults_per_step_);
    stats.memory.map_calls_per_step = steady_state_mean(maps_per_step_);
    stats.memory.unmap_calls_per_step = steady_state_mean(unmaps_per_step_);
    stats.memory.committed_peak_bytes = committed_peak_;
  }

 private:
  const CountedManager& manager_;
  int kv_blocks_, block_tokens_;
  std::uint64_t (*heap_count_)();
  RunStats stats_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<int> arrived_step_;        // per request: when it arrived, in steps
  std::vector<double> arrived_seconds_;  // and in seconds
  std::size_t admitted_prompt_tokens_ = 0, hit_tokens_ = 0;
  std::vector<int> stamp_, filled_;  // per block: the step that last counted it, and its tokens then
  int stamp_now_ = 0;
  double util_sum_ = 0;
  long util_steps_ = 0;
  std::vector<std::uint64_t> heap_per_step_, manager_heap_per_step_, allocator_heap_per_step_;
  std::uint64_t heap_mark_ = 0, manager_mark_ = 0;  // the counts at the end of the step before
  std::vector<std::uint64_t> faults_per_step_, maps_per_step_, unmaps_per_step_;
  std::uint64_t faults_mark_ = 0;
  KvMemory memory_mark_;
  std::size_t committed_peak_ = 0;
};

}  // namespace alloclab::engine
