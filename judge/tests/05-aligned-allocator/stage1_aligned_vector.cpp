// Stage 1 — aligned vector: AlignedAllocator's blocks, where they come from and where they go,
// and std::vector growing over them.
#include "aligned_allocator.hpp"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "aligned_test_support.hpp"

namespace stage1_aligned_vector {

using alloclab::AlignedAllocator;
using alloclab::aligned_vector;
using alloclab::test::address;
using alloclab::test::HeapCall;
using alloclab::test::HeapLog;
using alloclab::test::aligned::hands_out_memory;

// Keeps many blocks of AlignedAllocator<char, Align> alive at once, of many sizes: one
// block that is aligned by luck proves nothing, forty of them cannot all be.
template <std::size_t Align>
void expect_every_block_aligned() {
  AlignedAllocator<char, Align> alloc;
  std::vector<std::pair<char*, std::size_t>> blocks;
  for (std::size_t n = 3; n <= 120; n += 3) {
    char* p = alloc.allocate(n);
    ASSERT_NE(p, nullptr) << "AlignedAllocator<char, " << Align << ">::allocate(" << n << ") returned nullptr.";
    blocks.emplace_back(p, n);
  }
  for (auto [p, n] : blocks) {
    if (address(p) % Align == 0) continue;
    ADD_FAILURE() << "AlignedAllocator<char, " << Align << ">::allocate(" << n << ") returned "
                  << static_cast<void*>(p) << ", which is not a multiple of " << Align
                  << ". Every block must start on a multiple of Align: plain new and malloc only promise "
                  << __STDCPP_DEFAULT_NEW_ALIGNMENT__ << " bytes, so the aligned form of operator new must be asked.";
    break;  // one example is enough
  }
  for (auto [p, n] : blocks) alloc.deallocate(p, n);
}

TEST(AlignedVector, EveryBlockStartsOnAMultipleOfAlign) {
  expect_every_block_aligned<64>();
  expect_every_block_aligned<128>();
  expect_every_block_aligned<256>();
  expect_every_block_aligned<4096>();
}

TEST(AlignedVector, AllocateAsksTheAlignedOperatorNew) {
  AlignedAllocator<double, 64> alloc;
  HeapLog log;
  double* p = alloc.allocate(10);
  log.close();
  ASSERT_NE(p, nullptr) << "allocate(10) returned nullptr.";
  ASSERT_EQ(log.news(), 1u) << "allocate(10) must make exactly one call of the global operator new (it made "
                            << log.news() << "): the allocator is a thin layer over the heap, no more.";
  const HeapCall& call = *log.begin();
  EXPECT_EQ(call.size, 10 * sizeof(double))
      << "allocate(10) of doubles must ask operator new for 10 * sizeof(double) = 80 bytes, not " << call.size
      << ": n counts objects, the heap counts bytes.";
  EXPECT_EQ(call.alignment, 64u)
      << "allocate must call the aligned operator new, operator new(bytes, std::align_val_t{64}); it passed "
      << (call.alignment == 0 ? std::string("no alignment at all") : "alignment " + std::to_string(call.alignment))
      << ". Only the aligned form promises more than " << __STDCPP_DEFAULT_NEW_ALIGNMENT__ << " bytes.";
  EXPECT_EQ(call.p, p) << "allocate must return the block operator new returned.";
  alloc.deallocate(p, 10);
}

TEST(AlignedVector, DeallocateIsTheSizedAlignedDelete) {
  AlignedAllocator<double, 64> alloc;
  double* p = alloc.allocate(10);
  ASSERT_NE(p, nullptr) << "allocate(10) returned nullptr.";
  HeapLog log;
  alloc.deallocate(p, 10);
  log.close();
  ASSERT_EQ(log.deletes(), 1u) << "deallocate(p, 10) must make exactly one call of the global operator delete "
                               << "(it made " << log.deletes() << "), or the block leaks or is freed twice.";
  const HeapCall& call = *log.begin();
  EXPECT_EQ(call.p, p) << "deallocate(p, 10) must give p back.";
  EXPECT_EQ(call.alignment, 64u)
      << "deallocate must call the operator delete that matches the aligned operator new, with the same "
         "std::align_val_t{64}; it passed "
      << (call.alignment == 0 ? std::string("no alignment") : "alignment " + std::to_string(call.alignment))
      << ". A block from the aligned new given to another delete is undefined behaviour: the heap may keep "
         "over-aligned blocks apart and look for it in the wrong place.";
  EXPECT_TRUE(call.sized)
      << "deallocate must call the sized form, operator delete(p, bytes, std::align_val_t{64}): the container "
         "tells you the size, and passing it on spares the heap a lookup of the block's size.";
  if (call.sized) {
    EXPECT_EQ(call.size, 10 * sizeof(double))
        << "deallocate(p, 10) of doubles must pass the size the block was allocated with, 80 bytes, not "
        << call.size << ": a sized delete with a wrong size corrupts a heap that trusts it.";
  }
}

TEST(AlignedVector, DataStaysAlignedAsTheVectorGrows) {
  ASSERT_TRUE((hands_out_memory<AlignedAllocator<float, 64>>()));
  aligned_vector<float> v;
  const float* last = nullptr;
  std::size_t reallocations = 0;
  for (int i = 0; i < 5000; ++i) {
    v.push_back(static_cast<float>(i));
    if (v.data() != last) {
      ++reallocations;
      last = v.data();
      ASSERT_EQ(address(v.data()) % 64, 0u)
          << "After " << v.size() << " push_backs the vector moved to " << static_cast<const void*>(v.data())
          << ", which is not on a cache line (a multiple of 64). Every buffer a growing vector takes comes "
             "from the allocator, not only the first one.";
    }
  }
  EXPECT_GE(reallocations, 5u) << "5000 push_backs into an empty vector grow its buffer many times.";
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(v[static_cast<std::size_t>(i)], static_cast<float>(i))
        << "element " << i << " changed while the vector grew: each new block must hold the whole size asked.";
  }
}

TEST(AlignedVector, PageAlignedVector) {
  ASSERT_TRUE((hands_out_memory<AlignedAllocator<std::uint8_t, 4096>>()));
  for (std::size_t size : {1u, 100u, 5000u, 70000u}) {
    aligned_vector<std::uint8_t, 4096> v(size, std::uint8_t{7});
    EXPECT_EQ(address(v.data()) % 4096, 0u)
        << "aligned_vector<std::uint8_t, 4096> of " << size << " bytes starts at "
        << static_cast<const void*>(v.data()) << ", not on a page: a buffer that is mapped, pinned or handed "
        << "to a device must start on a page.";
  }
}

TEST(AlignedVector, EveryBlockGoesBackAsItWasTaken) {
  ASSERT_TRUE((hands_out_memory<AlignedAllocator<long, 128>>()));
  HeapLog log;
  {
    aligned_vector<long, 128> v;
    for (long i = 0; i < 3000; ++i) v.push_back(i);
    v.shrink_to_fit();
    v.resize(10);
    v.shrink_to_fit();
  }
  log.close();
  EXPECT_EQ(log.news(), log.deletes())
      << "A vector that grew, shrank and was destroyed made " << log.news() << " operator new calls and "
      << log.deletes() << " operator delete calls: every block the allocator takes must go back exactly once.";
  for (const HeapCall& freed : log) {
    if (freed.is_new) continue;
    const HeapCall* taken = nullptr;
    for (const HeapCall& c : log)
      if (c.is_new && c.p == freed.p) taken = &c;
    ASSERT_NE(taken, nullptr) << "operator delete was given " << freed.p << ", which no operator new returned.";
    ASSERT_TRUE(freed.sized && freed.size == taken->size && freed.alignment == taken->alignment)
        << "The block at " << freed.p << " was taken with operator new(" << taken->size << ", align "
        << taken->alignment << ") but given back with operator delete("
        << (freed.sized ? std::to_string(freed.size) : std::string("no size")) << ", align " << freed.alignment
        << "). deallocate(p, n) gets the n that allocate got: it must pass the same byte count and the same "
           "alignment on.";
  }
}

TEST(AlignedVector, AlignedVectorIsAStdVector) {
  EXPECT_TRUE((std::is_same_v<aligned_vector<int>, std::vector<int, AlignedAllocator<int, 64>>>))
      << "aligned_vector<T> is std::vector<T, AlignedAllocator<T, 64>>: a cache line by default.";
  EXPECT_TRUE((std::is_same_v<aligned_vector<int, 256>, std::vector<int, AlignedAllocator<int, 256>>>))
      << "aligned_vector<T, A> is std::vector<T, AlignedAllocator<T, A>>.";
  EXPECT_TRUE((std::is_same_v<AlignedAllocator<int>::value_type, int>)) << "value_type is T.";
  AlignedAllocator<int, 64> alloc;
  int* p = alloc.allocate(1);
  EXPECT_EQ(address(p) % 64, 0u) << "AlignedAllocator<int> (Align = 64 by default) must return 64-aligned memory.";
  if (p != nullptr) alloc.deallocate(p, 1);
}

}  // namespace stage1_aligned_vector
