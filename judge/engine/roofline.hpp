// The roofline: how close a decode step runs to what this machine can do. Two ceilings are
// measured once, on the core the engine runs on: how fast it streams memory (a read of a buffer
// far larger than any cache) and how fast the engine's own matrix product multiplies when its
// weights stay in cache. A decode step's bytes and FLOPs come from the model's shapes, so the
// step's achieved rates can be set against them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "aligned_allocator.hpp"
#include "kernels.hpp"
#include "model_config.hpp"

namespace alloclab::engine {

struct Ceilings {
  double bytes_per_second = 0;  // streaming reads from memory
  double flops_per_second = 0;  // the engine's matmul with its weights in cache
};

namespace detail {

template <class F>
double best_seconds(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace detail

/// Measures both ceilings, in about a second; the best of a few tries of each, since a try can
/// only be slowed down by the machine, never sped up.
[[nodiscard]] inline Ceilings measure_ceilings() {
  Ceilings c;
  {
    // 256 MiB, read with the kernels' 16-float loads; every page written first, so that the
    // reads measure memory and not the first touch of each page.
    const std::size_t floats = std::size_t{64} << 20;
    aligned_vector<float> buffer(floats, 1.0f);
    volatile float sink = 0;
    const double seconds = detail::best_seconds(3, [&] {
      f32x16 a{}, b{}, v;
      for (std::size_t i = 0; i < floats; i += 32) {
        load16(v, buffer.data() + i);
        a += v;
        load16(v, buffer.data() + i + 16);
        b += v;
      }
      sink = lane_sum(a + b);
    });
    (void)sink;
    c.bytes_per_second = static_cast<double>(floats * sizeof(float)) / seconds;
  }
  {
    // 64 rows through a 512 x 1536 weight (3 MiB): the shape of a layer's widest matrix in a
    // full batch, small enough to stay in the caches, so that arithmetic, not memory, limits it.
    constexpr int m = 64, k = 512, n = 1536;
    aligned_vector<float> x(static_cast<std::size_t>(m) * k, 0.5f), w(static_cast<std::size_t>(k) * n, 0.25f),
        y(static_cast<std::size_t>(m) * n);
    matmul(x.data(), m, k, w.data(), n, y.data());  // warm the caches
    const double seconds = detail::best_seconds(5, [&] {
      for (int i = 0; i < 10; ++i) matmul(x.data(), m, k, w.data(), n, y.data());
    });
    c.flops_per_second = 10.0 * 2.0 * m * k * n / seconds;
  }
  return c;
}

/// What the decode-only steps of a run asked of the machine, from the model's shapes: each step
/// streams every layer's weights and the LM head once (the embedding table is read only at the
/// step's tokens), and every row reads the K and V of its context.
struct DecodeDemand {
  double bytes = 0, flops = 0;
};

[[nodiscard]] inline DecodeDemand decode_demand(const ModelConfig& c, long steps, long rows, long context_tokens) {
  const double h = c.hidden, weights = static_cast<double>(c.layers) * static_cast<double>(c.layer_params()) +
                                       static_cast<double>(c.vocab) * h;
  DecodeDemand d;
  d.bytes = static_cast<double>(steps) * weights * sizeof(float) +
            static_cast<double>(context_tokens) * static_cast<double>(c.kv_bytes_per_token());
  // Two FLOPs a weight a row; attention: a dot product and a weighted sum over the context, per
  // query head and layer.
  d.flops = 2.0 * weights * static_cast<double>(rows) +
            4.0 * static_cast<double>(context_tokens) * c.q_dim() * c.layers;
  return d;
}

}  // namespace alloclab::engine
