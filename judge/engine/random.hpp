// Counter-based random numbers: a value is a pure function of its coordinates.
#pragma once

#include <cstdint>

namespace alloclab::engine {

/// SplitMix64's finaliser: a bijection of 64-bit words that mixes every input bit into every
/// output bit. Used as a hash, it gives random numbers addressed by coordinates rather than
/// drawn from a stream, so nothing depends on the order in which they are asked for.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

[[nodiscard]] constexpr std::uint64_t hash3(std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

/// A float in [0, 1) from the top 24 bits: every value is exact in a float.
[[nodiscard]] constexpr float unit_float(std::uint64_t bits) noexcept {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

/// A stream for the trace generator, where order does not matter for batch invariance.
class SplitMix {
 public:
  explicit constexpr SplitMix(std::uint64_t seed) noexcept : state_(seed) {}
  constexpr std::uint64_t next() noexcept { return mix64(state_++); }
  /// Uniform in [lo, hi].
  constexpr int range(int lo, int hi) noexcept {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  constexpr float unit() noexcept { return unit_float(next()); }

 private:
  std::uint64_t state_;
};

}  // namespace alloclab::engine
