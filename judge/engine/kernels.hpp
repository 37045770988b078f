// The model's arithmetic, written so that every row's result is the same whatever else is in
// the batch (batch invariance).
//
// Why it matters: the served engine computes a request's tokens in batches whose other rows
// change from step to step (who else is running, whether its prompt came in one piece or was
// recomputed after a preemption, whether its prefix was cached). If a row's logits depended
// on its neighbours by even one rounding, a sampled token could differ, and the engine could
// not be checked token for token against the plain engine. GPU kernels lose this property
// when they pick a different split of a reduction for a different batch size (split-K
// matmuls, atomics); the rule here is the same one batch-invariant GPU kernels follow: a
// row's sums always run in one fixed order that depends only on the row's length.
//
// How: every reduction runs over 16-float vector lanes in a fixed stride, then the 16 lanes
// are added in one fixed tree. Every matrix product goes through one function, `dot4`, four
// rows at a time; a batch that is not a multiple of four is padded with a row of zeros, so
// that no row ever takes a different code path (a tail loop could be compiled differently).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace alloclab::engine {

// GCC and Clang vector extensions: sixteen floats, one AVX-512 register where the target has
// it, four SSE registers otherwise. The arithmetic is the same either way.
using f32x16 = float __attribute__((vector_size(64)));

inline void load16(f32x16& v, const float* p) noexcept { std::memcpy(&v, p, sizeof v); }

/// The sixteen lanes, added in a fixed tree: (0+8, 1+9, ...), then halves again.
[[nodiscard]] inline float lane_sum(const f32x16& v) noexcept {
  float a[16];
  std::memcpy(a, &v, sizeof a);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a[i] += a[i + w];
  return a[0];
}

/// Four dot products of length k (a multiple of 32) against one weight row `w`: the weight
/// row is loaded once for the four, which is what makes the product cheaper per row as the
/// batch grows. Each row keeps two accumulators (even and odd 16-float chunks), enough
/// independent sums to keep the FMA units busy, and the same two for every row.
inline void dot4(const float* w, const float* const x[4], int k, float out[4]) noexcept {
  f32x16 acc[4][2] = {};
  for (int i = 0; i < k; i += 32) {
    f32x16 w0, w1;
    load16(w0, w + i);
    load16(w1, w + i + 16);
    for (int r = 0; r < 4; ++r) {
      f32x16 x0, x1;
      load16(x0, x[r] + i);
      load16(x1, x[r] + i + 16);
      acc[r][0] += w0 * x0;
      acc[r][1] += w1 * x1;
    }
  }
  for (int r = 0; r < 4; ++r) {
    const f32x16 s = acc[r][0] + acc[r][1];
    out[r] = lane_sum(s);
  }
}

/// Y[m x n] = X[m x k] times W[n x k] transposed (W stored as n rows of k: each output
/// feature's weights are contiguous). `zeros` holds at least k zeros, the padding row.
///
/// The loop order is weight-stationary: for each weight row, every batch row. So a decode
/// step with m rows reads each weight from memory once, not m times, and its cost stays the
/// cost of streaming the weights until m is large enough for the arithmetic to dominate:
/// decode is memory-bound, as on a GPU. Rows are taken 64 at a time so that their inputs
/// (64 x k floats) stay in the L2 cache while the weights stream past.
inline void matmul(const float* X, int m, int k, const float* W, int n, float* Y, const float* zeros) noexcept {
  constexpr int kRowBlock = 64;
  for (int r0 = 0; r0 < m; r0 += kRowBlock) {
    const int r1 = std::min(m, r0 + kRowBlock);
    for (int j = 0; j < n; ++j) {
      const float* w = W + static_cast<std::size_t>(j) * static_cast<std::size_t>(k);
      for (int r = r0; r < r1; r += 4) {
        const float* x[4];
        for (int t = 0; t < 4; ++t)
          x[t] = r + t < r1 ? X + static_cast<std::size_t>(r + t) * static_cast<std::size_t>(k) : zeros;
        float out[4];
        dot4(w, x, k, out);
        for (int t = 0; t < 4 && r + t < r1; ++t) Y[static_cast<std::size_t>(r + t) * static_cast<std::size_t>(n) + j] = out[t];
      }
    }
  }
}

/// RMSNorm of one row of n floats (n a multiple of 16): y = x / sqrt(mean(x^2) + eps) * g.
inline void rms_norm(const float* x, const float* g, int n, float eps, float* y) noexcept {
  f32x16 acc = {};
  for (int i = 0; i < n; i += 16) {
    f32x16 v;
    load16(v, x + i);
    acc += v * v;
  }
  const float inv = 1.0f / std::sqrt(lane_sum(acc) / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv * g[i];
}

/// Dot product of two head vectors (d a multiple of 16), for attention scores.
[[nodiscard]] inline float head_dot(const float* a, const float* b, int d) noexcept {
  f32x16 acc = {};
  for (int i = 0; i < d; i += 16) {
    f32x16 va, vb;
    load16(va, a + i);
    load16(vb, b + i);
    acc += va * vb;
  }
  return lane_sum(acc);
}

/// Rotary position embedding of one head vector, Llama's layout: element i pairs with
/// element i + d/2, rotated by position * theta^(-2i/d). cos_sin holds (cos, sin) for the
/// position, d/2 pairs, computed once at start-up.
inline void rope(float* v, int d, const float* cos_sin) noexcept {
  const int half = d / 2;
  for (int i = 0; i < half; ++i) {
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = a * s + b * c;
  }
}

/// SwiGLU's gate: silu(gate) * up, element by element.
inline void swiglu(float* gate, const float* up, int n) noexcept {
  for (int i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace alloclab::engine
