// Your own tests of exercise 01's contract (chapters/01-arena.md), judged with
//   python3 judge/judge.py examine 1
// against the kit's correct implementations of the contract, which differ wherever it leaves a
// choice (valid: every test passes on each of them), and against its known mistakes (thorough:
// how many of them your valid tests reject). They never run against your header, so you may
// write them before it: tests first. Assert what the contract promises, and nothing it leaves
// free. GoogleTest is here, RapidCheck too (<rapidcheck/gtest.h>); the judge links the main.
#include "arena.hpp"

#include <gtest/gtest.h>

#include <cstdint>

// One example: used() counts every byte handed out, so two requests of 100 and 28 bytes at
// alignment 1 leave it at 128.
TEST(MyArena, UsedCountsEveryByteHandedOut) {
  alloclab::Arena arena(4096);
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  ASSERT_NE(arena.allocate(28, 1), nullptr);
  EXPECT_EQ(arena.used(), 128u) << "used() is the end of the last allocation";
}
