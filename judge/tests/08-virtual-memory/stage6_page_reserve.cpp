// Stage 6: pages mapped ahead by a background thread.
#include "vm_under_test.hpp"

#include "alloclab_test.hpp"
#include "vm_test_support.hpp"

namespace stage6_page_reserve {

using alloclab::test::vm::PageReserve;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;

TEST(VmPageReserve, TheThreadFillsTheReserveToHigh) {
  PhysicalMemory memory(page_bytes(), 8);
  PageReserve reserve(memory, 8, 2, 4);
  reserve.settle();
  EXPECT_EQ(reserve.ready(), 4u) << "Once settled, a new reserve has `high` pages mapped and ready.";
  const auto page = reserve.acquire();
  ASSERT_TRUE(page.has_value()) << "acquire() with ready pages must return one.";
  ASSERT_NE(reserve.address(*page), nullptr) << "address(page) must be the page's first byte.";
  reserve.address(*page)[0] = std::byte{1};
  EXPECT_EQ(reserve.slow_maps(), 0u) << "A ready page costs acquire() no map of its own.";
  reserve.give_back(*page);
}

}  // namespace stage6_page_reserve
