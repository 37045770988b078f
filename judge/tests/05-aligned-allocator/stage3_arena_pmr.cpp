// Stage 3 — arena under pmr: ArenaResource bumps through the caller's buffer, serves pmr
// containers without one heap allocation, aligns addresses, frees nothing one by one, and
// equals only itself.
#include <cstdint>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "aligned_test_support.hpp"
#include "arena_resource_under_test.hpp"

namespace stage3_arena_pmr {

using alloclab::test::address;
using alloclab::test::aligned::ArenaResource;
using alloclab::test::HeapLog;
using alloclab::test::aligned::allocate_unchecked;
using alloclab::test::aligned::inside;
using alloclab::test::aligned::TrackingResource;

TEST(ArenaPmr, BumpsThroughTheBuffer) {
  alignas(64) std::byte buffer[1024];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* a = arena.allocate(16, 8);
  void* b = arena.allocate(16, 8);
  void* c = arena.allocate(100, 4);
  EXPECT_EQ(a, buffer) << "The first allocation of a new arena must be the start of the buffer: the arena "
                          "serves requests from the caller's buffer, in order.";
  EXPECT_EQ(b, buffer + 16) << "The second 16-byte block must follow the first, at buffer + 16: an arena bumps "
                               "a cursor, it does not search.";
  EXPECT_EQ(c, buffer + 32) << "A third block of 100 bytes, 4-aligned, must start at buffer + 32.";
  EXPECT_EQ(arena.used(), 132u) << "used() must be 132 after 16 + 16 + 100 bytes without padding: it is the "
                                   "cursor's offset from the start of the buffer.";
}

TEST(ArenaPmr, AlignsTheAddressNotTheOffset) {
  // The buffer starts one byte past a cache line, as a caller's buffer may.
  alignas(64) std::byte storage[1024];
  std::byte* buffer = storage + 1;
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof storage - 1, &upstream);
  void* a = arena.allocate(1, 1);
  EXPECT_EQ(a, buffer) << "allocate(1, 1) needs no padding: it must return the start of the buffer.";
  void* p = allocate_unchecked(arena, 8, 64);
  EXPECT_EQ(address(p) % 64, 0u)
      << "allocate(8, 64) returned " << p << ", not a multiple of 64. The buffer starts at " << buffer
      << ", one byte past a cache line: align the ADDRESS (start + used), not the offset from the start.";
  EXPECT_EQ(p, storage + 64) << "the next multiple of 64 after buffer + 1 is the start of the next line";
  EXPECT_EQ(arena.used(), 71u) << "used() must count the padding: 1 byte, 62 bytes of padding, 8 bytes = 71. "
                                  "It says how much of the buffer is gone.";
  for (std::size_t align : {2u, 4u, 8u, 16u, 32u, 128u, 256u}) {
    void* q = allocate_unchecked(arena, 3, align);
    EXPECT_EQ(address(q) % align, 0u) << "allocate(3, " << align << ") returned " << q << ", not aligned.";
    EXPECT_TRUE(inside(q, 3, buffer, sizeof storage - 1)) << "allocate(3, " << align << ") must come from the buffer.";
  }
}

TEST(ArenaPmr, ContainersLiveInTheBufferWithoutTheHeap) {
  alignas(64) std::byte buffer[1 << 16];
  ArenaResource arena(buffer, sizeof buffer);  // the default upstream: the heap, if it were ever needed
  HeapLog log;
  {
    std::pmr::vector<int> v(&arena);
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    std::pmr::string s(200, 'k', &arena);
    std::pmr::unordered_map<int, int> map(&arena);
    for (int i = 0; i < 300; ++i) map[i] = -i;
    log.close();
    EXPECT_TRUE(inside(v.data(), v.size() * sizeof(int), buffer, sizeof buffer))
        << "the pmr::vector's elements must live in the arena's buffer";
    EXPECT_TRUE(inside(s.data(), s.size(), buffer, sizeof buffer))
        << "the pmr::string's characters must live in the arena's buffer";
    EXPECT_TRUE(inside(&map.at(150), sizeof(int), buffer, sizeof buffer))
        << "the pmr::unordered_map's nodes must live in the arena's buffer";
    EXPECT_EQ(map.at(150), -150) << "the map lost an entry";
    EXPECT_EQ(v[999], 999) << "the vector lost an element";
  }
  EXPECT_EQ(log.news(), 0u)
      << "Building a pmr::vector, a pmr::string and a pmr::unordered_map over an arena whose 64 KiB buffer "
         "has room for all of them called the global operator new "
      << log.news() << " times. While the buffer suffices the arena must not touch the heap: that is the "
      << "whole point of giving a step its own buffer (no lock, no system call, no fragmentation).";
  EXPECT_GT(arena.used(), 1000 * sizeof(int)) << "used() must count what the containers took from the buffer";
}

// A pmr container keeps its resource when it is moved: a container's move constructor
// move-constructs its allocator from the source's, and a moved polymorphic_allocator holds
// the same resource. So a pmr container returned from a function still lives in the arena it
// was built over, and dangles once that arena is released or destroyed.
std::pmr::vector<int> squares_over(std::pmr::memory_resource* r, int n) {
  std::pmr::vector<int> v(r);
  for (int i = 0; i < n; ++i) v.push_back(i * i);
  return v;
}

TEST(ArenaPmr, AMovedContainerStaysInTheArena) {
  alignas(64) std::byte buffer[4096];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  std::pmr::vector<int> v = squares_over(&arena, 100);
  EXPECT_TRUE(inside(v.data(), v.size() * sizeof(int), buffer, sizeof buffer))
      << "a pmr::vector built over the arena inside a function and returned from it must still hold its "
         "elements in the arena's buffer: returning moves the vector (or builds it in place), and a move keeps "
         "the resource. The caller now holds memory of the arena, valid only until release().";
  std::pmr::vector<int> w(std::move(v));
  EXPECT_TRUE(inside(w.data(), w.size() * sizeof(int), buffer, sizeof buffer))
      << "std::pmr::vector<int> w(std::move(v)) must keep v's buffer, in the arena: move construction takes the "
         "source's resource along (only copies fall back to the default resource, and only assignments keep "
         "their own).";
  ASSERT_EQ(w.size(), 100u) << "the moved vector lost elements";
  EXPECT_EQ(w[99], 99 * 99) << "the moved vector's elements changed";
  EXPECT_EQ(upstream.allocations(), 0u) << "4 KiB hold 100 ints and their growth: nothing goes upstream";
}

// Uses-allocator construction: a pmr container passes its resource on to each element it
// constructs whose type takes a polymorphic_allocator, so the characters of the pmr::strings
// in a pmr::vector come from the arena too. (The characters of std::strings would not: their
// allocator is std::allocator, and they go to the heap.)
TEST(ArenaPmr, StringsInAPmrVectorUseTheArenaToo) {
  alignas(64) std::byte buffer[1 << 14];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  HeapLog log;
  {
    std::pmr::vector<std::pmr::string> prompts(&arena);
    for (int i = 0; i < 20; ++i) prompts.emplace_back(100, static_cast<char>('a' + i));
    prompts.emplace_back("a prompt much longer than the fifteen characters a string keeps inside itself");
    log.close();
    for (const std::pmr::string& s : prompts) {
      if (inside(s.data(), s.size(), buffer, sizeof buffer)) continue;
      ADD_FAILURE() << "a " << s.size() << "-character pmr::string in a pmr::vector over the arena keeps its "
                    << "characters at " << static_cast<const void*>(s.data()) << ", outside the arena's buffer. "
                    << "The vector hands its resource to every pmr::string it constructs (uses-allocator "
                       "construction), so those characters are allocated from the arena as well.";
      break;  // one example is enough
    }
    EXPECT_EQ(prompts[20].size(), 77u) << "the vector lost characters of its last string";
  }
  EXPECT_EQ(log.news(), 0u) << "a pmr::vector of pmr::strings over an arena with room for them called the global "
                               "operator new "
                            << log.news() << " times: neither the vector nor its strings may touch the heap.";
  EXPECT_EQ(upstream.allocations(), 0u) << "16 KiB hold 21 strings of about 100 characters: nothing goes upstream";
}

TEST(ArenaPmr, DeallocateGivesNothingBack) {
  alignas(64) std::byte buffer[1024];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  void* a = arena.allocate(32, 16);
  arena.deallocate(a, 32, 16);
  EXPECT_EQ(arena.used(), 32u) << "deallocate must do nothing: an arena frees everything at once, in "
                                  "release(), never block by block.";
  void* b = arena.allocate(32, 16);
  EXPECT_NE(a, b) << "after deallocate(a), the next allocation must not hand a out again: the cursor only "
                     "moves forward.";
  EXPECT_EQ(b, buffer + 32) << "the next block follows the first";
}

TEST(ArenaPmr, EqualOnlyToItself) {
  alignas(64) std::byte one[256];
  alignas(64) std::byte two[256];
  ArenaResource a(one, sizeof one);
  ArenaResource b(two, sizeof two);
  EXPECT_TRUE(a.is_equal(a)) << "an arena is equal to itself";
  EXPECT_FALSE(a.is_equal(b))
      << "two arenas must not compare equal, even of the same type: memory from one cannot be freed by the "
         "other, and a pmr container that thinks they are equal moves pointers into the wrong buffer.";
  EXPECT_FALSE(a == b) << "operator== on memory resources asks do_is_equal";
  EXPECT_FALSE(a.is_equal(*std::pmr::new_delete_resource())) << "an arena is not the heap";
  std::pmr::vector<int> va({1, 2, 3}, &a);
  std::pmr::vector<int> vb(&b);
  vb = std::move(va);
  EXPECT_TRUE(inside(vb.data(), 3 * sizeof(int), two, sizeof two))
      << "move-assigning a pmr::vector into one over another arena must move the elements one by one into "
         "that arena's buffer (the resources differ, and a polymorphic_allocator does not propagate on "
         "assignment), not steal the buffer of the first.";
}

TEST(ArenaPmr, ZeroBytesStillGetAnAlignedAddress) {
  alignas(64) std::byte buffer[256];
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  (void)arena.allocate(3, 1);
  void* p = arena.allocate(0, 32);
  EXPECT_EQ(address(p) % 32, 0u) << "allocate(0, 32) must still return a 32-aligned address";
  EXPECT_TRUE(inside(p, 0, buffer, sizeof buffer)) << "allocate(0, 32) must come from the buffer";
}

TEST(ArenaPmr, IsNotCopyable) {
  const alloclab::test::Copyability yours = alloclab::test::aligned::traits_of_the_arena_resource();
  EXPECT_FALSE(yours.copy_constructible)
      << "ArenaResource must not be copyable: two copies would hand out the same buffer, and both would give "
         "the same upstream blocks back. std::pmr::memory_resource itself is copyable, so delete the copy "
         "constructor.";
  EXPECT_FALSE(yours.copy_assignable) << "ArenaResource must not be copy-assignable either.";
}

TEST(ArenaPmr, RefusesBadArguments) {
  alignas(64) std::byte buffer[256];
  EXPECT_THROW(ArenaResource(buffer, sizeof buffer, nullptr), std::invalid_argument)
      << "a null upstream must be refused at construction with std::invalid_argument: the first spill would "
         "crash far from the mistake.";
  EXPECT_THROW(ArenaResource(nullptr, 64), std::invalid_argument)
      << "a null buffer of 64 bytes must be refused with std::invalid_argument.";
  EXPECT_NO_THROW(ArenaResource(nullptr, 0)) << "a null buffer of size 0 is valid: every request goes upstream.";
  TrackingResource upstream;
  ArenaResource arena(buffer, sizeof buffer, &upstream);
  (void)arena.allocate(5, 1);
  volatile std::size_t forty_eight = 48;  // a constant would be refused by the compiler already
  EXPECT_THROW((void)allocate_unchecked(arena, 8, forty_eight), std::invalid_argument)
      << "allocate(8, 48) must throw std::invalid_argument: 48 is not a power of two.";
  EXPECT_EQ(arena.used(), 5u) << "a refused request must change nothing";
}

}  // namespace stage3_arena_pmr
