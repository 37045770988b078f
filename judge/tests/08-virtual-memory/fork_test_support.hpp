// Helpers of exercise 08's stages 4 to 6: a cache whose slices are four granules of four tokens
// each, the slot numbering of the contract, and byte patterns to write and check through raw
// addresses.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "alloclab_test.hpp"

namespace alloclab::test::vm {

/// One page: the smallest granule, so that a test commits and copies as little as possible.
inline std::size_t granule_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

/// The caches of these tests hold four tokens per granule and 16 tokens, four granules, per slice.
constexpr std::size_t kTokensPerGranule = 4;
constexpr std::size_t kMaxTokens = 16;
constexpr std::size_t kSliceGranules = kMaxTokens / kTokensPerGranule;
inline std::size_t token_bytes() { return granule_bytes() / kTokensPerGranule; }

/// The slot of the reservation that holds granule `i` of `slice`, as the contract numbers them.
constexpr std::size_t slot(std::size_t slice, std::size_t i) { return slice * kSliceGranules + i; }

/// The byte that fill() writes at index i of bytes tagged `seed`.
inline unsigned char pattern_byte(std::uint64_t seed, std::size_t i) {
  return static_cast<unsigned char>((seed * 0x9E3779B1u + i * 7 + (i >> 9)) ^ (seed >> 3));
}

/// Writes the pattern of `seed` into the n bytes at p.
inline void fill(void* p, std::size_t n, std::uint64_t seed) {
  auto* bytes = static_cast<volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = pattern_byte(seed, i);
}

/// The index of the first of the n bytes at p that does not hold fill()'s pattern of `seed`, or n.
inline std::size_t first_changed(const void* p, std::size_t n, std::uint64_t seed) {
  const auto* bytes = static_cast<const volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != pattern_byte(seed, i)) return i;
  return n;
}

/// The index of the first of the n bytes at p that is not zero, or n.
inline std::size_t first_nonzero(const void* p, std::size_t n) {
  const auto* bytes = static_cast<const volatile unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != 0) return i;
  return n;
}

/// "byte 5 of granule 1" for byte `at` of a run of granules.
inline std::string where(std::size_t at) {
  return "byte " + std::to_string(at % granule_bytes()) + " of granule " + std::to_string(at / granule_bytes());
}

}  // namespace alloclab::test::vm
