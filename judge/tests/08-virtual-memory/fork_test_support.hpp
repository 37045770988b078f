// Helpers of exercise 08's stages 4 to 6, on top of vm_test_support.hpp: a cache whose slices are
// four granules of four tokens each, the slot numbering of the contract, and where a pattern
// written with fill() first breaks, for messages that name the byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vm_test_support.hpp"

namespace alloclab::test::vm {

/// The caches of these tests hold four tokens per granule of one page, 16 tokens in four granules per slice.
constexpr std::size_t kTokensPerGranule = 4;
constexpr std::size_t kMaxTokens = 16;
constexpr std::size_t kSliceGranules = kMaxTokens / kTokensPerGranule;
inline std::size_t token_bytes() { return page_bytes() / kTokensPerGranule; }

/// The slot of the reservation that holds granule `i` of `slice`, as the contract numbers them.
constexpr std::size_t slot(std::size_t slice, std::size_t i) { return slice * kSliceGranules + i; }

/// The index of the first of the n bytes at p that does not hold fill()'s pattern of `seed`, or n.
inline std::size_t first_changed(const std::byte* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i)
    if (read_byte(p + i) != pattern_byte(seed, i)) return i;
  return n;
}

/// The index of the first of the n bytes at p that is not zero, or n.
inline std::size_t first_nonzero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (read_byte(p + i) != std::byte{0}) return i;
  return n;
}

/// "byte 5 of granule 1" for byte `at` of a run of granules of one page.
inline std::string where(std::size_t at) {
  return "byte " + std::to_string(at % page_bytes()) + " of granule " + std::to_string(at / page_bytes());
}

}  // namespace alloclab::test::vm
