// What a run of an engine produces and measures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace alloclab::engine {

/// The tokens generated for each (request, sample): the thing two engines must agree on.
using Outputs = std::vector<std::vector<std::vector<int>>>;

/// One engine step, as the timeline draws it.
struct StepRecord {
  int running_blocks, cached_blocks, free_blocks, batch, preempted;
  std::size_t reserved_bytes, allocated_bytes;
};

/// How long requests waited, in engine steps (the trace's clock) and in seconds since the run
/// began: the figures a serving benchmark leads with.
struct Latency {
  std::vector<int> ttft_steps;        // per request: from its arrival to the step that sampled its first token, both counted
  std::vector<double> ttft_seconds;   // per request: from its arrival to the end of that step
  std::vector<double> tpot_steps;     // per sample of more than one token: (last token's step - first's) / (tokens - 1)
  std::vector<double> tpot_seconds;   // the same, in seconds
};

/// Where the steps' time went: steps that computed a prompt (with the decodes beside it) and
/// steps that only decoded.
struct TimeSplit {
  int prefill_steps = 0, decode_steps = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  long prefill_tokens = 0, decode_tokens = 0;  // prompt tokens computed; tokens decoded
  long decode_step_rows = 0, decode_step_context = 0;  // in the decode-only steps: rows, and the tokens they attend to
};

/// What each of the kit's allocators did in the served run, so that `serve` can tell a learner what
/// their own code was asked to do: counted where the engine calls it, never by the allocator.
struct AllocatorUse {
  long arena_arrays = 0, arena_resets = 0;            // 01: arrays taken from the arena; resets (one a step)
  std::size_t arena_peak_bytes = 0, arena_capacity_bytes = 0;  // its peak(), its capacity()
  long pool_created = 0;                              // 02: sequence objects created (arrivals and forks)
  std::size_t pool_peak_live = 0;                     // the most alive at once
  std::uint64_t pool_heap_allocations = 0;            // operator new calls the pool made (its chunks)
  std::uint64_t caching_heap_allocations = 0;         // 04: the caching allocator's own bookkeeping
  std::size_t kv_buffer_bytes = 0;                    // 05: the KV buffer, in aligned rows
  std::size_t step_lists_peak_bytes = 0, step_lists_upstream_bytes = 0;  // 05: ArenaResource: the most a step used; spilled
  std::size_t ring_bytes = 0, ring_peak_step_bytes = 0, ring_capacity_bytes = 0;  // 06: bytes packed in all; the most in a step
  std::size_t evictions = 0;                          // 07: cached blocks evicted to make room
};

/// What became of the KV cache's memory: the map and unmap calls of a manager that maps its own
/// (none for the others), the minor page faults of the whole process (each a page touched for the
/// first time: the system commits it then), per steady-state step, and the bytes committed to
/// the KV cache at the peak, after the run, and after sleep.
struct KvMemoryUse {
  double map_calls_per_step = 0, unmap_calls_per_step = 0, minor_faults_per_step = 0;
  std::size_t committed_peak_bytes = 0, committed_after_bytes = 0;
  long long committed_after_sleep_bytes = -1;  // -1: the manager keeps no memory of its own to sleep
};

struct RunStats {
  int requests = 0, finished = 0;
  long generated_tokens = 0;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // CPU time of the process (both threads): the same on an idle machine, steadier on a shared one
  int steps = 0;
  double mean_batch = 0;
  int peak_running = 0;
  int preemptions = 0;
  double prefix_hit_rate = 0;
  double kv_utilization = 0;
  std::size_t copies = 0, device_mallocs = 0;
  double heap_allocations_per_step = 0;
  struct {
    double engine = 0, kv_cache_manager = 0, allocators = 0;  // whose, per steady-state step
  } heap;
  std::string leak;  // what the block manager still held once every request was done; empty when nothing
  Latency latency;
  TimeSplit split;
  AllocatorUse allocators;
  KvMemoryUse memory;
  std::vector<StepRecord> timeline;
};

/// Heap allocations per step over the steady state: the middle 80 % of the steps, leaving out
/// the start (pools and caches still growing) and the drain at the end.
[[nodiscard]] inline double steady_state_mean(const std::vector<std::uint64_t>& per_step) {
  if (per_step.empty()) return 0;
  const std::size_t lo = per_step.size() / 10, hi = per_step.size() - per_step.size() / 10;
  std::uint64_t sum = 0;
  for (std::size_t i = lo; i < hi; ++i) sum += per_step[i];
  return static_cast<double>(sum) / static_cast<double>(hi - lo);
}

}  // namespace alloclab::engine
