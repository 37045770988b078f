// Stage 7: the cache against the model of its contract.
#include "vm_under_test.hpp"

#include "alloclab_test.hpp"
#include "vm_test_support.hpp"

namespace stage7_model {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::fill;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;

TEST(VmModel, CommittedBytesAreThePagesTheHeldSequencesTouched) {
  const std::size_t g = page_bytes(), tok = g / 4;
  PhysicalMemory memory(g, 8);
  ContiguousKVCache cache(memory, 3, 12, tok);
  ASSERT_TRUE(cache.admit(1, 12) && cache.admit(2, 4)) << "admit() with free memory must succeed.";
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  fill(cache.data(1), 12 * tok, 1);
  fill(cache.data(2), 4 * tok, 2);
  cache.release(1);
  EXPECT_EQ(cache.trim(), 3u) << "trim() gives back the idle slice's 3 granules.";
  EXPECT_EQ(memory.committed_bytes(), g) << "Only the held sequence's granule stays committed.";
}

}  // namespace stage7_model
