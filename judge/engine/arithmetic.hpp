// The engine's small arithmetic, named once: rounding, the 16-float tensor alignment and the
// slot formula of a paged KV cache.
#pragma once

#include <cstddef>

namespace alloclab::engine {

/// `n` / `d`, rounded up (`n` >= 0, `d` > 0): the blocks that hold `n` tokens.
template <class T>
[[nodiscard]] constexpr T ceil_div(T n, T d) noexcept {
  return (n + d - 1) / d;
}

/// `n` rounded up to a multiple of `m` (`m` > 0).
template <class T>
[[nodiscard]] constexpr T round_up(T n, T m) noexcept {
  return ceil_div(n, m) * m;
}

/// Floats per 64-byte cache line. Every tensor the model lays out, weights and activations, is
/// rounded up to it, so that each starts on a line. The forward pass sizes its workspace with
/// `tensor_floats` and the served engine's workspace carves with it: both must use this one
/// rounding, or the carving runs past what was reserved and throws.
inline constexpr std::size_t kLineFloats = 16;

[[nodiscard]] constexpr std::size_t tensor_floats(std::size_t n) noexcept { return round_up(n, kLineFloats); }

/// Where token `position` of a sequence lives in a paged KV buffer, counted in token slots,
/// read through its block table: PagedAttention's indirection. The manager answers it, the
/// engine writes K and V there, attention reads them back: all three must agree.
[[nodiscard]] constexpr int slot_of(const int* table, int position, int block_tokens) noexcept {
  return table[position / block_tokens] * block_tokens + position % block_tokens;
}

}  // namespace alloclab::engine
