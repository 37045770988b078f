// Helpers shared by the stages of exercise 07. The stages are compiled two to a translation
// unit, so whatever more than one file needs lives here, once.
#pragma once

#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "failing_new.hpp"
#include "manager_under_test.hpp"

namespace alloclab::test {

/// n distinct tokens: first, first + 1, ...
inline std::vector<int> tokens(int n, int first = 0) {
  std::vector<int> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), first);
  return out;
}

/// "{0, 1, 2}", for failure messages.
inline std::string show(std::span<const int> v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

/// What a caller can see of a manager, as text: each request of `ids` (its tokens and block
/// table, or "unknown"), the free and cached counts, the stats and every block's reference
/// count. Two managers used the same way describe alike.
inline std::string describe(const kv::KVCacheManager& m, const std::vector<int>& ids) {
  std::string s;
  for (const int id : ids) {
    s += "request " + std::to_string(id) + ": ";
    try {
      s += std::to_string(m.num_tokens(id)) + " tokens, blocks " + show(m.block_table(id)) + "; ";
    } catch (const std::invalid_argument&) {
      s += "unknown; ";
    }
  }
  const auto st = m.stats();
  std::vector<int> counts;
  for (int b = 0; b < m.pool().num_blocks(); ++b) counts.push_back(m.pool().refcount(b));
  return s + std::to_string(m.num_free_blocks()) + " free, " + std::to_string(m.num_cached_blocks()) +
         " cached, stats {queried " + std::to_string(st.queried_tokens) + ", hit " + std::to_string(st.hit_tokens) +
         ", evictions " + std::to_string(st.evictions) + ", copies " + std::to_string(st.copies) +
         "}, refcounts " + show(counts) + ", " + std::to_string(m.pool().num_free()) + " idle";
}

/// Releases every request of `ids` still known, then admits one-token prompts no cache holds
/// until none fits, and returns the blocks they got, in order: the pool's idle blocks, then
/// the cached blocks in the order of eviction. Two managers in the same state drain alike.
inline std::vector<int> drain(kv::KVCacheManager& m, const std::vector<int>& ids) {
  for (const int id : ids) {
    try {
      m.release(id);
    } catch (const std::invalid_argument&) {
    }
  }
  std::vector<int> order;
  for (int id = 100000;; ++id) {
    const std::vector<int> one{-id};
    const auto got = m.admit(id, one);
    if (!got || m.block_table(id).size() != 1) break;
    order.push_back(m.block_table(id)[0]);
    if (order.size() > 1000) break;
  }
  return order;
}

/// Makes each heap allocation inside `call` fail in turn, on a fresh world from `make` and
/// its twin (built the same way, which sees no failure), and checks that a call that throws
/// std::bad_alloc leaves the manager exactly as its twin: the same requests, counts, stats and
/// references, and the same blocks handed out afterwards. `after` checks the call that got
/// through. Returns how many allocations were refused.
template <class World, class Make, class Call, class After>
int changes_nothing_when_the_heap_fails(const std::string& what, Make make, Call call, After after) {
  if (!failing_new_works()) {
    ADD_FAILURE() << "This test binary cannot make operator new fail, so the test would prove nothing.";
    return 0;
  }
  return for_each_failing_allocation([&](long n) {
    World world = make();
    World twin = make();
    if (!world.ok) {
      ADD_FAILURE() << "Setting up for " << what << " failed: " << world.why;
      return false;
    }
    const auto outcome = call_with_failing_new(n, [&] { call(world); });
    if (outcome.fired && outcome.threw) {
      EXPECT_EQ(describe(world.m, world.ids), describe(twin.m, twin.ids))
          << what << " threw std::bad_alloc when heap allocation " << n << " inside it failed; a call that "
          << "throws must change nothing. Do everything that allocates (a copy of the prompt, a reserve, a map or "
          << "cache entry) first, and take blocks, references and evictions last: those steps cannot be undone "
          << "once a later one throws.";
      EXPECT_EQ(drain(world.m, world.ids), drain(twin.m, twin.ids))
          << "After " << what << " threw std::bad_alloc at heap allocation " << n
          << ", the idle and the cached blocks must come out in their old order.";
      if (::testing::Test::HasFailure()) return false;  // one failing allocation says enough
    } else if (!outcome.fired) {
      after(world);
    }
    return outcome.fired;
  });
}

}  // namespace alloclab::test
