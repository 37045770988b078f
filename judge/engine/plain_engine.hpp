// The plain engine: the same model with std::vector for everything. It is the oracle.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "model.hpp"
#include "results.hpp"
#include "sampler.hpp"
#include "trace.hpp"

namespace alloclab::engine {

/// Activations as fresh vectors, freed when the step ends: what a first engine does.
struct VectorWorkspace {
  std::vector<std::vector<float>> buffers;
  void reserve(std::size_t) {}
  float* floats(std::size_t n) { return buffers.emplace_back(n).data(); }
};

namespace detail {

/// A plain sequence: its tokens, and its KV, contiguous ([position][layer][K, V][kv_dim]).
struct PlainSeq {
  int request, sample;
  std::vector<int> tokens;
  std::vector<float> kv;
};

/// Request `ri`'s prompt, every token in one forward pass, then its parallel samples, each a
/// full copy of the prompt's KV with its first token, joining `live`.
inline void plain_prefill(const Model& model, const Trace& trace, std::size_t ri, std::vector<PlainSeq>& live) {
  const ModelConfig& c = model.config();
  const KVLayout layout = KVLayout::contiguous(c);
  const TraceRequest& r = trace.requests[ri];
  PlainSeq s{static_cast<int>(ri), 0, r.prompt, std::vector<float>(r.prompt.size() * layout.token_stride)};
  const int n = static_cast<int>(r.prompt.size());
  std::vector<int> positions(static_cast<std::size_t>(n)), seq_of_row(static_cast<std::size_t>(n), 0);
  for (int p = 0; p < n; ++p) positions[static_cast<std::size_t>(p)] = p;
  std::vector<SeqKV> seqs{{s.kv.data(), nullptr}};
  const int last = n - 1;
  BatchView b{n, r.prompt.data(), positions.data(), positions.data(), seq_of_row.data(), seqs.data(), layout, 1, &last};
  VectorWorkspace ws;
  const float* logits = model.forward(b, ws);
  TopK top;
  top_k(logits, c.vocab, top);
  for (int smp = 0; smp < r.samples; ++smp) {
    PlainSeq copy = s;
    copy.sample = smp;
    copy.tokens.push_back(draw_token(top, r.seed, smp, n));
    live.push_back(std::move(copy));
  }
}

/// One decode step of every sequence in `live` that still has tokens to generate, batched.
/// Returns false when none has.
inline bool plain_decode(const Model& model, const Trace& trace, std::vector<PlainSeq>& live) {
  const ModelConfig& c = model.config();
  const KVLayout layout = KVLayout::contiguous(c);
  std::vector<PlainSeq*> batch;
  for (PlainSeq& s : live) {
    const TraceRequest& r = trace.requests[static_cast<std::size_t>(s.request)];
    if (static_cast<int>(s.tokens.size() - r.prompt.size()) < r.new_tokens) batch.push_back(&s);
  }
  if (batch.empty()) return false;
  const int rows = static_cast<int>(batch.size());
  std::vector<int> tokens, positions, seq_of_row, logit_rows;
  std::vector<SeqKV> seqs;
  for (int i = 0; i < rows; ++i) {
    PlainSeq& s = *batch[static_cast<std::size_t>(i)];
    s.kv.resize(s.tokens.size() * layout.token_stride);  // grows, and moves, as vectors do
    tokens.push_back(s.tokens.back());
    positions.push_back(static_cast<int>(s.tokens.size()) - 1);
    seq_of_row.push_back(i);
    logit_rows.push_back(i);
    seqs.push_back({s.kv.data(), nullptr});
  }
  BatchView b{rows, tokens.data(), positions.data(), positions.data(), seq_of_row.data(), seqs.data(), layout,
              rows, logit_rows.data()};
  VectorWorkspace ws;
  const float* logits = model.forward(b, ws);
  for (int i = 0; i < rows; ++i) {
    PlainSeq& s = *batch[static_cast<std::size_t>(i)];
    TopK top;
    top_k(logits + static_cast<std::size_t>(i) * static_cast<std::size_t>(c.vocab), c.vocab, top);
    const TraceRequest& r = trace.requests[static_cast<std::size_t>(s.request)];
    s.tokens.push_back(draw_token(top, r.seed, s.sample, static_cast<int>(s.tokens.size())));
  }
  return true;
}

}  // namespace detail

/// Serves a trace with none of the kit's allocators and none of the served engine's
/// cleverness: each sequence has one contiguous KV vector that grows as it goes, a parallel
/// sample is a full copy of its parent's vector, nothing is shared or cached and there is
/// no memory limit, so nothing is ever preempted. It batches decode steps (a group of
/// requests at a time) only to finish sooner: the kernels are batch-invariant, so batching
/// changes no token. `heap_count`, when given, reads a counter of heap allocations, and
/// `stats` receives the plain engine's allocations per steady-state step.
inline Outputs run_plain(const Model& model, const Trace& trace, RunStats* stats = nullptr,
                         std::uint64_t (*heap_count)() = nullptr) {
  Outputs out(trace.requests.size());
  std::vector<std::uint64_t> allocs;
  const auto start = std::chrono::steady_clock::now();
  // Each forward pass is a step, and its allocations run from the end of the pass before to the
  // end of its own, as the served engine counts them: nothing between two passes goes uncounted.
  std::uint64_t mark = heap_count ? heap_count() : 0;
  auto step_done = [&] {
    if (!heap_count) return;
    const std::uint64_t now = heap_count();
    allocs.push_back(now - mark);
    mark = now;
  };

  constexpr std::size_t kGroup = 64;
  for (std::size_t g0 = 0; g0 < trace.requests.size(); g0 += kGroup) {
    std::vector<detail::PlainSeq> live;
    for (std::size_t ri = g0; ri < std::min(trace.requests.size(), g0 + kGroup); ++ri) {
      out[ri].resize(static_cast<std::size_t>(trace.requests[ri].samples));
      detail::plain_prefill(model, trace, ri, live);
      step_done();
    }
    // Decode the group together until every sequence has its tokens.
    while (detail::plain_decode(model, trace, live)) step_done();
    for (const detail::PlainSeq& s : live) {
      const auto prompt = static_cast<std::ptrdiff_t>(trace.requests[static_cast<std::size_t>(s.request)].prompt.size());
      out[static_cast<std::size_t>(s.request)][static_cast<std::size_t>(s.sample)].assign(s.tokens.begin() + prompt,
                                                                                         s.tokens.end());
    }
  }
  if (stats) {
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->steps = static_cast<int>(allocs.size());
    stats->heap_allocations_per_step = steady_state_mean(allocs);
  }
  return out;
}

}  // namespace alloclab::engine
