// Sampling a token from a row of logits, with draws that scheduling cannot change.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "random.hpp"

namespace alloclab::engine {

inline constexpr float kTemperature = 0.8f;
inline constexpr int kTopK = 40;

/// The candidates of one row: the top-k tokens by logit and their unnormalised softmax
/// weights. One row serves every parallel sample drawn from it.
struct TopK {
  int count = 0;
  int token[kTopK];
  float logit[kTopK];
  double weight[kTopK];
  double total = 0;
};

/// Top-k, then softmax(logit / T) over the k: what most serving APIs offer, and cheap on a
/// CPU, where exponentials of a 32000-token vocabulary would cost more per row than the
/// lm_head's memory traffic. Ties go to the lower token id, so the candidates, their order
/// and their weights are a function of the row alone.
inline void top_k(const float* logits, int vocab, TopK& t) noexcept {
  t.count = 0;
  for (int i = 0; i < vocab; ++i) {
    const float v = logits[i];
    if (t.count == kTopK && !(v > t.logit[kTopK - 1])) continue;  // the common case: one compare
    int at = t.count < kTopK ? t.count++ : kTopK - 1;              // insertion keeps them sorted, highest first
    while (at > 0 && v > t.logit[at - 1]) {
      t.logit[at] = t.logit[at - 1];
      t.token[at] = t.token[at - 1];
      --at;
    }
    t.logit[at] = v;
    t.token[at] = i;
  }
  t.total = 0;
  for (int j = 0; j < t.count; ++j) {
    t.weight[j] = std::exp(static_cast<double>(t.logit[j] - t.logit[0]) / kTemperature);
    t.total += t.weight[j];
  }
}

/// Draws a token from the candidates. The one random number it uses is a hash of (request
/// seed, sample index, position), not the next draw of a generator shared by the batch: a
/// shared generator would hand a request different numbers depending on who else was sampled
/// before it in the step, and the same request served twice (alone, batched, preempted and
/// recomputed) would produce different text. vLLM gives each request that carries a seed its
/// own generator for the same reason.
[[nodiscard]] inline int draw_token(const TopK& t, std::uint64_t seed, int sample, int position) noexcept {
  const double target =
      t.total * unit_float(hash3(seed, static_cast<std::uint64_t>(sample), static_cast<std::uint64_t>(position)));
  double run = 0.0;
  for (int j = 0; j < t.count; ++j) {
    run += t.weight[j];
    if (run > target) return t.token[j];
  }
  return t.token[t.count - 1];
}

}  // namespace alloclab::engine
