// Stage 3 — ObjectPool: construction in a pooled block, destruction, and a constructor that throws.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "alloclab_test.hpp"
#include "object_pool_under_test.hpp"
#include "object_types.hpp"
#include "pool_test_support.hpp"

namespace stage3_objects {

using alloclab::test::pool::ObjectPool;
using alloclab::test::address;
using alloclab::test::heap_bytes_in_use;
using namespace alloclab::test::pool;

std::string long_name(int i) { return "request-state-number-" + std::to_string(i) + "-with-a-name-too-long-for-SSO"; }

TEST(PoolObjects, CreateConstructsFromItsArguments) {
  Tracked::reset();
  ObjectPool<Tracked> pool(4);
  Tracked* t = pool.create(7, std::string("seven"));
  ASSERT_NE(t, nullptr) << "create(7, \"seven\") returned nullptr: it must return the object it built.";
  EXPECT_EQ(t->value, 7) << "create() must pass its arguments to T's constructor.";
  EXPECT_EQ(t->name, "seven") << "create() must pass its arguments to T's constructor.";
  EXPECT_EQ(Tracked::constructed, 1) << "create() must run T's constructor exactly once.";
  EXPECT_EQ(pool.live(), 1u) << "One object created and not destroyed: live() must be 1.";
  EXPECT_EQ(address(t) % alignof(Tracked), 0u) << "The object must be aligned for its type.";
  pool.destroy(t);
}

TEST(PoolObjects, CreateForwardsArgumentsAsGiven) {
  ObjectPool<Sink> pool(4);
  Probe probe;
  Sink* from_rvalue = pool.create(Probe{});
  Sink* from_lvalue = pool.create(probe);
  Sink* from_const = pool.create(std::as_const(probe));
  ASSERT_TRUE(from_rvalue && from_lvalue && from_const) << "create() returned nullptr.";
  EXPECT_EQ(from_rvalue->from, Sink::From::rvalue)
      << "create(Probe{}) must reach T's constructor as an rvalue: pass the arguments on with "
         "std::forward<Args>(args)..., or every argument is copied, and move-only arguments do not compile.";
  EXPECT_EQ(from_lvalue->from, Sink::From::lvalue) << "create(probe) must reach T's constructor as an lvalue.";
  EXPECT_EQ(from_const->from, Sink::From::lvalue) << "create(std::as_const(probe)) must reach T's constructor as a const lvalue.";
  pool.destroy(from_rvalue);
  pool.destroy(from_lvalue);
  pool.destroy(from_const);
}

// create builds T(args...), with parentheses, as std::construct_at and
// std::allocator_traits::construct do: where T has a std::initializer_list constructor, braces
// choose that one instead.
TEST(PoolObjects, CreateBuildsWithParentheses) {
  ObjectPool<std::vector<int>> pool(4);
  std::vector<int>* v = pool.create(3, 7);
  ASSERT_NE(v, nullptr) << "create(3, 7) returned nullptr: it must return the object it built.";
  EXPECT_EQ(*v, std::vector<int>({7, 7, 7}))
      << "ObjectPool<std::vector<int>>::create(3, 7) must build std::vector<int>(3, 7), three 7s: create constructs "
         "T(std::forward<Args>(args)...), with parentheses, as std::construct_at and std::allocator_traits::construct "
         "do. Braces, T{3, 7}, choose the std::initializer_list constructor and build the two elements {3, 7}.";
  pool.destroy(v);
}

// create() with no argument value-initialises T, as the expression T() does: a type without a
// constructor of its own reads zeros, never what the block held before.
TEST(PoolObjects, CreateWithoutArgumentsValueInitialises) {
  ObjectPool<Wide> pool(4);
  const auto nonzero = [](const Wide* w) {
    return std::count_if(std::begin(w->bytes), std::end(w->bytes), [](char c) { return c != 0; });
  };
  Wide* first = pool.create();
  ASSERT_NE(first, nullptr) << "create() returned nullptr: it must return the object it built.";
  EXPECT_EQ(nonzero(first), 0)
      << "create() with no argument must value-initialise T, as the expression T() does (and std::construct_at "
         "and std::make_unique<T>() with it): Wide has no constructor of its own, so its 40 bytes must read 0 in a "
         "fresh block, where the pool's link and the heap's filling are. A bare `new (block) T`, without the "
         "parentheses, default-initialises and leaves those bytes.";
  std::fill(std::begin(first->bytes), std::end(first->bytes), 'x');  // what its owner leaves behind
  pool.destroy(first);
  Wide* again = pool.create();
  ASSERT_NE(again, nullptr) << "create() returned nullptr: it must return the object it built.";
  EXPECT_EQ(nonzero(again), 0)
      << "create() with no argument must value-initialise T, as the expression T() does: a Wide built in a block "
         "given back must read 0 in all of its 40 bytes, not what the last object left there. A bare "
         "`new (block) T`, without the parentheses, default-initialises and leaves those bytes.";
  pool.destroy(again);
}

TEST(PoolObjects, DestroyRunsTheDestructor) {
  Tracked::reset();
  ObjectPool<Tracked> pool(4);
  Tracked* t = pool.create(1, long_name(1));
  ASSERT_NE(t, nullptr) << "create() returned nullptr.";
  pool.destroy(t);
  EXPECT_EQ(Tracked::destroyed, 1)
      << "destroy() must run ~T() exactly once before giving the block back: without it the object's own "
         "resources (here a heap-allocated string) leak.";
  EXPECT_EQ(pool.live(), 0u) << "After destroy(), live() must be back to 0.";
}

TEST(PoolObjects, DestroyGivesTheBlockBack) {
  ObjectPool<Tracked> pool(4);
  Tracked* a = pool.create(1, "a");
  ASSERT_NE(a, nullptr) << "create() returned nullptr.";
  pool.destroy(a);
  Tracked* b = pool.create(2, "b");
  EXPECT_EQ(b, a) << "The block of a destroyed object must go back to the pool, and the pool's free list is "
                     "last in, first out: the next create() must reuse it.";
  pool.destroy(b);
}

TEST(PoolObjects, DestroyNullDoesNothing) {
  Tracked::reset();
  ObjectPool<Tracked> pool(4);
  Tracked* t = pool.create(1, "one");
  ASSERT_NE(t, nullptr) << "create() returned nullptr.";
  pool.destroy(nullptr);
  EXPECT_EQ(Tracked::destroyed, 0) << "destroy(nullptr) must not run any destructor.";
  EXPECT_EQ(pool.live(), 1u) << "destroy(nullptr) must not change live().";
  pool.destroy(t);
}

TEST(PoolObjects, LiveCountsObjectsNotYetDestroyed) {
  ObjectPool<Tracked> pool(4);
  std::vector<Tracked*> objects;
  for (int i = 0; i < 10; ++i) {
    objects.push_back(pool.create(i, "x"));
    EXPECT_EQ(pool.live(), static_cast<std::size_t>(i + 1)) << "Each create() must raise live() by one.";
  }
  ASSERT_EQ(std::count(objects.begin(), objects.end(), nullptr), 0) << "create() returned nullptr.";
  for (int i = 0; i < 3; ++i) pool.destroy(objects[i]);
  EXPECT_EQ(pool.live(), 7u) << "Ten created, three destroyed: live() must be 7.";
  for (int i = 3; i < 10; ++i) pool.destroy(objects[i]);
  EXPECT_EQ(pool.live(), 0u) << "All destroyed: live() must be 0.";
}

TEST(PoolObjects, ThrowingConstructorPropagates) {
  ObjectPool<Fragile> pool(4);
  EXPECT_THROW((void)pool.create(true), Refused)
      << "When T's constructor throws, create() must let that very exception reach the caller.";
}

TEST(PoolObjects, ThrowingConstructorGivesTheBlockBack) {
  ObjectPool<Fragile> pool(4);
  Fragile* a = pool.create(false);
  ASSERT_NE(a, nullptr) << "create(false) returned nullptr.";
  pool.destroy(a);  // a's block is now on top of the free list
  try {
    (void)pool.create(true);
  } catch (const Refused&) {
  }
  Fragile* b = pool.create(false);
  EXPECT_EQ(b, a)
      << "The failed create() took the block on top of the free list; it must give it back before the "
         "exception leaves, so the next create() gets that same block. Otherwise every failed construction "
         "loses a block for good.";
  pool.destroy(b);
}

TEST(PoolObjects, ThrowingConstructorLeavesNoObject) {
  Fragile::destroyed = 0;
  ObjectPool<Fragile> pool(4);
  Fragile* keep = pool.create(false);
  ASSERT_NE(keep, nullptr) << "create(false) returned nullptr.";
  for (int i = 0; i < 3; ++i) {
    try {
      (void)pool.create(true);
    } catch (const Refused&) {
    }
  }
  EXPECT_EQ(pool.live(), 1u) << "A create() whose constructor threw made no object: live() must not count it.";
  EXPECT_EQ(Fragile::destroyed, 0)
      << "No destructor may run for an object whose constructor threw: it never existed.";
  pool.destroy(keep);
}

TEST(PoolObjects, SmallAndAlignedTypesGetTheirOwnBlocks) {
  ObjectPool<char> chars(4);
  std::vector<char*> cs;
  for (int i = 0; i < 20; ++i) cs.push_back(chars.create(static_cast<char>('a' + i)));
  ASSERT_EQ(std::count(cs.begin(), cs.end(), nullptr), 0) << "create() returned nullptr.";
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(*cs[i], static_cast<char>('a' + i))
        << "ObjectPool<char>: object " << i << " was overwritten. A 1-byte type still needs a block big enough "
           "for the free list's link.";
  for (char* c : cs) chars.destroy(c);

  ObjectPool<Wide> wides(4);
  std::vector<Wide*> ws;
  for (int i = 0; i < 10; ++i) ws.push_back(wides.create());
  ASSERT_EQ(std::count(ws.begin(), ws.end(), nullptr), 0) << "create() returned nullptr.";
  for (Wide* w : ws)
    EXPECT_EQ(address(w) % alignof(Wide), 0u) << "An object aligned to alignof(std::max_align_t) must be placed at "
                                                 "an address that is a multiple of it.";
  std::vector<void*> raw(ws.begin(), ws.end());
  EXPECT_GE(smallest_gap(raw), sizeof(Wide)) << "Two live 48-byte objects overlap.";
  for (Wide* w : ws) wides.destroy(w);
}

TEST(PoolObjects, ManyObjectsAcrossChunks) {
  Tracked::reset();
  ObjectPool<Tracked> pool(4);
  std::vector<Tracked*> objects;
  for (int i = 0; i < 100; ++i) {
    Tracked* t = pool.create(i, long_name(i));
    ASSERT_NE(t, nullptr) << "create() returned nullptr for object " << i << ".";
    objects.push_back(t);
  }
  EXPECT_EQ(pool.live(), 100u) << "100 objects created and none destroyed: live() must be 100.";
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(objects[i]->value, i) << "Object " << i << " was overwritten by another object.";
    EXPECT_EQ(objects[i]->name, long_name(i)) << "Object " << i << " was overwritten by another object.";
  }
  for (Tracked* t : objects) pool.destroy(t);
  EXPECT_EQ(Tracked::destroyed, 100) << "Destroying 100 objects must run 100 destructors.";
  EXPECT_EQ(pool.live(), 0u) << "Every object was destroyed: live() must be 0.";
}

// The default chunk is 1024 objects, as the signature says: the first chunk exists from the
// constructor on, so the first 1024 objects take nothing more from the heap, and the 1025th
// takes a chunk.
TEST(PoolObjects, DefaultChunkHolds1024Objects) {
#ifndef ALLOCLAB_TEST_HEAP_BYTES
  GTEST_SKIP() << "needs a sanitizer's count of heap bytes";
#endif
  ObjectPool<Small> pool;
  std::vector<Small*> objects;
  objects.reserve(1025);  // the test's own vector does not allocate below
  const std::size_t at_start = heap_bytes_in_use();
  for (int i = 0; i < 1024; ++i) objects.push_back(pool.create(Small{i}));
  const std::size_t after_1024 = heap_bytes_in_use();
  objects.push_back(pool.create(Small{1024}));
  const std::size_t after_1025 = heap_bytes_in_use();
  for (Small* p : objects) pool.destroy(p);
  EXPECT_EQ(after_1024, at_start) << "ObjectPool<T>() makes chunks of 1024 objects, and its first chunk exists from "
                                     "the constructor on, so 1024 create() calls must take nothing more from the "
                                     "heap; they took "
                                  << after_1024 - at_start << " bytes. Is the default objects_per_chunk 1024?";
  EXPECT_GT(after_1025, after_1024) << "The 1025th object cannot fit in a first chunk of 1024, so its create() must "
                                       "add a chunk; it took nothing from the heap. Is the default "
                                       "objects_per_chunk 1024?";
}

}  // namespace stage3_objects
