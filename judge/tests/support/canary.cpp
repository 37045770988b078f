// Compiled last into every test binary, after the header under test: if that header has
// disabled or rewritten the assertion macros, these checks no longer see a failure, and the
// judge refuses the verdict.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <stdexcept>

TEST(AllocLabCanary, AssertionsStillFail) {
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(1, 2), "Expected equality");
  EXPECT_NONFATAL_FAILURE(EXPECT_NE(1, 1), "Expected: (1) != (1)");
  EXPECT_NONFATAL_FAILURE(EXPECT_TRUE(false), "false");
  EXPECT_NONFATAL_FAILURE(EXPECT_FALSE(true), "true");
  EXPECT_NONFATAL_FAILURE(EXPECT_LT(2, 1), "Expected: (2) < (1)");
  EXPECT_NONFATAL_FAILURE(EXPECT_THROW((void)0, std::logic_error), "throws an exception");
  EXPECT_NONFATAL_FAILURE(EXPECT_NO_THROW(throw std::logic_error("x")), "it throws");
  EXPECT_NONFATAL_FAILURE(ADD_FAILURE() << "canary", "canary");
  EXPECT_FATAL_FAILURE(ASSERT_EQ(1, 2), "Expected equality");
  EXPECT_FATAL_FAILURE(ASSERT_TRUE(false), "false");
  EXPECT_FATAL_FAILURE(ASSERT_NE(nullptr, nullptr), "Expected: (nullptr) != (nullptr)");
}
