// The served engine: continuous batching over a paged KV cache, with the kit's six
// allocators each where a real engine would use it.
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
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "aligned_allocator.hpp"
#include "arena.hpp"
#include "block_managers.hpp"
#include "caching_allocator.hpp"
#include "fixed_pool.hpp"
#include "heap_tally.hpp"
#include "host_device.hpp"
#include "model.hpp"
#include "results.hpp"
#include "ring_allocator.hpp"
#include "sampler.hpp"
#include "trace.hpp"

namespace alloclab::engine {

struct EngineOptions {
  ManagerKind manager = ManagerKind::prefix;
  int kv_blocks = 0;
  int block_tokens = 16;
  int max_batch_tokens = 512;  // rows per step: decode rows first, then whole prompts
  int max_seqs = 64;           // sequences running at once
  // Blocks kept free at admission, for the running sequences to grow into. vLLM keeps 1 %
  // (`watermark` in its v0 block manager); here a preemption recomputes a whole prompt on one
  // CPU core, so a larger margin pays: it admits a little later and preempts far less.
  int watermark_percent = 8;
  bool two_threads = true;     // the model runner on its own thread, fed through the ring
  std::uint64_t (*heap_count)() = nullptr;       // reads the process's heap allocation counter
  void (*on_finish)(int finished, int total) = nullptr;  // progress
};

/// A sequence's token ids: a row of the engine's token buffer, sized at start-up for the prompt
/// and every token the sample may generate (as vLLM's persistent input batch keeps a row of
/// token ids per request), so that appending never allocates, as a growing vector would.
class TokenRow {
 public:
  TokenRow() = default;
  TokenRow(int* data, int capacity) noexcept : data_(data), capacity_(capacity) {}
  void assign(std::span<const int> from) {
    if (static_cast<int>(from.size()) > capacity_) throw std::logic_error("TokenRow: more tokens than its row holds");
    std::copy(from.begin(), from.end(), data_);
    size_ = static_cast<int>(from.size());
  }
  void push_back(int token) {
    if (size_ == capacity_) throw std::logic_error("TokenRow: more tokens than its row holds");
    data_[size_++] = token;
  }
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(size_); }
  [[nodiscard]] int back() const noexcept { return data_[size_ - 1]; }
  [[nodiscard]] int operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] const int* begin() const noexcept { return data_; }
  [[nodiscard]] const int* end() const noexcept { return data_ + size_; }
  [[nodiscard]] std::span<const int> span() const noexcept { return {data_, static_cast<std::size_t>(size_)}; }

 private:
  int* data_ = nullptr;
  int capacity_ = 0, size_ = 0;
};

/// One sequence: a request's prompt and one sample's generated tokens. Pooled (exercise 02):
/// sequences are made and destroyed all the time, always the same size.
struct Sequence {
  int id;               // the block manager's id
  int request, sample;  // which output it produces
  int forks_pending;    // samples still to fork off once the prompt is computed (n, then 1)
  int prompt_len, target_len;
  std::uint64_t seed;
  TokenRow tokens;          // prompt, then generated
  int computed = 0;         // tokens whose K and V are in the cache
  int first_step = -1;      // the step that sampled its first token (-1: not yet), and when it ended
  double first_seconds = 0;
};

namespace detail {

/// The waiting sequences, in a ring sized at start-up for every sequence the trace can make:
/// arrivals join at the back, preempted sequences at the front, and neither ever allocates (a
/// std::deque allocates a chunk each time its ends cross one).
class WaitingQueue {
 public:
  explicit WaitingQueue(std::size_t capacity) : ring_(std::max<std::size_t>(capacity, 1)) {}
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] Sequence* front() const noexcept { return ring_[head_]; }
  void push_back(Sequence* s) {
    full();
    ring_[(head_ + size_++) % ring_.size()] = s;
  }
  void push_front(Sequence* s) {
    full();
    head_ = (head_ + ring_.size() - 1) % ring_.size();
    ring_[head_] = s;
    ++size_;
  }
  void pop_front() noexcept {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < size_; ++i) f(ring_[(head_ + i) % ring_.size()]);
  }

 private:
  void full() const {
    if (size_ == ring_.size()) throw std::logic_error("WaitingQueue: more sequences than the trace can make");
  }
  std::vector<Sequence*> ring_;
  std::size_t head_ = 0, size_ = 0;
};

/// What the sampler must do with one row of logits.
struct SampleJob {
  std::uint64_t seed;
  int first_sample, count, position, out;
};

/// One step's inputs, as the model runner receives them: a header and arrays in the ring.
struct StepInput {
  BatchView batch;
  const SampleJob* jobs;
  int job_count;
  const KvCopy* copies;
  int copy_count;
  std::uint64_t checkpoint;  // the ring position after this step's bytes
};

/// Activations from the caching allocator: one block per forward pass, carved into the
/// pass's tensors (as a compiled graph's memory planner lays them out), handed back when the
/// step ends. Steps differ in size, and the allocator's best fit and splitting serve each from
/// the segments it already holds: after the first steps the device is not called again.
class CachedWorkspace {
 public:
  /// `count` and `tally`: where the allocator's own heap allocations are counted.
  CachedWorkspace(CachingAllocator<HostDevice>& a, std::uint64_t (*count)(), std::uint64_t& tally)
      : a_(a), count_(count), tally_(tally) {}
  CachedWorkspace(const CachedWorkspace&) = delete;
  CachedWorkspace& operator=(const CachedWorkspace&) = delete;
  ~CachedWorkspace() {
    HeapTally t(count_, tally_);
    a_.deallocate(block_);
  }

  void reserve(std::size_t floats) {
    HeapTally t(count_, tally_);
    block_ = static_cast<float*>(a_.allocate(floats * sizeof(float)));
    size_ = floats;
  }
  float* floats(std::size_t n) {
    n = tensor_floats(n);
    if (used_ + n > size_) throw std::logic_error("CachedWorkspace: more than reserved");
    float* p = block_ + used_;
    used_ += n;
    return p;
  }

 private:
  CachingAllocator<HostDevice>& a_;
  std::uint64_t (*count_)();
  std::uint64_t& tally_;
  float* block_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
};

}  // namespace detail

class ServedEngine {
 public:
  ServedEngine(const Model& model, const Trace& trace, const EngineOptions& o)
      : model_(model), trace_(trace), o_(checked(o, model.config(), trace)),
        layout_(KVLayout::paged(model.config(), o_.block_tokens)),
        manager_(std::make_unique<CountedManager>(make_manager(o_.manager, o_.kv_blocks, o_.block_tokens), o_.heap_count)),
        kv_(static_cast<std::size_t>(o_.kv_blocks) * layout_.block_floats(model.config())),
        sequences_(256), arena_(kArenaBytes), ring_(kRingBytes), step_buffer_(kStepBufferBytes), caching_(device_),
        stamp_(static_cast<std::size_t>(o_.kv_blocks), -1), filled_(static_cast<std::size_t>(o_.kv_blocks), 0) {
    outputs_.resize(trace.requests.size());
    std::size_t samples = 0, tokens = 0, generated = 0;
    for (std::size_t i = 0; i < trace.requests.size(); ++i) {
      const TraceRequest& r = trace.requests[i];
      outputs_[i].resize(static_cast<std::size_t>(r.samples));
      for (auto& sample : outputs_[i]) sample.reserve(static_cast<std::size_t>(r.new_tokens));
      samples_left_.push_back(r.samples);
      row_at_.push_back(tokens);
      samples += static_cast<std::size_t>(r.samples);
      tokens += static_cast<std::size_t>(r.samples) * (r.prompt.size() + static_cast<std::size_t>(r.new_tokens));
      generated += static_cast<std::size_t>(r.samples) * static_cast<std::size_t>(r.new_tokens);
    }
    token_rows_.resize(tokens);
    waiting_ = detail::WaitingQueue(samples);
    // Every step samples at least one token it keeps, so the trace takes at most `generated` steps.
    stats_.timeline.reserve(generated);
    for (auto* per_step : {&heap_per_step_, &manager_heap_per_step_, &allocator_heap_per_step_})
      per_step->reserve(generated);
    // Everything a step records has its room before the first step: no heap in the steady state.
    arrived_step_.resize(trace.requests.size());
    arrived_seconds_.resize(trace.requests.size());
    Latency& l = stats_.latency;
    l.ttft_steps.reserve(trace.requests.size());
    l.ttft_seconds.reserve(trace.requests.size());
    l.tpot_steps.reserve(samples);
    l.tpot_seconds.reserve(samples);
    running_.reserve(static_cast<std::size_t>(o_.max_seqs));
    pending_copies_.reserve(1024);
    // A step samples one token per decoding sequence and one per sample of each prompt it
    // computes; admission keeps every sequence and every sample to come within max_seqs.
    sampled_.resize(static_cast<std::size_t>(o_.max_seqs));
    // Only a manager whose sequences take blocks as they grow needs a margin at admission;
    // one that reserves everything up front can never run out mid-generation.
    watermark_ = manager_->grows() ? std::max(1, o_.kv_blocks * o_.watermark_percent / 100) : 0;
  }

  ServedEngine(const ServedEngine&) = delete;
  ServedEngine& operator=(const ServedEngine&) = delete;

  ~ServedEngine() {
    for (Sequence* s : running_) sequences_.destroy(s);
    waiting_.for_each([this](Sequence* s) { sequences_.destroy(s); });
  }

  /// Serves the whole trace; returns every request's tokens, and fills `stats`.
  Outputs run(RunStats& stats) {
    const auto start = std::chrono::steady_clock::now();
    start_ = start;
    heap_mark_ = o_.heap_count ? o_.heap_count() : 0;
    manager_mark_ = manager_->allocations();
    const double cpu_start = process_cpu_seconds();
    std::thread runner;
    if (o_.two_threads) runner = std::thread([this] { runner_loop(); });
    try {
      serve_loop();
    } catch (...) {
      stop_runner(runner);
      throw;
    }
    stop_runner(runner);
    stats = stats_;
    stats.leak = manager_->audit(next_id_);
    if (stats.leak.empty() && sequences_.live() != 0)
      stats.leak = std::to_string(sequences_.live()) + " sequence objects are still alive";
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats.cpu_seconds = process_cpu_seconds() - cpu_start;
    stats.requests = static_cast<int>(trace_.requests.size());
    stats.steps = static_cast<int>(stats_.timeline.size());
    double batch = 0;
    for (const StepRecord& r : stats_.timeline) batch += r.batch;
    stats.mean_batch = stats.steps ? batch / stats.steps : 0;
    stats.kv_utilization = util_steps_ ? util_sum_ / util_steps_ : 0;
    const KvCacheStats ps = manager_->stats();
    stats.prefix_hit_rate = admitted_prompt_tokens_ ? static_cast<double>(hit_tokens_) / static_cast<double>(admitted_prompt_tokens_) : 0;
    stats.copies = ps.copies;
    stats.device_mallocs = device_.mallocs();
    stats.heap_allocations_per_step = steady_state_mean(heap_per_step_);
    stats.heap.kv_cache_manager = steady_state_mean(manager_heap_per_step_);
    stats.heap.allocators = steady_state_mean(allocator_heap_per_step_);
    stats.heap.engine = std::max(0.0, stats.heap_allocations_per_step - stats.heap.kv_cache_manager - stats.heap.allocators);
    return std::move(outputs_);
  }

  /// Blocks still held by sequences or the cache, for tests: none may be held by a request
  /// once every request is done.
  [[nodiscard]] int blocks_in_use() const { return o_.kv_blocks - manager_->num_free_blocks(); }
  [[nodiscard]] KvCacheStats manager_stats() const { return manager_->stats(); }
  [[nodiscard]] std::size_t live_sequences() const { return sequences_.live(); }

 private:
  static double process_cpu_seconds() noexcept {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }

  /// Seconds since the run began.
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  static constexpr std::size_t kArenaBytes = 4 << 20, kRingBytes = 16 << 20, kStepBufferBytes = 64 << 10;

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

  // ---- the scheduler thread ---------------------------------------------------------------

  void serve_loop() {
    std::size_t next_arrival = 0;
    int finished = 0, total_requests = static_cast<int>(trace_.requests.size());
    int step = 0;
    while (finished < total_requests) {
      // Arrivals. With nothing to run, the clock jumps to the next arrival.
      if (running_.empty() && waiting_.empty() && next_arrival < trace_.requests.size())
        step = std::max(step, trace_.requests[next_arrival].arrival_step);
      clock_ = step;
      while (next_arrival < trace_.requests.size() && trace_.requests[next_arrival].arrival_step <= step) {
        arrive(static_cast<int>(next_arrival));
        ++next_arrival;
      }
      const int done = run_step();
      finished += done;
      if (done && o_.on_finish) o_.on_finish(finished, total_requests);
      count_heap();
      ++step;
    }
  }

  /// Each step's heap allocations, from the end of the step before to the end of this one (so the
  /// arrivals between are the step's too), and whose they were: the KV cache manager's calls, the
  /// kit's allocators growing (the sequence pool, the caching allocator), and the engine's own.
  void count_heap() {
    if (!o_.heap_count) return;
    const std::uint64_t now = o_.heap_count(), manager = manager_->allocations();
    heap_per_step_.push_back(now - heap_mark_);
    manager_heap_per_step_.push_back(manager - manager_mark_);
    allocator_heap_per_step_.push_back(allocator_heap_ + runner_allocator_heap_);
    heap_mark_ = now;
    manager_mark_ = manager;
    allocator_heap_ = runner_allocator_heap_ = 0;
  }

  Sequence* new_sequence() {
    HeapTally t(o_.heap_count, allocator_heap_);
    return sequences_.create();
  }

  void arrive(int request) {
    const TraceRequest& r = trace_.requests[static_cast<std::size_t>(request)];
    Sequence* s = new_sequence();
    s->id = next_id_++;
    s->request = request;
    s->sample = 0;
    s->forks_pending = r.samples;
    s->prompt_len = static_cast<int>(r.prompt.size());
    s->target_len = s->prompt_len + r.new_tokens;
    s->seed = r.seed;
    s->tokens = TokenRow(token_rows_.data() + row_at_[static_cast<std::size_t>(request)], s->target_len);
    s->tokens.assign(r.prompt);
    s->first_step = -1;
    arrived_step_[static_cast<std::size_t>(request)] = clock_;
    arrived_seconds_[static_cast<std::size_t>(request)] = seconds();
    waiting_.push_back(s);
  }

  /// Preemption by recompute: the sequence gives its blocks back and waits at the front of
  /// the queue; readmitted, its prompt and the tokens it generated are computed again (those
  /// still cached are found by the prefix cache). Swapping the blocks to host memory is the
  /// other choice; recomputing is what vLLM does by default.
  void preempt(Sequence* s) {
    manager_->release(s->id);
    s->computed = 0;
    waiting_.push_front(s);
    ++stats_.preemptions;
  }

  /// One step: schedule, hand the inputs to the model runner, take its samples back.
  int run_step() {
    const double step_start = seconds();
    // The step's containers live in a buffer reused every step (exercise 05's ArenaResource).
    ArenaResource resource(step_buffer_.data(), step_buffer_.size());
    std::pmr::vector<Sequence*> decode(&resource), prefill(&resource);
    decode.reserve(running_.size());
    int budget = o_.max_batch_tokens, preempted = 0;
    int forks_to_come = 0;  // the samples of this step's prompts that will fork off once computed

    // 1. Every running sequence decodes one token, oldest first. When no block is left, the
    //    newest running sequence is preempted (it has waited least and loses least), until
    //    this one fits or was itself the newest.
    for (std::size_t i = 0; i < running_.size(); ++i) {
      Sequence* s = running_[i];
      bool ok = true;
      while (!manager_->append_token(s->id, s->tokens.back(), pending_copies_)) {
        Sequence* victim = running_.back();
        running_.pop_back();
        preempt(victim);
        ++preempted;
        if (victim == s) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
      decode.push_back(s);
      --budget;
    }

    // 2. Waiting sequences are admitted while rows, sequences and blocks allow (never in a
    //    step that preempted: the memory is short). A prompt is computed whole in the step
    //    that admits it: the manager makes a prompt's blocks findable at admission, so their
    //    K and V must be written before any later step can read them through a cache hit.
    while (preempted == 0 && !waiting_.empty() && budget > 0) {
      Sequence* s = waiting_.front();
      const int len = static_cast<int>(s->tokens.size());
      const int max_tokens = s->prompt_len + trace_.max_new_tokens;
      const int samples = s->forks_pending;
      // Each sample runs as a sequence of its own once the prompt is computed: all count.
      if (static_cast<int>(running_.size()) + forks_to_come + samples > o_.max_seqs) break;
      if (!running_.empty() &&
          manager_->num_free_blocks() - manager_->blocks_to_admit(len, max_tokens, samples) < watermark_)
        break;
      if (len > budget && !prefill.empty()) break;
      const std::optional<int> cached = manager_->admit(s->id, s->tokens.span(), max_tokens, samples);
      if (!cached) break;
      if (*cached < 0 || *cached >= len || *cached % o_.block_tokens != 0)
        throw std::logic_error("ServedEngine: admit reported " + std::to_string(*cached) + " cached tokens of a " +
                               std::to_string(len) + "-token prompt; it must be whole blocks, and the last prompt "
                               "token is always computed (its logits give the first new token)");
      waiting_.pop_front();
      s->computed = *cached;
      admitted_prompt_tokens_ += static_cast<std::size_t>(len);
      hit_tokens_ += static_cast<std::size_t>(*cached);
      running_.push_back(s);
      prefill.push_back(s);
      forks_to_come += samples - 1;
      stats_.split.prefill_tokens += len - *cached;
      budget -= len - *cached;
    }
    if (decode.empty() && prefill.empty()) {
      if (!running_.empty() || !waiting_.empty()) throw std::runtime_error("ServedEngine: no progress (KV budget too small for one request)");
      return 0;
    }

    // 3. The step's metadata, in the arena, then its inputs into the ring for the runner.
    const detail::StepInput* input = build_inputs(decode, prefill);
    execute(input);

    // 4. The samples: append, fork, finish.
    const double sampled_at = seconds();
    int finished = 0, out = 0;
    for (Sequence* s : decode) {
      s->computed = static_cast<int>(s->tokens.size());
      s->tokens.push_back(sampled_[static_cast<std::size_t>(out++)]);
    }
    for (Sequence* s : prefill) {
      s->computed = static_cast<int>(s->tokens.size());
      const int n = s->forks_pending;
      if (s->first_step < 0) {  // its first token (a recomputed sequence keeps its first one)
        s->first_step = clock_;
        s->first_seconds = sampled_at;
        const auto r = static_cast<std::size_t>(s->request);
        stats_.latency.ttft_steps.push_back(clock_ - arrived_step_[r] + 1);
        stats_.latency.ttft_seconds.push_back(sampled_at - arrived_seconds_[r]);
      }
      // Parallel samples: the children share every block of the prompt (a fork); the first
      // token each writes into a shared, partly filled block is a copy-on-write.
      for (int k = 1; k < n; ++k) {
        Sequence* c = new_sequence();
        c->id = next_id_++;
        c->request = s->request;
        c->sample = k;
        c->forks_pending = 1;
        c->prompt_len = s->prompt_len;
        c->target_len = s->target_len;
        c->seed = s->seed;
        c->tokens = TokenRow(token_rows_.data() + row_at_[static_cast<std::size_t>(c->request)] +
                                 static_cast<std::size_t>(k) * static_cast<std::size_t>(c->target_len),
                             c->target_len);
        c->tokens.assign(s->tokens.span());
        c->computed = s->computed;
        c->first_step = s->first_step;
        c->first_seconds = s->first_seconds;
        manager_->fork(s->id, c->id, pending_copies_);
        c->tokens.push_back(sampled_[static_cast<std::size_t>(out + k)]);
        running_.push_back(c);
      }
      s->tokens.push_back(sampled_[static_cast<std::size_t>(out)]);
      s->forks_pending = 1;
      out += n;
    }
    std::size_t keep = 0;
    for (Sequence* s : running_) {
      if (static_cast<int>(s->tokens.size()) == s->target_len) {
        if (const int n = s->target_len - s->prompt_len; n > 1) {
          stats_.latency.tpot_steps.push_back(static_cast<double>(clock_ - s->first_step) / (n - 1));
          stats_.latency.tpot_seconds.push_back((sampled_at - s->first_seconds) / (n - 1));
        }
        outputs_[static_cast<std::size_t>(s->request)][static_cast<std::size_t>(s->sample)].assign(
            s->tokens.begin() + s->prompt_len, s->tokens.end());
        manager_->release(s->id);
        if (--samples_left_[static_cast<std::size_t>(s->request)] == 0) ++finished;
        sequences_.destroy(s);
        continue;
      }
      running_[keep++] = s;
    }
    running_.resize(keep);
    stats_.peak_running = std::max(stats_.peak_running, static_cast<int>(running_.size()));

    record(static_cast<int>(decode.size() + prefill.size()), preempted);
    TimeSplit& split = stats_.split;
    const double took = seconds() - step_start;
    split.decode_tokens += static_cast<long>(decode.size());
    if (prefill.empty()) {
      ++split.decode_steps;
      split.decode_seconds += took;
      split.decode_step_rows += static_cast<long>(decode.size());
      for (const Sequence* s : decode) split.decode_step_context += static_cast<long>(s->tokens.size()) - 1;
    } else {
      ++split.prefill_steps;
      split.prefill_seconds += took;
    }
    arena_.reset();  // the step's metadata is dead: one pointer moves back
    return finished;
  }

  const detail::StepInput* build_inputs(const std::pmr::vector<Sequence*>& decode, const std::pmr::vector<Sequence*>& prefill) {
    int rows = static_cast<int>(decode.size());
    for (const Sequence* s : prefill) rows += static_cast<int>(s->tokens.size()) - s->computed;
    const int nseq = static_cast<int>(decode.size() + prefill.size());
    int table_ints = 0;
    for (const Sequence* s : decode) table_ints += static_cast<int>(manager_->block_table(s->id).size());
    for (const Sequence* s : prefill) table_ints += static_cast<int>(manager_->block_table(s->id).size());

    // The metadata (exercise 01's Arena): built here, dead at the end of the step.
    int* tokens = arena_.alloc_array<int>(static_cast<std::size_t>(rows));
    int* positions = arena_.alloc_array<int>(static_cast<std::size_t>(rows));
    int* slots = arena_.alloc_array<int>(static_cast<std::size_t>(rows));
    int* seq_of_row = arena_.alloc_array<int>(static_cast<std::size_t>(rows));
    int* tables = arena_.alloc_array<int>(static_cast<std::size_t>(std::max(table_ints, 1)));
    int* table_at = arena_.alloc_array<int>(static_cast<std::size_t>(nseq));
    int* logit_rows = arena_.alloc_array<int>(static_cast<std::size_t>(nseq));
    auto* jobs = arena_.alloc_array<detail::SampleJob>(static_cast<std::size_t>(nseq));
    int row = 0, t = 0, si = 0, out = 0;
    const int slot_end = o_.kv_blocks * o_.block_tokens;
    auto add_seq = [&](const Sequence* s, int from) {
      const std::span<const int> table = manager_->block_table(s->id);
      // Attention reads the KV through these numbers: one outside the buffer would read memory
      // that is not KV at all, so the engine refuses it before the model runs.
      for (const int b : table)
        if (b < 0 || b >= o_.kv_blocks)
          throw std::logic_error("ServedEngine: block_table(" + std::to_string(s->id) + ") lists block " + std::to_string(b) +
                                 ", outside the " + std::to_string(o_.kv_blocks) + " blocks of the KV buffer");
      table_at[si] = t;
      std::copy(table.begin(), table.end(), tables + t);
      t += static_cast<int>(table.size());
      const int len = static_cast<int>(s->tokens.size());
      for (int p = from; p < len; ++p, ++row) {
        tokens[row] = s->tokens[static_cast<std::size_t>(p)];
        positions[row] = p;
        // The slot mapping, as the manager answers it: the row's K and V are written there, and
        // read back through the block table, so a slot and a table that disagree change a token.
        slots[row] = manager_->slot(s->id, p);
        if (slots[row] < 0 || slots[row] >= slot_end)
          throw std::logic_error("ServedEngine: slot(" + std::to_string(s->id) + ", " + std::to_string(p) + ") is " +
                                 std::to_string(slots[row]) + ", outside the KV buffer's " + std::to_string(slot_end) +
                                 " token slots");
        seq_of_row[row] = si;
      }
      logit_rows[si] = row - 1;
      const int count = s->forks_pending;
      jobs[si] = {s->seed, s->sample, count, len, out};
      out += count;
      ++si;
    };
    for (const Sequence* s : decode) add_seq(s, static_cast<int>(s->tokens.size()) - 1);
    for (const Sequence* s : prefill) add_seq(s, s->computed);

    // The upload (exercise 06's ring): one contiguous allocation holding every array, which
    // the runner reads and reclaims. The runner reclaims each step's bytes before the scheduler
    // builds the next step, so a refusal can only mean a step larger than the whole ring.
    const std::size_t ints = static_cast<std::size_t>(4 * rows + table_ints + nseq);
    const std::size_t bytes = sizeof(detail::StepInput) + nseq * (sizeof(SeqKV) + sizeof(detail::SampleJob)) +
                              ints * sizeof(int) + pending_copies_.size() * sizeof(KvCopy) + 256;
    void* block = ring_.allocate(bytes, 64);
    if (block == nullptr)
      throw std::logic_error("ServedEngine: a step's inputs of " + std::to_string(bytes) + " bytes do not fit the ring of " +
                             std::to_string(kRingBytes));
    auto* base = static_cast<std::byte*>(block);
    std::size_t at = 0;
    auto put = [&](const void* src, std::size_t n, std::size_t align) {
      at = round_up(at, align);
      std::byte* dst = base + at;
      if (n) std::memcpy(dst, src, n);
      at += n;
      return dst;
    };
    auto* in = reinterpret_cast<detail::StepInput*>(base);
    at = sizeof(detail::StepInput);
    auto* r_tokens = reinterpret_cast<int*>(put(tokens, sizeof(int) * static_cast<std::size_t>(rows), alignof(int)));
    auto* r_positions = reinterpret_cast<int*>(put(positions, sizeof(int) * static_cast<std::size_t>(rows), alignof(int)));
    auto* r_slots = reinterpret_cast<int*>(put(slots, sizeof(int) * static_cast<std::size_t>(rows), alignof(int)));
    auto* r_seq = reinterpret_cast<int*>(put(seq_of_row, sizeof(int) * static_cast<std::size_t>(rows), alignof(int)));
    auto* r_tables = reinterpret_cast<int*>(put(tables, sizeof(int) * static_cast<std::size_t>(table_ints), alignof(int)));
    auto* r_logits = reinterpret_cast<int*>(put(logit_rows, sizeof(int) * static_cast<std::size_t>(nseq), alignof(int)));
    auto* r_jobs = reinterpret_cast<detail::SampleJob*>(
        put(jobs, sizeof(detail::SampleJob) * static_cast<std::size_t>(nseq), alignof(detail::SampleJob)));
    auto* r_copies = reinterpret_cast<KvCopy*>(
        put(pending_copies_.data(), sizeof(KvCopy) * pending_copies_.size(), alignof(KvCopy)));
    auto* r_seqs = reinterpret_cast<SeqKV*>(put(nullptr, 0, alignof(SeqKV)));
    for (int i = 0; i < nseq; ++i) r_seqs[i] = {kv_.data(), r_tables + table_at[i]};
    at += sizeof(SeqKV) * static_cast<std::size_t>(nseq);
    in->batch = {rows, r_tokens, r_positions, r_slots, r_seq, r_seqs, layout_, nseq, r_logits};
    in->jobs = r_jobs;
    in->job_count = nseq;
    in->copies = r_copies;
    in->copy_count = static_cast<int>(pending_copies_.size());
    in->checkpoint = ring_.checkpoint();
    pending_copies_.clear();
    return in;
  }

  void record(int batch, int preempted) {
    const int free_all = manager_->num_free_blocks(), idle = manager_->num_idle_blocks();
    stats_.timeline.push_back({o_.kv_blocks - free_all, free_all - idle, idle, batch, preempted, last_reserved_,
                               last_allocated_});
    // KV utilization: tokens whose K and V are stored, over the capacity of the blocks the
    // running sequences hold. A block shared by several sequences is counted once.
    ++stamp_now_;
    long stored = 0, held = 0;
    for (const Sequence* s : running_) {
      const std::span<const int> table = manager_->block_table(s->id);
      held += manager_->held_blocks(s->id) - static_cast<long>(table.size());  // spare reservations
      for (std::size_t i = 0; i < table.size(); ++i) {
        const auto b = static_cast<std::size_t>(table[i]);
        const int filled = std::clamp(s->computed - static_cast<int>(i) * o_.block_tokens, 0, o_.block_tokens);
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
      util_sum_ += static_cast<double>(stored) / (static_cast<double>(held) * o_.block_tokens);
      ++util_steps_;
    }
  }

  // ---- the hand-off between the two threads ----------------------------------------------

  void execute(const detail::StepInput* in) {
    if (!o_.two_threads) {
      run_model(*in);
      return;
    }
    std::unique_lock lock(mutex_);
    job_ = in;
    done_ = false;
    cv_.notify_all();
    cv_.wait(lock, [this] { return done_; });
    if (runner_error_) std::rethrow_exception(runner_error_);
  }

  void stop_runner(std::thread& runner) {
    if (!runner.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    runner.join();
  }

  // ---- the model-runner thread -----------------------------------------------------------

  void runner_loop() {
    for (;;) {
      const detail::StepInput* in = nullptr;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || job_ != nullptr; });
        if (stop_) return;
        in = job_;
        job_ = nullptr;
      }
      try {
        run_model(*in);
      } catch (...) {
        std::lock_guard lock(mutex_);
        runner_error_ = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        done_ = true;
      }
      cv_.notify_all();
    }
  }

  /// Copies ordered by copy-on-write (or by the reserving manager's fork), then the forward
  /// pass, then the samples. Runs on the runner thread when there are two.
  void run_model(const detail::StepInput& in) {
    const std::size_t block_floats = layout_.block_floats(model_.config());
    for (int i = 0; i < in.copy_count; ++i)
      std::memcpy(kv_.data() + static_cast<std::size_t>(in.copies[i].dst) * block_floats,
                  kv_.data() + static_cast<std::size_t>(in.copies[i].src) * block_floats, block_floats * sizeof(float));
    detail::CachedWorkspace ws(caching_, o_.heap_count, runner_allocator_heap_);  // its block goes back at the end
    const float* logits = model_.forward(in.batch, ws);
    const int vocab = model_.config().vocab;
    for (int i = 0; i < in.job_count; ++i) {
      const detail::SampleJob& j = in.jobs[i];
      top_k(logits + static_cast<std::size_t>(i) * static_cast<std::size_t>(vocab), vocab, top_);
      for (int k = 0; k < j.count; ++k)
        sampled_[static_cast<std::size_t>(j.out + k)] = draw_token(top_, j.seed, j.first_sample + k, j.position);
    }
    const CacheStats cs = caching_.stats();  // before the step's block goes back
    last_reserved_ = cs.reserved_bytes;
    last_allocated_ = cs.allocated_bytes;
    // The step's inputs are read: the ring may hand their bytes out again.
    ring_.reclaim(in.checkpoint);
  }

  const Model& model_;
  const Trace& trace_;
  EngineOptions o_;
  KVLayout layout_;
  std::unique_ptr<CountedManager> manager_;
  aligned_vector<float> kv_;  // every block's K and V, 64-byte aligned (exercise 05)
  ObjectPool<Sequence> sequences_;
  Arena arena_;
  RingBumpAllocator ring_;
  aligned_vector<std::byte> step_buffer_;
  HostDevice device_;
  CachingAllocator<HostDevice> caching_;

  std::vector<Sequence*> running_;  // admission order: the back is the newest
  detail::WaitingQueue waiting_{0};  // arrival order, preempted sequences in front
  std::vector<int> token_rows_;      // every sequence's token ids, a row each (TokenRow)
  std::vector<std::size_t> row_at_;  // per request: where its samples' rows begin
  std::vector<KvCopy> pending_copies_;
  std::vector<int> sampled_;
  TopK top_;  // the runner's sampling scratch
  Outputs outputs_;
  std::vector<int> samples_left_;  // per request: samples not yet finished
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int clock_ = 0;                         // the trace's clock: the step being served
  std::vector<int> arrived_step_;         // per request: when it arrived, in steps
  std::vector<double> arrived_seconds_;   // and in seconds
  int next_id_ = 0, watermark_ = 1;
  std::size_t admitted_prompt_tokens_ = 0, hit_tokens_ = 0;
  std::size_t last_reserved_ = 0, last_allocated_ = 0;
  std::vector<int> stamp_, filled_;
  int stamp_now_ = 0;
  double util_sum_ = 0;
  long util_steps_ = 0;
  std::vector<std::uint64_t> heap_per_step_, manager_heap_per_step_, allocator_heap_per_step_;
  std::uint64_t heap_mark_ = 0, manager_mark_ = 0;  // the counts at the end of the step before
  std::uint64_t allocator_heap_ = 0;         // this step's, by the kit's allocators on the scheduler thread
  std::uint64_t runner_allocator_heap_ = 0;  // and on the runner thread (read once the step is done)
  RunStats stats_;

  std::mutex mutex_;
  std::condition_variable cv_;
  const detail::StepInput* job_ = nullptr;
  bool done_ = false, stop_ = false;
  std::exception_ptr runner_error_;
};

}  // namespace alloclab::engine
