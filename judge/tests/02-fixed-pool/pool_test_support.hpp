// Helpers shared by the stages of exercise 02.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "alloclab_test.hpp"

namespace alloclab::test::pool {

/// Every block starts on a multiple of this.
constexpr std::size_t kAlign = alignof(std::max_align_t);

/// The stride the contract asks for: `n` raised to at least a pointer, rounded up to kAlign.
constexpr std::size_t expected_stride(std::size_t n) {
  const std::size_t at_least = n < sizeof(void*) ? sizeof(void*) : n;
  return (at_least + kAlign - 1) / kAlign * kAlign;
}

/// Fills n bytes at p with a byte derived from `seed`.
inline void fill(void* p, std::size_t n, std::uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(seed * 31 + i);
}

/// True when the n bytes at p still hold what fill(p, n, seed) wrote.
inline bool holds(const void* p, std::size_t n, std::uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[i] != static_cast<unsigned char>(seed * 31 + i)) return false;
  return true;
}

/// Sets n bytes at p to zero (a plain loop: g++ warns about std::memset on a pointer it can
/// prove null in the skeleton, even after the test has returned on nullptr).
inline void zero(void* p, std::size_t n) {
  auto* bytes = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = 0;
}

/// Makes AddressSanitizer report every access to the n bytes at p, and undoes it (nothing in a
/// build without it).
inline void poison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) {
#ifdef ALLOCLAB_TEST_ASAN
  __asan_poison_memory_region(p, n);
#endif
}
inline void unpoison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) {
#ifdef ALLOCLAB_TEST_ASAN
  __asan_unpoison_memory_region(p, n);
#endif
}

/// True when no two of the pointers are equal.
inline bool all_distinct(std::vector<void*> blocks) {
  std::sort(blocks.begin(), blocks.end(), [](void* a, void* b) { return address(a) < address(b); });
  return std::adjacent_find(blocks.begin(), blocks.end()) == blocks.end();
}

/// The smallest distance between two of the blocks' addresses (SIZE_MAX for fewer than two).
inline std::size_t smallest_gap(std::vector<void*> blocks) {
  std::sort(blocks.begin(), blocks.end(), [](void* a, void* b) { return address(a) < address(b); });
  std::size_t gap = SIZE_MAX;
  for (std::size_t i = 1; i < blocks.size(); ++i)
    gap = std::min<std::size_t>(gap, address(blocks[i]) - address(blocks[i - 1]));
  return gap;
}

}  // namespace alloclab::test::pool
