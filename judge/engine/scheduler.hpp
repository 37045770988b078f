// The scheduler: which sequences run in a step (continuous batching, admission, preemption by
// recompute), and what becomes of them once the step's tokens are sampled (fork, finish).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "block_managers.hpp"
#include "engine_options.hpp"
#include "fixed_pool.hpp"
#include "heap_tally.hpp"
#include "metrics.hpp"
#include "results.hpp"
#include "sequence.hpp"
#include "trace.hpp"

namespace alloclab::engine {

/// One step's batch: every running sequence's next token, then the prompts admitted this step.
/// Its lists live in the step's memory resource (exercise 05's ArenaResource).
struct ScheduledStep {
  explicit ScheduledStep(std::pmr::memory_resource* r) : decode(r), prefill(r) {}
  std::pmr::vector<Sequence*> decode, prefill;
  int preempted = 0;  // sequences preempted to make room for the decodes

  [[nodiscard]] bool empty() const noexcept { return decode.empty() && prefill.empty(); }
  [[nodiscard]] int size() const noexcept { return static_cast<int>(decode.size() + prefill.size()); }
};

/// Owns the sequences (exercise 02's ObjectPool), their token rows, the waiting queue and the
/// running list, and asks the block manager for their blocks. Everything it keeps has its room
/// before the first step: no heap allocation of its own in a steady step.
class Scheduler {
 public:
  Scheduler(const Trace& trace, CountedManager& manager, Metrics& metrics, const EngineOptions& o)
      : trace_(trace), manager_(manager), metrics_(metrics), o_(o), sequences_(256), waiting_(sample_count(trace)) {
    outputs_.resize(trace.requests.size());
    std::size_t tokens = 0;
    for (std::size_t i = 0; i < trace.requests.size(); ++i) {
      const TraceRequest& r = trace.requests[i];
      outputs_[i].resize(static_cast<std::size_t>(r.samples));
      for (auto& sample : outputs_[i]) sample.reserve(static_cast<std::size_t>(r.new_tokens));
      samples_left_.push_back(r.samples);
      row_at_.push_back(tokens);
      tokens += static_cast<std::size_t>(r.samples) * (r.prompt.size() + static_cast<std::size_t>(r.new_tokens));
    }
    token_rows_.resize(tokens);
    running_.reserve(static_cast<std::size_t>(o.max_seqs));
    pending_copies_.reserve(1024);
    // Only a manager whose sequences take blocks as they grow needs a margin at admission;
    // one that reserves everything up front can never run out mid-generation.
    watermark_ = manager.grows() ? std::max(1, o.kv_blocks * o.watermark_percent / 100) : 0;
  }
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler() {
    for (Sequence* s : running_) sequences_.destroy(s);
    waiting_.for_each([this](Sequence* s) { sequences_.destroy(s); });
  }

  /// Request `request` arrives at `step`: its sequence joins the back of the queue.
  void arrive(int request, int step) {
    const TraceRequest& r = trace_.requests[static_cast<std::size_t>(request)];
    waiting_.push_back(new_sequence(next_id_++, request, r, row(request, 0, static_cast<int>(r.prompt.size()) + r.new_tokens)));
    metrics_.arrived(request, step);
  }

  /// Fills `step` with the sequences to run: the decodes, then the admitted prompts. Throws when
  /// sequences wait or run yet none can: the KV budget is too small for one request.
  void schedule(ScheduledStep& step) {
    schedule_decodes(step);
    if (step.preempted == 0) admit_waiting(step);
    if (step.empty() && (!running_.empty() || !waiting_.empty()))
      throw std::runtime_error("ServedEngine: no progress (KV budget too small for one request)");
  }

  /// The step's tokens are sampled (`sampled`, in the order of the step's rows of logits, a
  /// prompt's samples together): each sequence appends its token, each new prompt forks its
  /// samples, and the sequences that reached their length finish. Returns the requests whose
  /// every sample finished; `clock` and `at` are when.
  int postprocess(const ScheduledStep& step, std::span<const int> sampled, int clock, double at) {
    int out = 0;
    for (Sequence* s : step.decode) {
      s->computed = static_cast<int>(s->tokens.size());
      s->tokens.push_back(sampled[static_cast<std::size_t>(out++)]);
    }
    for (Sequence* s : step.prefill) {
      s->computed = static_cast<int>(s->tokens.size());
      if (s->first_step < 0) {  // its first token (a recomputed sequence keeps its first one)
        s->first_step = clock;
        s->first_seconds = at;
        metrics_.first_token(*s, clock, at);
      }
      const int n = s->forks_pending;
      fork_samples(*s, sampled.subspan(static_cast<std::size_t>(out), static_cast<std::size_t>(n)));
      out += n;
    }
    return finish_done(clock, at);
  }

  [[nodiscard]] bool idle() const noexcept { return running_.empty() && waiting_.empty(); }
  [[nodiscard]] std::span<Sequence* const> running() const noexcept { return running_; }
  /// The copies ordered since the last step's inputs were built; the model runner makes them.
  [[nodiscard]] std::vector<KvCopy>& pending_copies() noexcept { return pending_copies_; }
  [[nodiscard]] int sequences_made() const noexcept { return next_id_; }
  [[nodiscard]] std::size_t live_sequences() const { return sequences_.live(); }
  /// Heap allocations made by the sequence pool since the last call.
  [[nodiscard]] std::uint64_t take_allocator_heap() noexcept {
    pool_heap_ += allocator_heap_;
    return std::exchange(allocator_heap_, 0);
  }
  /// The sequence pool's heap allocations in the run, and the most sequences alive at once.
  [[nodiscard]] std::uint64_t pool_heap() const noexcept { return pool_heap_ + allocator_heap_; }
  [[nodiscard]] std::size_t peak_live() const noexcept { return peak_live_; }
  [[nodiscard]] Outputs take_outputs() { return std::move(outputs_); }

 private:
  static std::size_t sample_count(const Trace& trace) {
    std::size_t samples = 0;
    for (const TraceRequest& r : trace.requests) samples += static_cast<std::size_t>(r.samples);
    return samples;
  }

  /// The token row of sample `sample` of `request`, each of its samples `target_len` long.
  int* row(int request, int sample, int target_len) {
    return token_rows_.data() + row_at_[static_cast<std::size_t>(request)] +
           static_cast<std::size_t>(sample) * static_cast<std::size_t>(target_len);
  }

  template <class... Args>
  Sequence* new_sequence(Args&&... args) {
    HeapTally t(o_.heap_count, allocator_heap_);
    Sequence* s = sequences_.create(std::forward<Args>(args)...);
    peak_live_ = std::max(peak_live_, sequences_.live());
    return s;
  }

  /// Every running sequence decodes one token, oldest first. When no block is left, the newest
  /// running sequence is preempted (it has waited least and loses least), until this one fits
  /// or was itself the newest.
  void schedule_decodes(ScheduledStep& step) {
    step.decode.reserve(running_.size());
    for (std::size_t i = 0; i < running_.size(); ++i) {
      Sequence* s = running_[i];
      bool fits = true;
      while (!manager_.append_token(s->id, s->tokens.back(), pending_copies_)) {
        Sequence* victim = running_.back();
        running_.pop_back();
        preempt(victim);
        ++step.preempted;
        if (victim == s) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
      step.decode.push_back(s);
    }
  }

  /// Preemption by recompute: the sequence gives its blocks back and waits at the front of
  /// the queue; readmitted, its prompt and the tokens it generated are computed again (those
  /// still cached are found by the prefix cache). Swapping the blocks to host memory is the
  /// other choice; recomputing is what vLLM does by default.
  void preempt(Sequence* s) {
    manager_.release(s->id);
    s->computed = 0;
    waiting_.push_front(s);
    metrics_.preempted();
  }

  /// Waiting sequences are admitted while rows, sequences and blocks allow (never in a step that
  /// preempted: the memory is short). A prompt is computed whole in the step that admits it: the
  /// manager makes a prompt's blocks findable at admission, so their K and V must be written
  /// before any later step can read them through a cache hit.
  void admit_waiting(ScheduledStep& step) {
    int budget = o_.max_batch_tokens - static_cast<int>(step.decode.size());
    int forks_to_come = 0;  // the samples of this step's prompts that will fork off once computed
    while (!waiting_.empty() && budget > 0) {
      Sequence* s = waiting_.front();
      const int len = static_cast<int>(s->tokens.size());
      const int max_tokens = s->prompt_len + trace_.max_new_tokens;
      const int samples = s->forks_pending;
      // Each sample runs as a sequence of its own once the prompt is computed: all count.
      if (static_cast<int>(running_.size()) + forks_to_come + samples > o_.max_seqs) break;
      if (!running_.empty() && manager_.num_free_blocks() - manager_.blocks_to_admit(len, max_tokens, samples) < watermark_)
        break;
      if (len > budget && !step.prefill.empty()) break;
      const std::optional<int> cached = manager_.admit(s->id, s->tokens.span(), max_tokens, samples);
      if (!cached) break;
      check_cached(*cached, len);
      waiting_.pop_front();
      s->computed = *cached;
      metrics_.admitted(len, *cached);
      running_.push_back(s);
      step.prefill.push_back(s);
      forks_to_come += samples - 1;
      budget -= len - *cached;
    }
  }

  /// The manager's answer to `admit` is trusted only when it can be right: cached tokens fill
  /// whole blocks, and the last prompt token is always computed (its logits give the first new
  /// token).
  void check_cached(int cached, int len) const {
    if (cached < 0 || cached >= len || cached % o_.block_tokens != 0)
      throw std::logic_error("ServedEngine: admit reported " + std::to_string(cached) + " cached tokens of a " +
                             std::to_string(len) + "-token prompt; it must be whole blocks, and the last prompt "
                             "token is always computed (its logits give the first new token)");
  }

  /// Parallel samples: the children share every block of the prompt (a fork); the first token
  /// each writes into a shared, partly filled block is a copy-on-write. `sampled` holds the
  /// parent's token, then each child's.
  void fork_samples(Sequence& parent, std::span<const int> sampled) {
    for (int k = 1; k < static_cast<int>(sampled.size()); ++k) {
      Sequence* c = new_sequence(next_id_++, parent, k, row(parent.request, k, parent.target_len));
      manager_.fork(parent.id, c->id, pending_copies_);
      c->tokens.push_back(sampled[static_cast<std::size_t>(k)]);
      running_.push_back(c);
    }
    parent.tokens.push_back(sampled[0]);
    parent.forks_pending = 1;
  }

  /// The sequences that reached their length give their tokens and blocks back; the others keep
  /// their order. Returns the requests whose last sample this was.
  int finish_done(int clock, double at) {
    int finished = 0;
    std::size_t keep = 0;
    for (Sequence* s : running_) {
      if (!s->done()) {
        running_[keep++] = s;
        continue;
      }
      metrics_.finished(*s, clock, at);
      outputs_[static_cast<std::size_t>(s->request)][static_cast<std::size_t>(s->sample)].assign(
          s->tokens.begin() + s->prompt_len, s->tokens.end());
      manager_.release(s->id);
      if (--samples_left_[static_cast<std::size_t>(s->request)] == 0) ++finished;
      sequences_.destroy(s);
    }
    running_.resize(keep);
    return finished;
  }

  const Trace& trace_;
  CountedManager& manager_;
  Metrics& metrics_;
  const EngineOptions& o_;
  ObjectPool<Sequence> sequences_;
  std::vector<Sequence*> running_;   // admission order: the back is the newest
  WaitingQueue waiting_;             // arrival order, preempted sequences in front
  std::vector<int> token_rows_;      // every sequence's token ids, a row each (TokenRow)
  std::vector<std::size_t> row_at_;  // per request: where its samples' rows begin
  std::vector<KvCopy> pending_copies_;
  Outputs outputs_;
  std::vector<int> samples_left_;  // per request: samples not yet finished
  int next_id_ = 0, watermark_ = 1;
  std::uint64_t allocator_heap_ = 0;  // the sequence pool's heap allocations, since the last take
  std::uint64_t pool_heap_ = 0;       // and before it
  std::size_t peak_live_ = 0;
};

}  // namespace alloclab::engine
