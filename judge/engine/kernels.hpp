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
// How: a matrix product keeps two accumulator lanes per output (even and odd inputs), each adding in
// index order, so tiling the batch differently changes which rows share a load, never a
// row's sums. Other reductions (norms, attention scores) run over 16-float lanes in a fixed
// stride, then add the 16 lanes in one fixed tree.
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

/// The weights of a matrix with n outputs and k inputs are stored in panels of 32 outputs:
/// panel p holds, for each input i in order, the 32 weights of outputs 32p..32p+31 (n a
/// multiple of 32). A panel is one contiguous run of k * 32 floats, read front to back.
inline constexpr int kPanel = 32;
inline constexpr int kPrefetchInputs = 64;  // 64 inputs x 32 floats: 8 KB ahead

/// R rows of X times one panel: out[r][0..32) = sum over i of X[r][i] * P[i][0..32). Each
/// output is one lane of two accumulators, one for the even inputs and one for the odd,
/// each summed in input order, then added: the same chain of roundings whatever R is and
/// whichever rows share the tile, so a row's result depends on nothing but the row. Two
/// chains per output keep a single row from waiting on the latency of one long chain of
/// FMAs. The panel's vectors are loaded once per input for the R rows: the more rows, the
/// less each costs.
template <int R>
inline void panel_tile(const float* P, const float* const x[R], int k, float* const y[R]) noexcept {
  f32x16 even[R][2] = {}, odd[R][2] = {};
  for (int i = 0; i < k; i += 2) {
    // Ask for the panel's bytes 8 KB before they are needed (the next panel's, near the
    // end): the hardware prefetcher alone keeps too few lines in flight, and a decode step's
    // loads would wait for its arithmetic instead of overlapping it. Prefetching past the
    // end of the weights is harmless: a prefetch never faults.
    __builtin_prefetch(P + static_cast<std::size_t>(i + kPrefetchInputs) * kPanel);
    __builtin_prefetch(P + static_cast<std::size_t>(i + kPrefetchInputs) * kPanel + 16);
    __builtin_prefetch(P + static_cast<std::size_t>(i + kPrefetchInputs + 1) * kPanel);
    __builtin_prefetch(P + static_cast<std::size_t>(i + kPrefetchInputs + 1) * kPanel + 16);
    f32x16 w0, w1, w2, w3;
    load16(w0, P + static_cast<std::size_t>(i) * kPanel);
    load16(w1, P + static_cast<std::size_t>(i) * kPanel + 16);
    load16(w2, P + static_cast<std::size_t>(i + 1) * kPanel);
    load16(w3, P + static_cast<std::size_t>(i + 1) * kPanel + 16);
    for (int r = 0; r < R; ++r) {
      const float xa = x[r][i], xb = x[r][i + 1];
      const f32x16 a = {xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa, xa};  // broadcasts
      const f32x16 b = {xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb, xb};
      even[r][0] += a * w0;
      even[r][1] += a * w1;
      odd[r][0] += b * w2;
      odd[r][1] += b * w3;
    }
  }
  for (int r = 0; r < R; ++r) {
    const f32x16 lo = even[r][0] + odd[r][0], hi = even[r][1] + odd[r][1];
    std::memcpy(y[r], &lo, sizeof(f32x16));
    std::memcpy(y[r] + 16, &hi, sizeof(f32x16));
  }
}

template <int R>
inline void panel_rows(const float* P, const float* X, int r, int k, float* Y, int n, int j0) noexcept {
  const float* x[R];
  float* y[R];
  for (int t = 0; t < R; ++t) {
    x[t] = X + static_cast<std::size_t>(r + t) * static_cast<std::size_t>(k);
    y[t] = Y + static_cast<std::size_t>(r + t) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j0);
  }
  panel_tile<R>(P, x, k, y);
}

/// Y[m x n] = X[m x k] times W, W in panels (see kPanel). k and n multiples of 32.
///
/// The loop order is weight-stationary: for each panel, every batch row. So a decode step
/// with m rows reads each weight from memory once, not m times, and its cost stays the cost
/// of streaming the weights until m is large enough for the arithmetic to dominate: decode
/// is memory-bound, as on a GPU. Rows go 4 at a time (then 2, 1 for the rest; the same
/// arithmetic per row), and 64 rows at most per pass over the weights, so that their inputs
/// stay in the L2 cache while the panels stream past.
inline void matmul(const float* X, int m, int k, const float* W, int n, float* Y) noexcept {
  constexpr int kRowBlock = 64;
  for (int r0 = 0; r0 < m; r0 += kRowBlock) {
    const int r1 = std::min(m, r0 + kRowBlock);
    for (int j0 = 0; j0 < n; j0 += kPanel) {
      const float* P = W + static_cast<std::size_t>(j0) * static_cast<std::size_t>(k);
      int r = r0;
      for (; r + 4 <= r1; r += 4) panel_rows<4>(P, X, r, k, Y, n, j0);
      if (r + 2 <= r1) { panel_rows<2>(P, X, r, k, Y, n, j0); r += 2; }
      if (r < r1) panel_rows<1>(P, X, r, k, Y, n, j0);
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
