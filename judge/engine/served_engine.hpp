// The served engine: continuous batching over a paged KV cache (or, with the `virtual` manager,
// exercise 08's contiguous one), with the kit's allocators each where a real engine would use it.
//
//   01 Arena              the scheduler's per-step metadata (token ids, positions, slot
//                         mapping, block tables, context lengths), reset after every step
//   02 ObjectPool         the sequence objects, made on arrival and fork, destroyed on finish
//   03 BlockPool          the KV blocks' reference counts, under the block manager
//   04 CachingAllocator   the forward pass's activations, over a device that counts mallocs
//   05 AlignedAllocator   the weights and the KV buffer (64-byte rows for the vector loads)
//      ArenaResource      the scheduler's per-step pmr containers (who decodes, who prefills)
//   06 RingBumpAllocator  each step's inputs, written by the scheduler thread, read by the
//                         model-runner thread, reclaimed by it when the step is done
//
// The engine only wires the parts together: the scheduler (scheduler.hpp), the step's inputs
// (step_inputs.hpp), the model runner (model_runner.hpp) and the figures (metrics.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>

#include "aligned_allocator.hpp"
#include "arena.hpp"
#include "block_managers.hpp"
#include "engine_options.hpp"
#include "metrics.hpp"
#include "model.hpp"
#include "model_runner.hpp"
#include "results.hpp"
#include "scheduler.hpp"
#include "step_inputs.hpp"
#include "trace.hpp"

namespace alloclab::engine {

class ServedEngine {
 public:
  ServedEngine(const Model& model, const Trace& trace, const EngineOptions& o)
      : trace_(trace), o_(checked(o, model.config(), trace)),
        // A contiguous manager keeps each sequence's KV in its own memory, position after position.
        layout_(contiguous(o_) ? KVLayout::contiguous(model.config()) : KVLayout::paged(model.config(), o_.block_tokens)),
        manager_(std::make_unique<CountedManager>(manager_for(o_, model.config()), o_.heap_count)),
        metrics_(trace, *manager_, o_.kv_blocks, o_.block_tokens, o_.heap_count),
        scheduler_(trace, *manager_, metrics_, o_),
        // A step samples one token per decoding sequence and one per sample of each prompt it
        // computes; admission keeps every sequence and every sample to come within max_seqs.
        // The runner's KV buffer holds the block managers' KV; a contiguous manager needs none.
        runner_(model, layout_, contiguous(o_) ? 0 : o_.kv_blocks, o_.max_seqs, o_.two_threads, o_.heap_count),
        arena_(kArenaBytes),
        step_buffer_(kStepBufferBytes) {}

  ServedEngine(const ServedEngine&) = delete;
  ServedEngine& operator=(const ServedEngine&) = delete;

  /// Serves the whole trace; returns every request's tokens, and fills `stats`.
  Outputs run(RunStats& stats) {
    const auto start = std::chrono::steady_clock::now();
    metrics_.start();
    const double cpu_start = process_cpu_seconds();
    runner_.start();
    try {
      serve_loop();
    } catch (...) {
      runner_.stop();
      throw;
    }
    runner_.stop();
    metrics_.summarize(stats);
    stats.leak = manager_->audit(scheduler_.sequences_made());
    if (stats.leak.empty() && scheduler_.live_sequences() != 0)
      stats.leak = std::to_string(scheduler_.live_sequences()) + " sequence objects are still alive";
    sleep_after_the_run(stats);
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats.cpu_seconds = process_cpu_seconds() - cpu_start;
    stats.requests = static_cast<int>(trace_.requests.size());
    stats.device_mallocs = runner_.device_mallocs();
    use_.arena_peak_bytes = arena_.peak();
    use_.arena_capacity_bytes = arena_.capacity();
    use_.pool_created = scheduler_.sequences_made();
    use_.ring_capacity_bytes = ModelRunner::kRingBytes;
    use_.kv_buffer_bytes = runner_.kv_bytes();
    use_.evictions = manager_->stats().evictions;
    stats.allocators = use_;
    stats.allocators.pool_peak_live = scheduler_.peak_live();
    stats.allocators.pool_heap_allocations = scheduler_.pool_heap();
    stats.allocators.caching_heap_allocations = runner_.caching_heap();
    return scheduler_.take_outputs();
  }

  /// Blocks still held by sequences or the cache, for tests: none may be held by a request
  /// once every request is done.
  [[nodiscard]] int blocks_in_use() const { return o_.kv_blocks - manager_->num_free_blocks(); }
  [[nodiscard]] KvCacheStats manager_stats() const { return manager_->stats(); }
  [[nodiscard]] std::size_t live_sequences() const { return scheduler_.live_sequences(); }

 private:
  static constexpr std::size_t kArenaBytes = 4 << 20, kStepBufferBytes = 64 << 10;

  static double process_cpu_seconds() noexcept {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }

  static bool contiguous(const EngineOptions& o) noexcept { return o.manager == ManagerKind::virtual_memory; }

  /// The manager `o` asks for; `virtual` gets the engine's limits: a slice for every sequence
  /// that can run at once, each as long as the model's positions.
  static std::unique_ptr<BlockManager> manager_for(const EngineOptions& o, const ModelConfig& c) {
    if (!contiguous(o)) return make_manager(o.manager, o.kv_blocks, o.block_tokens);
    if (!o.make_virtual)
      throw std::invalid_argument("ServedEngine: the virtual manager needs EngineOptions::make_virtual, from "
                                  "virtual_manager.cpp, which this program does not link");
    return o.make_virtual({o.kv_blocks, o.block_tokens, c.kv_bytes_per_token(), o.max_seqs, c.max_positions});
  }

  /// The KV memory after the run: what stays committed (the KV buffer, or a manager's own memory
  /// with its idle granules kept for reuse), and what sleep leaves of a manager's own, which must
  /// be nothing: sleep gives every granule back.
  void sleep_after_the_run(RunStats& stats) {
    const auto before = manager_->memory();
    if (!before) {
      stats.memory.committed_peak_bytes = stats.memory.committed_after_bytes = runner_.kv_bytes();
      return;
    }
    stats.memory.committed_after_bytes = before->committed_bytes;
    if (!stats.leak.empty()) return;  // a manager that lost track of its memory is not put to sleep
    manager_->sleep();
    const std::size_t after = manager_->memory()->committed_bytes;
    stats.memory.committed_after_sleep_bytes = static_cast<long long>(after);
    if (after != 0)
      stats.leak = std::to_string(after) + " bytes stay committed after sleep, which must give every granule back";
  }

  /// The options, refused before any member is built from them when they cannot serve `trace`.
  static const EngineOptions& checked(const EngineOptions& o, const ModelConfig& c, const Trace& trace) {
    if (o.kv_blocks <= 0 || o.block_tokens <= 0 || o.max_batch_tokens <= 0 || o.max_seqs <= 0)
      throw std::invalid_argument("ServedEngine: kv_blocks, block_tokens, max_batch_tokens and max_seqs must be positive");
    for (std::size_t i = 0; i < trace.requests.size(); ++i) {
      const TraceRequest& r = trace.requests[i];
      const std::string which = "ServedEngine: request " + std::to_string(i) + " of the " + trace.name + " trace ";
      if (r.prompt.empty() || r.new_tokens <= 0 || r.samples <= 0)
        throw std::invalid_argument(which + "needs a prompt, new tokens and samples");
      if (r.samples > o.max_seqs)
        throw std::invalid_argument(which + "asks for " + std::to_string(r.samples) + " samples; max_seqs is " +
                                    std::to_string(o.max_seqs));
      if (static_cast<int>(r.prompt.size()) + r.new_tokens > c.max_positions)
        throw std::invalid_argument(which + "reaches position " + std::to_string(r.prompt.size() + r.new_tokens - 1) +
                                    "; the model's positions end at " + std::to_string(c.max_positions - 1));
    }
    return o;
  }

  /// Steps until every request is done. The trace's clock is the step; with nothing to run, it
  /// jumps to the next arrival.
  void serve_loop() {
    std::size_t next_arrival = 0;
    int finished = 0;
    const int total_requests = static_cast<int>(trace_.requests.size());
    for (int clock = 0; finished < total_requests; ++clock) {
      if (scheduler_.idle() && next_arrival < trace_.requests.size())
        clock = std::max(clock, trace_.requests[next_arrival].arrival_step);
      for (; next_arrival < trace_.requests.size() && trace_.requests[next_arrival].arrival_step <= clock; ++next_arrival)
        scheduler_.arrive(static_cast<int>(next_arrival), clock);
      const int done = step(clock);
      finished += done;
      if (done && o_.on_finish) o_.on_finish(finished, total_requests);
      metrics_.count_heap(scheduler_.take_allocator_heap() + runner_.take_allocator_heap());
      metrics_.count_memory();
    }
  }

  /// One step: schedule, hand the inputs to the model runner, take its samples back. Returns the
  /// requests it finished.
  int step(int clock) {
    const double started = metrics_.seconds();
    // The step's lists live in a buffer reused every step (exercise 05's ArenaResource).
    ArenaResource resource(step_buffer_.data(), step_buffer_.size());
    ScheduledStep batch(&resource);
    scheduler_.schedule(batch);
    if (batch.empty()) return 0;
    const StepMetadata metadata =
        describe_step(arena_, *manager_, batch.decode, batch.prefill, o_.kv_blocks, o_.block_tokens);
    use_.arena_arrays += metadata.arrays;
    const std::uint64_t packed_from = runner_.ring().checkpoint();
    const StepInput* input = pack_step(runner_.ring(), ModelRunner::kRingBytes, metadata, scheduler_.pending_copies(),
                                       runner_.kv(), layout_);
    const auto packed = static_cast<std::size_t>(runner_.ring().checkpoint() - packed_from);
    use_.ring_bytes += packed;
    use_.ring_peak_step_bytes = std::max(use_.ring_peak_step_bytes, packed);
    use_.step_lists_peak_bytes = std::max(use_.step_lists_peak_bytes, resource.used());
    use_.step_lists_upstream_bytes += resource.upstream_bytes();
    runner_.execute(input);
    const int finished = scheduler_.postprocess(batch, runner_.sampled(), clock, metrics_.seconds());
    metrics_.record(scheduler_.running(), batch.size(), batch.preempted, runner_.reserved_bytes(),
                    runner_.allocated_bytes());
    metrics_.timed(batch.decode, !batch.prefill.empty(), metrics_.seconds() - started);
    arena_.reset();  // the step's metadata is dead: one pointer moves back
    ++use_.arena_resets;
    return finished;
  }

  const Trace& trace_;
  EngineOptions o_;
  KVLayout layout_;
  std::unique_ptr<CountedManager> manager_;
  Metrics metrics_;
  Scheduler scheduler_;
  ModelRunner runner_;
  Arena arena_;
  aligned_vector<std::byte> step_buffer_;
  AllocatorUse use_;  // what the allocators were asked to do, counted at the engine's calls
};

}  // namespace alloclab::engine
