// Your own tests of exercise 08's contract (chapters/08-virtual-memory.md), judged with
//   python3 judge/judge.py examine 8
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "virtual_memory.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

// One example: a new granule has one reference, and the memory counts it in use.
TEST(MyPhysicalMemory, ANewGranuleHasOneReference) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  alloclab::PhysicalMemory memory(page, 4);
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(memory.refcount(*g), 1u);
  EXPECT_EQ(memory.num_in_use(), 1u);
}
