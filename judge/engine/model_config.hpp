// The shape of the decoder: a Llama-shaped transformer, small enough for a CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace alloclab::engine {

/// Sizes of the model. Every matrix's input width (hidden, heads * head_dim, intermediate)
/// must be a multiple of 32, and head_dim a multiple of 16: the kernels step 32 and 16 floats
/// at a time and have no tail loop, so that every row is summed in one fixed order.
struct ModelConfig {
  const char* name;
  int layers;
  int hidden;        // width of the residual stream
  int heads;         // query heads
  int kv_heads;      // key/value heads: grouped-query attention shares each among heads / kv_heads queries
  int head_dim;
  int intermediate;  // width of the SwiGLU feed-forward layer
  int vocab;
  int max_positions;  // the longest sequence RoPE's table covers
  float rope_theta;
  float rms_eps;
  std::uint64_t seed;  // the weights are drawn from this seed: random, not trained

  [[nodiscard]] int q_dim() const noexcept { return heads * head_dim; }
  [[nodiscard]] int kv_dim() const noexcept { return kv_heads * head_dim; }

  /// Parameters of one layer: two norms, the four attention projections, the three of SwiGLU.
  [[nodiscard]] std::size_t layer_params() const noexcept {
    const auto h = static_cast<std::size_t>(hidden);
    return 2 * h + h * static_cast<std::size_t>(q_dim()) * 2 + h * static_cast<std::size_t>(kv_dim()) * 2 +
           3 * h * static_cast<std::size_t>(intermediate);
  }
  [[nodiscard]] std::size_t params() const noexcept {
    const auto h = static_cast<std::size_t>(hidden);
    // embedding, layers, final norm, lm_head (not tied to the embedding, as in Llama 2)
    return 2 * static_cast<std::size_t>(vocab) * h + static_cast<std::size_t>(layers) * layer_params() + h;
  }
  [[nodiscard]] std::size_t weight_bytes() const noexcept { return params() * sizeof(float); }
  /// Bytes of K and V for one token across every layer.
  [[nodiscard]] std::size_t kv_bytes_per_token() const noexcept {
    return 2 * static_cast<std::size_t>(layers) * static_cast<std::size_t>(kv_dim()) * sizeof(float);
  }
};

/// The default model of `alloclab_serve`. Llama 2's vocabulary (32000) and a narrow, shallow
/// body: the lm_head (65.5 MB) is read at every decode step but computed only for the rows
/// that sample, as real engines do, so a decode step streams 90 MB of weights (the body's two
/// layers are 24 MB) while a prompt token costs only the body's 12 MFLOP. On the machine the
/// kit was tuned on, a decode step at batch 1 takes about as long as reading 90 MB at the
/// memory bandwidth one core measures (2.4-2.8 ms at 28-31 GB/s), and batch 2 costs barely
/// more: decode is bound by memory, prefill by arithmetic, as on a GPU.
inline constexpr ModelConfig kDefaultModel{"default", 2, 512, 8, 2, 64, 1536, 32000, 1024, 10000.0f, 1e-5f,
                                           0x5EED'0001ull};

/// The tests' model: the same code paths, a few thousand times less arithmetic.
inline constexpr ModelConfig kTinyModel{"tiny", 2, 64, 4, 2, 16, 128, 256, 512, 10000.0f, 1e-5f, 0x5EED'0002ull};

[[nodiscard]] inline const ModelConfig* model_by_name(std::string_view name) noexcept {
  if (name == "default") return &kDefaultModel;
  if (name == "tiny") return &kTinyModel;
  return nullptr;
}

}  // namespace alloclab::engine
