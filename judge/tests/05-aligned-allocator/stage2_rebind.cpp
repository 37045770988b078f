// Stage 2 — rebinding containers: the allocator turned into an allocator of nodes, of control
// blocks and of over-aligned types; equality and traits; the overflow of n * sizeof(T).
#include "aligned_allocator.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "aligned_test_support.hpp"

namespace stage2_rebind {

using alloclab::AlignedAllocator;
using alloclab::test::address;
using alloclab::test::HeapCall;
using alloclab::test::HeapLog;
using alloclab::test::aligned::hands_out_memory;

// A type whose own alignment is larger than the allocator's Align.
struct alignas(128) Wide {
  std::uint64_t words[4];
};

// 24 bytes: SIZE_MAX / 24 + 1 of them wrap around to a few bytes when multiplied.
struct Triple {
  std::uint64_t a, b, c;
};

// Every block in the log was asked for with `alignment`, and starts on a multiple of it.
void expect_every_new_aligned(const HeapLog& log, std::size_t alignment, const char* container) {
  EXPECT_GT(log.news(), 0u) << container << " allocated nothing through the global operator new.";
  for (const HeapCall& c : log) {
    if (!c.is_new) continue;
    ASSERT_EQ(c.alignment, alignment)
        << container << " allocated a block of " << c.size << " bytes with "
        << (c.alignment == 0 ? std::string("no alignment") : "alignment " + std::to_string(c.alignment))
        << " instead of " << alignment << ". The container allocates nodes, not elements: it rebinds your "
        << "allocator to its node type, and the rebound allocator must keep the same Align (a node of a "
        << "cache-aligned container belongs on a cache line too).";
    ASSERT_EQ(address(c.p) % alignment, 0u) << container << " got a block at " << c.p << ", not a multiple of "
                                            << alignment << ".";
  }
}

// What a container's node looks like to the allocator: two links and an element.
struct ProbeNode {
  ProbeNode* links[2];
  int value;
};

// The allocator of U that std::allocator_traits makes of A: a container of U's nodes uses it.
template <class A, class U>
using Rebound = typename std::allocator_traits<A>::template rebind_alloc<U>;

template <class A, class U>
concept RebindsTo = requires { typename Rebound<A, U>; };

// Whether a container can turn A into an allocator of its nodes: the traits can name the
// rebound allocator, and it can be built from A. Without both, a std::list of A does not
// compile; the tests below then fail with this message instead of stopping the build.
template <class A>
constexpr bool kContainersCanRebind = [] {
  if constexpr (RebindsTo<A, ProbeNode>) {
    return std::is_constructible_v<Rebound<A, ProbeNode>, const A&>;
  } else {
    return false;
  }
}();

template <class A>
::testing::AssertionResult containers_can_rebind(const char* name) {
  if constexpr (kContainersCanRebind<A>) {
    return ::testing::AssertionSuccess();
  } else if constexpr (!RebindsTo<A, ProbeNode>) {
    return ::testing::AssertionFailure()
           << "std::allocator_traits<" << name << ">::rebind_alloc<Node> names no type, so no container of "
           << "nodes (list, map, unordered_map, allocate_shared) can use the allocator. The traits rebind by "
           << "themselves only a template whose arguments are all types; Align is a std::size_t, so "
           << "AlignedAllocator must say it: a member template rebind<U>, for every U and not only T, whose "
           << "`other` is the allocator of U, with which Align?";
  } else {
    return ::testing::AssertionFailure()
           << name << " rebinds to a node type, but the node allocator cannot be constructed from "
           << name << ": a container builds the allocator of its nodes from the allocator you give it, "
           << "through a converting constructor template AlignedAllocator(const AlignedAllocator<U, Align>&).";
  }
}

template <class A>
void expect_list_nodes_aligned() {
  if constexpr (kContainersCanRebind<A>) {
    HeapLog log;
    {
      std::list<int, A> list;
      for (int i = 0; i < 50; ++i) list.push_back(i);
      int expected = 0;
      for (int x : list) EXPECT_EQ(x, expected++) << "the list lost an element";
    }
    log.close();
    expect_every_new_aligned(log, 128, "std::list<int, AlignedAllocator<int, 128>>");
    EXPECT_EQ(log.news(), log.deletes()) << "every node the list allocated must be freed when it is destroyed";
  }
}

TEST(AlignedRebind, ListNodesKeepTheAlignment) {
  using A = AlignedAllocator<int, 128>;
  ASSERT_TRUE((hands_out_memory<A>()));
  ASSERT_TRUE(containers_can_rebind<A>("AlignedAllocator<int, 128>"));
  expect_list_nodes_aligned<A>();
}

template <class A>
void expect_map_nodes_aligned() {
  if constexpr (kContainersCanRebind<A>) {
    HeapLog log;
    {
      std::map<int, int, std::less<int>, A> map;
      for (int i = 0; i < 40; ++i) map.emplace(i, i * i);
      EXPECT_EQ(map.at(7), 49) << "the map lost an entry";
    }
    log.close();
    expect_every_new_aligned(log, 256, "std::map<int, int, std::less<int>, AlignedAllocator<..., 256>>");
  }
}

TEST(AlignedRebind, MapNodesKeepTheAlignment) {
  using A = AlignedAllocator<std::pair<const int, int>, 256>;
  ASSERT_TRUE((hands_out_memory<A>()));
  ASSERT_TRUE(containers_can_rebind<A>("AlignedAllocator<std::pair<const int, int>, 256>"));
  expect_map_nodes_aligned<A>();
}

TEST(AlignedRebind, StringBufferIsAligned) {
  using String = std::basic_string<char, std::char_traits<char>, AlignedAllocator<char, 64>>;
  ASSERT_TRUE((hands_out_memory<AlignedAllocator<char, 64>>()));
  HeapLog log;
  {
    String s(100, 'x');
    EXPECT_EQ(address(s.data()) % 64, 0u) << "a 100-character string's buffer must start on a cache line";
    for (int i = 0; i < 20; ++i) s += "0123456789abcdef0123456789abcdef";
    EXPECT_EQ(s.size(), 740u) << "the string lost characters while it grew";
  }
  log.close();
  expect_every_new_aligned(log, 64, "std::basic_string<char, ..., AlignedAllocator<char, 64>>");
}

template <class WideAlloc, class IntAlloc>
void expect_shared_blocks_aligned() {
  if constexpr (kContainersCanRebind<WideAlloc> && kContainersCanRebind<IntAlloc>) {
    HeapLog log;
    std::shared_ptr<Wide> w = std::allocate_shared<Wide>(WideAlloc{});
    std::shared_ptr<int> i = std::allocate_shared<int>(IntAlloc{}, 42);
    log.close();
    ASSERT_EQ(log.news(), 2u) << "allocate_shared allocates one block (control block and object together) each time";
    ASSERT_TRUE(w && i);
    EXPECT_EQ(address(w.get()) % 128, 0u)
        << "allocate_shared<Wide> put an alignas(128) object at " << static_cast<void*>(w.get())
        << ", not a multiple of 128: the control block that holds it must be allocated with alignof(Wide) even "
           "though the allocator's Align is 64.";
    EXPECT_EQ(log.begin()[0].alignment, 128u)
        << "allocate_shared<Wide>(AlignedAllocator<Wide, 64>) must allocate its block with alignment 128, the "
           "larger of Align and the alignment of the rebound type.";
    EXPECT_EQ(log.begin()[1].alignment, 128u)
        << "allocate_shared<int>(AlignedAllocator<int, 128>) must allocate its block (a control block, not an "
           "int: the allocator is rebound) with alignment 128, not "
        << log.begin()[1].alignment << ".";
    EXPECT_EQ(*i, 42) << "allocate_shared must construct the object with its arguments";
  }
}

TEST(AlignedRebind, AllocateSharedUsesTheAlignment) {
  using WideAlloc = AlignedAllocator<Wide, 64>;
  using IntAlloc = AlignedAllocator<int, 128>;
  ASSERT_TRUE((hands_out_memory<WideAlloc>()));
  ASSERT_TRUE(containers_can_rebind<WideAlloc>("AlignedAllocator<Wide, 64>"));
  ASSERT_TRUE(containers_can_rebind<IntAlloc>("AlignedAllocator<int, 128>"));
  expect_shared_blocks_aligned<WideAlloc, IntAlloc>();
}

TEST(AlignedRebind, OverAlignedTypesGetTheirOwnAlignment) {
  AlignedAllocator<Wide, 64> alloc;
  std::vector<Wide*> blocks;
  blocks.reserve(24);  // so that the log sees the allocator's calls only
  HeapLog log;
  for (int k = 0; k < 24; ++k) blocks.push_back(alloc.allocate(3));
  for (Wide* p : blocks) alloc.deallocate(p, 3);
  log.close();
  for (Wide* p : blocks) {
    ASSERT_NE(p, nullptr) << "AlignedAllocator<Wide, 64>::allocate(3) returned nullptr.";
    ASSERT_EQ(address(p) % 128, 0u)
        << "AlignedAllocator<Wide, 64> returned " << static_cast<void*>(p) << " for an alignas(128) type: a "
        << "Wide stored there is misaligned. The alignment is the larger of Align and alignof(T).";
  }
  for (const HeapCall& c : log) {
    ASSERT_EQ(c.alignment, 128u) << "AlignedAllocator<Wide, 64> passed alignment " << c.alignment << " to operator "
                                 << (c.is_new ? "new" : "delete") << "; it must be max(64, alignof(Wide)) = 128, "
                                 << "the same in allocate and in deallocate.";
  }
}

template <class A>
void expect_converted_copies_equal(A& a) {
  if constexpr (kContainersCanRebind<A>) {
    Rebound<A, double> d(a);
    EXPECT_TRUE(a == d) << "AlignedAllocator<int, 64> == AlignedAllocator<double, 64> built from it must be "
                           "true: a container compares its allocator with rebound copies of it.";
    A back(d);
    EXPECT_TRUE(back == a) << "an allocator converted to another type and back must still compare equal";
  }
}

TEST(AlignedRebind, AllInstancesCompareEqual) {
  using A = AlignedAllocator<int, 64>;
  A a, b;
  AlignedAllocator<double, 64> d;
  EXPECT_TRUE(a == b) << "two AlignedAllocator<int, 64> must compare equal: either can free what the other "
                         "allocated, so containers may swap and move their buffers between them.";
  EXPECT_FALSE(a != b) << "a != b must be the negation of a == b.";
  EXPECT_TRUE(a == d) << "AlignedAllocator<int, 64> == AlignedAllocator<double, 64> must be true: a container "
                         "compares its allocator with rebound copies of it.";
  ASSERT_TRUE(containers_can_rebind<A>("AlignedAllocator<int, 64>"));
  expect_converted_copies_equal(a);
  int* p = a.allocate(4);
  ASSERT_NE(p, nullptr) << "allocate(4) returned nullptr.";
  b.deallocate(p, 4);  // legal because they are equal; AddressSanitizer checks the rest
}

template <class A>
void expect_rebind_keeps_align() {
  if constexpr (RebindsTo<A, long>) {
    EXPECT_TRUE((std::is_same_v<Rebound<A, long>, AlignedAllocator<long, 256>>))
        << "rebinding AlignedAllocator<int, 256> to long must give AlignedAllocator<long, 256>: the alignment "
           "travels with the allocator.";
  } else {
    ADD_FAILURE() << "std::allocator_traits<AlignedAllocator<int, 256>>::rebind_alloc<long> names no type: "
                     "AlignedAllocator needs a member template rebind<U> for every U, not only for T.";
  }
}

TEST(AlignedRebind, TraitsSayWhatTheAllocatorIs) {
  using A = AlignedAllocator<int, 256>;
  using Traits = std::allocator_traits<A>;
  EXPECT_TRUE(Traits::is_always_equal::value)
      << "is_always_equal must be std::true_type: the allocator has no state.";
  expect_rebind_keeps_align<A>();
  EXPECT_TRUE(std::is_nothrow_default_constructible_v<A>) << "the default constructor is noexcept";
  EXPECT_TRUE((std::is_nothrow_constructible_v<A, const AlignedAllocator<char, 256>&>))
      << "converting from AlignedAllocator<U, Align> is noexcept: containers rely on it";
}

TEST(AlignedRebind, OverflowingSizeThrowsBadArrayNewLength) {
  AlignedAllocator<Triple, 64> alloc;
  const std::size_t n = std::numeric_limits<std::size_t>::max() / sizeof(Triple) + 1;
  HeapLog log;
  bool threw_right = false;
  bool threw_other = false;
  Triple* p = nullptr;
  try {
    p = alloc.allocate(n);
  } catch (const std::bad_array_new_length&) {
    threw_right = true;
  } catch (...) {
    threw_other = true;
  }
  log.close();
  EXPECT_TRUE(threw_right) << "allocate(" << n << ") of 24-byte objects must throw std::bad_array_new_length: "
                           << n << " * 24 does not fit in a std::size_t. "
                           << (threw_other ? "It threw something else."
                                           : "It returned a block instead: the product wrapped around to a few "
                                             "bytes, and a container would write far past their end. Compare n "
                                             "with SIZE_MAX / sizeof(T) before multiplying.");
  EXPECT_EQ(log.news(), 0u) << "an overflowing request must be refused before the heap is asked for anything";
  if (p != nullptr) alloc.deallocate(p, n);
}

// The largest n whose n * sizeof(T) still fits is no bad length: it goes to the heap, which
// refuses it with std::bad_alloc.
TEST(AlignedRebind, TheLargestSizeThatFitsGoesToTheHeap) {
  AlignedAllocator<Triple, 64> alloc;
  const std::size_t n = std::numeric_limits<std::size_t>::max() / sizeof(Triple);
  bool bad_length = false;
  bool bad_alloc = false;
  Triple* p = nullptr;
  try {
    p = alloc.allocate(n);
  } catch (const std::bad_array_new_length&) {
    bad_length = true;
  } catch (const std::bad_alloc&) {
    bad_alloc = true;
  }
  EXPECT_FALSE(bad_length) << "allocate(" << n << ") of 24-byte objects needs " << n * sizeof(Triple)
                           << " bytes, which fits in a std::size_t: that is no bad length, so it must not throw "
                              "std::bad_array_new_length. Refuse only n > SIZE_MAX / sizeof(T), and ask the heap "
                              "for the rest.";
  EXPECT_TRUE(bad_length || bad_alloc) << "no heap holds " << n * sizeof(Triple) << " bytes: allocate(" << n
                                       << ") must end in std::bad_alloc from the heap.";
  if (p != nullptr) alloc.deallocate(p, n);
}

}  // namespace stage2_rebind
