// Sampling a token from a row of logits, with draws that scheduling cannot change.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "random.hpp"

namespace alloclab::engine {

inline constexpr float kTemperature = 0.8f;

/// The unnormalised softmax weights exp((logit - max) / T) of one row, into `weights`;
/// returns their sum, added in token order (a double, so that 32000 small terms lose nothing
/// that matters). One row serves every parallel sample drawn from it.
[[nodiscard]] inline double softmax_weights(const float* logits, int vocab, float* weights) noexcept {
  float m = logits[0];
  for (int i = 1; i < vocab; ++i) m = std::max(m, logits[i]);
  const float inv_t = 1.0f / kTemperature;
  double total = 0.0;
  for (int i = 0; i < vocab; ++i) {
    weights[i] = std::exp((logits[i] - m) * inv_t);
    total += weights[i];
  }
  return total;
}

/// Draws a token from the weights. The one random number it uses is a hash of (request seed,
/// sample index, position), not the next draw of a generator shared by the batch: a shared
/// generator would hand a request different numbers depending on who else was sampled before
/// it in the step, and the same request served twice (alone, batched, preempted and
/// recomputed) would produce different text. vLLM gives each request that carries a seed its
/// own generator for the same reason.
[[nodiscard]] inline int draw_token(const float* weights, int vocab, double total, std::uint64_t seed, int sample,
                                    int position) noexcept {
  const double target =
      total * unit_float(hash3(seed, static_cast<std::uint64_t>(sample), static_cast<std::uint64_t>(position)));
  double run = 0.0;
  for (int i = 0; i < vocab; ++i) {
    run += weights[i];
    if (run > target) return i;
  }
  return vocab - 1;
}

}  // namespace alloclab::engine
