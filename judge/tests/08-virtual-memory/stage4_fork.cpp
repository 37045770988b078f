// Stage 4: forks share their parent's full granules and copy the partly filled one.
#include "vm_under_test.hpp"

#include "alloclab_test.hpp"
#include "vm_test_support.hpp"

namespace stage4_fork {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::fill;
using alloclab::test::vm::holds;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;

TEST(VmFork, AChildAliasesTheFullGranulesAndCopiesThePartlyFilledOne) {
  const std::size_t g = page_bytes(), tok = g / 4;
  PhysicalMemory memory(g, 8);
  ContiguousKVCache cache(memory, 2, 12, tok);
  ASSERT_TRUE(cache.admit(1, 6)) << "admit(1, 6) must succeed.";
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  fill(cache.data(1), 6 * tok, 3);
  ASSERT_TRUE(cache.fork(1, 2)) << "fork(1, 2) with a free slice and a free granule must succeed.";
  const auto parent_full = cache.range().mapped(0), child_full = cache.range().mapped(cache.slice_granules());
  ASSERT_TRUE(parent_full && child_full) << "Both slices must map their first slot.";
  EXPECT_EQ(*child_full, *parent_full)
      << "The child maps the parent's full granule itself (an alias): a full granule is never written again.";
  EXPECT_EQ(memory.refcount(*parent_full), 2u) << "An aliased granule holds one reference per mapping.";
  EXPECT_NE(cache.range().mapped(1), cache.range().mapped(cache.slice_granules() + 1))
      << "The partly filled granule is copied into one of the child's own: both sequences will write into it.";
  EXPECT_TRUE(holds(cache.data(2), 6 * tok, 3)) << "The child reads the parent's six tokens.";
}

}  // namespace stage4_fork
