// Stage 5: sleep gives every granule back and keeps every address; wake maps them again.
#include "vm_under_test.hpp"

#include "alloclab_test.hpp"
#include "vm_test_support.hpp"

namespace stage5_sleep {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::fill;
using alloclab::test::vm::holds;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;

TEST(VmSleep, WakeRestoresAKeptSequenceAtItsAddress) {
  const std::size_t g = page_bytes(), tok = g / 4;
  PhysicalMemory memory(g, 4);
  ContiguousKVCache cache(memory, 2, 12, tok);
  ASSERT_TRUE(cache.admit(1, 5)) << "admit(1, 5) must succeed.";
  std::byte* const at = cache.data(1);
  ASSERT_NE(at, nullptr) << "data(1) must be the slice's first byte.";
  fill(at, 5 * tok, 12);
  const int keep[] = {1};
  cache.sleep(keep);
  EXPECT_TRUE(cache.asleep()) << "asleep() is true after sleep().";
  EXPECT_EQ(memory.num_in_use(), 0u) << "sleep() gives every granule back.";
  ASSERT_TRUE(cache.wake()) << "wake() with the memory free must succeed.";
  EXPECT_EQ(cache.data(1), at) << "wake() maps at the same slots: every pointer into the cache stays valid.";
  ASSERT_TRUE(cache.range().mapped(0) && cache.range().mapped(1)) << "wake() maps the kept sequence's granules.";
  EXPECT_TRUE(holds(at, 5 * tok, 12)) << "A kept sequence's bytes are copied back at wake().";
}

}  // namespace stage5_sleep
