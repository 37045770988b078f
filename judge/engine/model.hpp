// The decoder: weights, the KV layout it reads and writes, and one forward pass over a batch
// of rows that may mix prompt tokens and decode tokens of many requests.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "aligned_allocator.hpp"
#include "arithmetic.hpp"
#include "kernels.hpp"
#include "model_config.hpp"
#include "random.hpp"

namespace alloclab::engine {

/// Where token slot `slot` of layer `layer` lives in a KV buffer, in floats from its base. The
/// served engine's buffer is block-major ([block][layer][K then V][token in block][kv_dim]),
/// so that a copy-on-write copies one contiguous block; the plain engine's is one request's
/// tokens in order ([position][layer][K then V][kv_dim]), `block_tokens` so large that every
/// slot is in block 0.
struct KVLayout {
  std::size_t block_stride, layer_stride, v_offset, token_stride;
  int block_tokens;

  /// The contiguous layout's `block_tokens`: more than any sequence holds, so one block is the
  /// whole sequence.
  static constexpr int kWholeSequence = 1 << 30;

  [[nodiscard]] std::size_t key(int layer, int slot) const noexcept {
    const auto b = static_cast<std::size_t>(slot / block_tokens), t = static_cast<std::size_t>(slot % block_tokens);
    return b * block_stride + static_cast<std::size_t>(layer) * layer_stride + t * token_stride;
  }

  static KVLayout paged(const ModelConfig& c, int block_tokens) noexcept {
    const auto kv = static_cast<std::size_t>(c.kv_dim()), bt = static_cast<std::size_t>(block_tokens);
    return {static_cast<std::size_t>(c.layers) * 2 * bt * kv, 2 * bt * kv, bt * kv, kv, block_tokens};
  }
  static KVLayout contiguous(const ModelConfig& c) noexcept {
    const auto kv = static_cast<std::size_t>(c.kv_dim());
    return {0, 2 * kv, kv, static_cast<std::size_t>(c.layers) * 2 * kv, kWholeSequence};
  }
  /// Floats of one block (or, for the contiguous layout, of one token).
  [[nodiscard]] std::size_t block_floats(const ModelConfig& c) const noexcept {
    return static_cast<std::size_t>(c.layers) * 2 * static_cast<std::size_t>(c.kv_dim()) *
           static_cast<std::size_t>(block_tokens == kWholeSequence ? 1 : block_tokens);
  }
};

/// How one sequence's KV is found: its buffer, and its block table (null for a contiguous
/// buffer, where the slot of position p is p). Attention reads position j at slot
/// slot_of(table, j, block_tokens) (arithmetic.hpp): PagedAttention's indirection; without a
/// table, at base + j * token_stride, and the layout must then be the contiguous one.
struct SeqKV {
  float* base;
  const int* table;
};

/// One forward pass's input: `rows` tokens, each at its position in its sequence, each
/// writing its K and V to its slot, and the rows whose logits are wanted (the last prompt
/// token of a finished prefill, every decode token).
struct BatchView {
  int rows;
  const int* tokens;
  const int* positions;
  const int* slots;       // where each row's K and V go (the slot mapping)
  const int* seq_of_row;  // index into seqs
  const SeqKV* seqs;
  KVLayout layout;
  int logit_count;
  const int* logit_rows;
};

/// The weights, all in one 64-byte-aligned buffer (exercise 05's AlignedAllocator: every row
/// of every matrix starts on a cache line when its width is a multiple of 16 floats, so the
/// kernels' vector loads never straddle two lines). They are random, drawn from the
/// configuration's seed: the engine is about memory, not text, and random weights give
/// logits as varied as trained ones without shipping a checkpoint.
class Model {
 public:
  explicit Model(const ModelConfig& c) : c_(c) {
    std::size_t at = 0;
    auto take = [&at](std::size_t n) {
      const std::size_t here = at;
      at += tensor_floats(n);
      return here;
    };
    const auto H = static_cast<std::size_t>(c.hidden), V = static_cast<std::size_t>(c.vocab);
    const auto Q = static_cast<std::size_t>(c.q_dim()), KV = static_cast<std::size_t>(c.kv_dim());
    const auto I = static_cast<std::size_t>(c.intermediate);
    embed_ = take(V * H);
    for (int l = 0; l < c.layers; ++l) {
      Layer L{};
      L.attn_norm = take(H);
      L.wq = take(Q * H);
      L.wk = take(KV * H);
      L.wv = take(KV * H);
      L.wo = take(H * Q);
      L.mlp_norm = take(H);
      L.wg = take(I * H);
      L.wu = take(I * H);
      L.wd = take(H * I);
      layers_.push_back(L);
    }
    final_norm_ = take(H);
    lm_head_ = take(V * H);
    w_.resize(at);

    // Uniform weights with the variance of a fan-in initialisation; norms start at one.
    std::uint64_t tensor = 0;
    auto fill = [&](std::size_t off, std::size_t n, std::size_t fan_in) {
      const float scale = std::sqrt(3.0f / static_cast<float>(fan_in));
      ++tensor;
      for (std::size_t i = 0; i < n; ++i)
        w_[off + i] = (2.0f * unit_float(hash3(c.seed, tensor, i)) - 1.0f) * scale;
    };
    auto ones = [&](std::size_t off, std::size_t n) { std::fill_n(w_.begin() + static_cast<std::ptrdiff_t>(off), n, 1.0f); };
    fill(embed_, V * H, 1);  // embeddings of unit scale, like a trained model's after its first norm
    for (const Layer& L : layers_) {
      ones(L.attn_norm, H);
      fill(L.wq, Q * H, H);
      fill(L.wk, KV * H, H);
      fill(L.wv, KV * H, H);
      fill(L.wo, H * Q, Q);
      ones(L.mlp_norm, H);
      fill(L.wg, I * H, H);
      fill(L.wu, I * H, H);
      fill(L.wd, H * I, I);
    }
    ones(final_norm_, H);
    fill(lm_head_, V * H, H);

    rope_ = rope_table(c);
  }

  [[nodiscard]] const ModelConfig& config() const noexcept { return c_; }

  /// One forward pass. Activations come from `ws.reserve(total)` then `ws.floats(n)` for each
  /// tensor, and stay valid until the caller ends the step (the served engine's caching
  /// allocator, the plain engine's vectors).
  /// Returns the logits, `batch.logit_count` rows of `vocab` floats.
  ///
  /// Within a layer, every row's K and V are written before any row attends: a prompt's
  /// token attends to the tokens before it that are computed in the same pass.
  template <class Workspace>
  const float* forward(const BatchView& b, Workspace& ws) const {
    const int H = c_.hidden, Q = c_.q_dim(), KV = c_.kv_dim(), I = c_.intermediate, d = c_.head_dim;
    const auto rows = static_cast<std::size_t>(b.rows);
    const auto [x, xn, q, k, v, att, g, u, scores, last, logits] = activations(b, ws);

    for (int r = 0; r < b.rows; ++r)
      std::copy_n(&w_[embed_ + static_cast<std::size_t>(b.tokens[r]) * static_cast<std::size_t>(H)], H,
                  x + static_cast<std::size_t>(r) * static_cast<std::size_t>(H));

    for (int l = 0; l < c_.layers; ++l) {
      const Layer& L = layers_[static_cast<std::size_t>(l)];
      for (int r = 0; r < b.rows; ++r) rms_norm(row(x, r, H), &w_[L.attn_norm], H, c_.rms_eps, row(xn, r, H));
      matmul(xn, b.rows, H, &w_[L.wq], Q, q);
      matmul(xn, b.rows, H, &w_[L.wk], KV, k);
      matmul(xn, b.rows, H, &w_[L.wv], KV, v);
      for (int r = 0; r < b.rows; ++r) {
        const float* cs = &rope_[static_cast<std::size_t>(b.positions[r]) * static_cast<std::size_t>(d)];
        for (int h = 0; h < c_.heads; ++h) rope(row(q, r, Q) + h * d, d, cs);
        for (int h = 0; h < c_.kv_heads; ++h) rope(row(k, r, KV) + h * d, d, cs);
        // The slot mapping: this row's K and V go to its slot in its sequence's buffer.
        const SeqKV& s = b.seqs[b.seq_of_row[r]];
        float* kd = s.base + b.layout.key(l, b.slots[r]);
        std::copy_n(row(k, r, KV), KV, kd);
        std::copy_n(row(v, r, KV), KV, kd + b.layout.v_offset);
      }
      for (int r = 0; r < b.rows; ++r) attend(b, l, r, row(q, r, Q), scores, row(att, r, Q));
      matmul(att, b.rows, Q, &w_[L.wo], H, xn);
      for (std::size_t i = 0; i < rows * static_cast<std::size_t>(H); ++i) x[i] += xn[i];

      for (int r = 0; r < b.rows; ++r) rms_norm(row(x, r, H), &w_[L.mlp_norm], H, c_.rms_eps, row(xn, r, H));
      matmul(xn, b.rows, H, &w_[L.wg], I, g);
      matmul(xn, b.rows, H, &w_[L.wu], I, u);
      swiglu(g, u, b.rows * I);
      matmul(g, b.rows, I, &w_[L.wd], H, xn);
      for (std::size_t i = 0; i < rows * static_cast<std::size_t>(H); ++i) x[i] += xn[i];
    }

    // Only the rows that sample need the lm_head: a prompt of 200 tokens computes one row of
    // logits, not 200 (vLLM does the same with its logits indices).
    for (int i = 0; i < b.logit_count; ++i)
      rms_norm(row(x, b.logit_rows[i], H), &w_[final_norm_], H, c_.rms_eps, row(last, i, H));
    matmul(last, b.logit_count, H, &w_[lm_head_], c_.vocab, logits);
    return logits;
  }

 private:
  struct Layer {
    std::size_t attn_norm, wq, wk, wv, wo, mlp_norm, wg, wu, wd;
  };

  /// The forward pass's tensors, in the order `activations` takes them.
  struct Activations {
    float *x, *xn, *q, *k, *v, *att, *g, *u, *scores, *last, *logits;
  };

  /// Every activation of the pass, sized before any is taken, so that a workspace can serve
  /// them from one block (each rounded by `tensor_floats`, keeping every tensor 64-byte aligned).
  template <class Workspace>
  Activations activations(const BatchView& b, Workspace& ws) const {
    const auto Hs = static_cast<std::size_t>(c_.hidden), Qs = static_cast<std::size_t>(c_.q_dim()),
               KVs = static_cast<std::size_t>(c_.kv_dim()), Is = static_cast<std::size_t>(c_.intermediate);
    const auto rows = static_cast<std::size_t>(b.rows);
    const auto n = static_cast<std::size_t>(b.logit_count);
    int max_ctx = 1;
    for (int r = 0; r < b.rows; ++r) max_ctx = std::max(max_ctx, b.positions[r] + 1);
    const std::size_t sizes[] = {rows * Hs, rows * Hs, rows * Qs, rows * KVs, rows * KVs, rows * Qs, rows * Is, rows * Is,
                                 static_cast<std::size_t>(max_ctx), std::max<std::size_t>(n, 1) * Hs,
                                 std::max<std::size_t>(n, 1) * static_cast<std::size_t>(c_.vocab)};
    std::size_t total = 0;
    for (const std::size_t s : sizes) total += tensor_floats(s);
    ws.reserve(total);
    Activations a{};
    float** const order[] = {&a.x, &a.xn, &a.q, &a.k, &a.v, &a.att, &a.g, &a.u, &a.scores, &a.last, &a.logits};
    for (std::size_t i = 0; i < std::size(sizes); ++i) *order[i] = ws.floats(sizes[i]);
    return a;
  }

  /// RoPE's angles, once: (cos, sin) of position * theta^(-2i/d), computed in double.
  static std::vector<float> rope_table(const ModelConfig& c) {
    const int half = c.head_dim / 2;
    std::vector<float> rope(static_cast<std::size_t>(c.max_positions) * static_cast<std::size_t>(half) * 2);
    for (int p = 0; p < c.max_positions; ++p)
      for (int i = 0; i < half; ++i) {
        const double angle = p * std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.head_dim);
        const std::size_t at = (static_cast<std::size_t>(p) * static_cast<std::size_t>(half) + static_cast<std::size_t>(i)) * 2;
        rope[at] = static_cast<float>(std::cos(angle));
        rope[at + 1] = static_cast<float>(std::sin(angle));
      }
    return rope;
  }

  static float* row(float* base, int r, int width) noexcept {
    return base + static_cast<std::size_t>(r) * static_cast<std::size_t>(width);
  }

  /// Grouped-query attention of one row over positions 0..position of its sequence. Two ways to
  /// find position j's K (its V follows at v_offset): through the sequence's block table
  /// (PagedAttention's indirection), or, for a sequence without one, in the contiguous layout, at
  /// its base plus j times the token stride (vAttention's: the plain engine's vectors and the
  /// `virtual` manager's slices). The arithmetic is the same either way.
  void attend(const BatchView& b, int l, int r, const float* q, float* scores, float* out) const noexcept {
    const SeqKV& s = b.seqs[b.seq_of_row[r]];
    if (s.table) {
      const int bt = b.layout.block_tokens;
      attend_over([&](int j) { return s.base + b.layout.key(l, slot_of(s.table, j, bt)); }, b, r, q, scores, out);
    } else {
      const float* first = s.base + b.layout.key(l, 0);
      const std::size_t stride = b.layout.token_stride;
      attend_over([=](int j) { return first + static_cast<std::size_t>(j) * stride; }, b, r, q, scores, out);
    }
  }

  /// Attention of row `r`, position j's K of layer l at key_at(j). Scores, the softmax and the
  /// weighted sum of V all run in position order, whatever the batch.
  template <class KeyAt>
  void attend_over(KeyAt key_at, const BatchView& b, int r, const float* q, float* scores, float* out) const noexcept {
    const int d = c_.head_dim, group = c_.heads / c_.kv_heads, ctx = b.positions[r] + 1;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int h = 0; h < c_.heads; ++h) {
      const int kvh = h / group;
      const float* qh = q + h * d;
      float m = -INFINITY;
      for (int j = 0; j < ctx; ++j) {
        scores[j] = head_dot(qh, key_at(j) + kvh * d, d) * scale;
        m = std::max(m, scores[j]);
      }
      float sum = 0.0f;
      for (int j = 0; j < ctx; ++j) {
        scores[j] = std::exp(scores[j] - m);
        sum += scores[j];
      }
      float* o = out + h * d;
      std::fill_n(o, d, 0.0f);
      for (int j = 0; j < ctx; ++j) {
        const float* vj = key_at(j) + b.layout.v_offset + kvh * d;
        const float p = scores[j];
        for (int i = 0; i < d; ++i) o[i] += p * vj[i];
      }
      const float inv = 1.0f / sum;
      for (int i = 0; i < d; ++i) o[i] *= inv;
    }
  }

  ModelConfig c_;
  aligned_vector<float> w_;      // every weight, 64-byte aligned
  std::vector<float> rope_;
  std::size_t embed_ = 0, final_norm_ = 0, lm_head_ = 0;
  std::vector<Layer> layers_;
};

}  // namespace alloclab::engine
