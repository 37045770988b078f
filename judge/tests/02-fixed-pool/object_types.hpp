// The types exercise 02's tests build in an ObjectPool: stage 3's and the model stage's. They live
// here rather than in those test files because object_pool_under_test.cpp instantiates the
// learner's ObjectPool<T> for each of them, and so must see their definitions.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

#include "model.hpp"

namespace stage3_objects {

// Counts constructions and destructions; each test starts from zero.
struct Tracked {
  static inline int constructed = 0;
  static inline int destroyed = 0;
  static void reset() { constructed = destroyed = 0; }

  Tracked(int v, std::string n) : value(v), name(std::move(n)) { ++constructed; }
  ~Tracked() { ++destroyed; }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;

  int value;
  std::string name;  // long names live on the heap: a skipped destructor leaks them
};

// Remembers whether it was built from an lvalue or from an rvalue.
struct Probe {};
struct Sink {
  enum class From { lvalue, rvalue };
  explicit Sink(const Probe&) : from(From::lvalue) {}
  explicit Sink(Probe&&) : from(From::rvalue) {}
  From from;
};

struct Refused {};
// Throws from its constructor when asked to.
struct Fragile {
  static inline int destroyed = 0;
  explicit Fragile(bool fail) {
    if (fail) throw Refused{};
  }
  ~Fragile() { ++destroyed; }
  long payload[4] = {};
};

// A type wider than a pointer and aligned as strictly as the pool's blocks.
struct alignas(alignof(std::max_align_t)) Wide {
  char bytes[40];
};

// An object of four bytes, for the test of the default chunk of 1024 objects.
struct Small {
  int value;
};

}  // namespace stage3_objects

namespace pool_model {

// A caller's object often starts with a pointer. The caller here stores the address of this
// buffer in the first bytes of every block it holds: a pool that reads those bytes as its link
// hands out the buffer, which the transcript then names, instead of crashing on a wild address.
alignas(64) inline unsigned char decoy[2048];

// ObjectPool's objects: an Item starts with a pointer (to the decoy), remembers its value and
// which constructor built it (for a Tag, whether it came as an lvalue or an rvalue), and counts
// the destructors that ran, and those that found the pointer overwritten; Item(v, Refuse{})
// throws Refused. Item(v, p) and Item{v, p} are different constructors, and Item() zeroes
// `plain` where a bare `new (block) Item` leaves the block's old bytes in it.
struct Tag {};
struct Refuse {};
struct Refused {};
struct Item {
  using Ctor = Objects::Ctor;
  static inline int destructions = 0, overwritten = 0;
  Item() = default;
  Item(int v, const Tag&) : value(v), plain(v), ctor(Ctor::tag_lvalue) {}
  Item(int v, Tag&&) : value(v), plain(v), ctor(Ctor::tag_rvalue) {}
  Item(int v, int p) : value(v), plain(p), ctor(Ctor::two_ints) {}
  Item(std::initializer_list<int>) : value(-1), plain(-1), ctor(Ctor::braced_list) {}
  Item(int, Refuse) { throw Refused{}; }
  ~Item() {
    ++destructions;
    if (first != decoy) ++overwritten;
  }
  Item(const Item&) = delete;
  Item& operator=(const Item&) = delete;
  const unsigned char* first = decoy;
  int value = 0;
  int plain;  // no initializer: `new (block) Item()` zeroes it, a bare `new (block) Item` leaves the block's bytes
  Ctor ctor = Ctor::none;
};

}  // namespace pool_model
