// Helpers shared by the stages of exercise 03. The stages are compiled two to a translation
// unit, so whatever more than one file needs lives here, once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "block_pool_under_test.hpp"

namespace alloclab::test {

/// The bytes of a recognisable token: every byte depends on who wrote it (`tag`), its
/// position and its index, so a token copied to the wrong place, or not copied, shows.
inline std::vector<unsigned char> make_token(int tag, int pos, std::size_t bytes) {
  std::vector<unsigned char> t(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    t[i] = static_cast<unsigned char>(tag * 131 + pos * 17 + static_cast<int>(i) * 7 + 1);
  return t;
}

/// True when the `t.size()` bytes at `p` equal `t`; false for nullptr.
inline bool same_bytes(const void* p, const std::vector<unsigned char>& t) {
  return p != nullptr && std::memcmp(p, t.data(), t.size()) == 0;
}

/// "{0, 1, 2}", for failure messages.
inline std::string show(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

inline std::string show(const std::optional<std::vector<int>>& v) {
  return v ? show(*v) : std::string("std::nullopt");
}

/// `allocate(n)` on a new pool, which must hand out blocks 0, 1, …, n-1. The tests of stages 2
/// to 4 build on that order; when it does not hold they say so here, instead of failing later
/// in a way that blames the member they test.
inline ::testing::AssertionResult takes_the_first_blocks(block_pool::BlockPool& pool, int n) {
  std::vector<int> want;
  for (int b = 0; b < n; ++b) want.push_back(b);
  const auto got = pool.allocate(n);
  if (got && *got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "allocate(" << n << ") on a new pool returned " << show(got) << ", not " << show(want)
         << ": this test builds on stage 1, where a new pool hands out its blocks in ascending order. Make "
            "stage 1 pass first.";
}

/// What a caller can see of a pool, as text: "refcounts {1, 2, 0, 0}, 2 free". Two pools
/// built and used the same way describe alike.
inline std::string describe(const block_pool::BlockPool& pool) {
  std::vector<int> counts;
  for (int b = 0; b < pool.num_blocks(); ++b) counts.push_back(pool.refcount(b));
  return "refcounts " + show(counts) + ", " + std::to_string(pool.num_free()) + " free";
}

/// What a caller can see of a cache, as text: for each sequence of `ids` its length, block
/// table and a checksum of its stored tokens, then the pool.
inline std::string describe(const block_pool::PagedKVCache& cache, const std::vector<int>& ids,
                            std::size_t token_bytes) {
  std::string s;
  for (int id : ids) {
    std::uint64_t sum = 1469598103934665603u;  // FNV-1a over every stored byte
    for (int pos = 0; pos < cache.length(id); ++pos) {
      const auto* bytes = static_cast<const unsigned char*>(cache.token(id, pos));
      for (std::size_t i = 0; bytes != nullptr && i < token_bytes; ++i) sum = (sum ^ bytes[i]) * 1099511628211u;
    }
    s += "sequence " + std::to_string(id) + ": length " + std::to_string(cache.length(id)) + ", blocks " +
         show(cache.block_table(id)) + ", tokens #" + std::to_string(sum % 100000) + "; ";
  }
  return s + describe(cache.pool());
}

}  // namespace alloclab::test
