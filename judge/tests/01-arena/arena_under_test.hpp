// The learner's Arena as exercise 01's tests see it: a class of the same names and signatures, in
// the tests' own namespace, whose every member calls the learner's through one file,
// arena_under_test.cpp, the only test file that calls arena.hpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam they are compiled once per build tree; an edit of the
// header recompiles that small file (and header_in_a_second_unit.cpp, beside it). The arena's one template,
// alloc_array<T>, is asked for a few types only, each instantiated in arena_under_test.cpp
// (the types below and the standard's): a test that asks for another type does not link.
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged. What a test asserts about the learner's type itself (that it cannot be
// copied) is read in arena_under_test.cpp, where the type is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "copyability.hpp"

namespace alloclab::test::arena {

/// A type whose alignment is larger than alignof(std::max_align_t), like a cache line.
struct alignas(64) CacheLine {
  unsigned char bytes[64];
};

/// 24 bytes: SIZE_MAX / 24 + 1 of them wrap around to 8 bytes when multiplied.
struct Triple {
  std::uint64_t a, b, c;
};

/// Whether the learner's Arena can be copied, read in arena_under_test.cpp.
[[nodiscard]] Copyability traits_of_the_arena();

/// The learner's Arena: each member calls the member of the same name.
class Arena {
 public:
  explicit Arena(std::size_t capacity);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  /// Calls the learner's allocate with one argument, so that its default alignment is the one used.
  [[nodiscard]] void* allocate(std::size_t n);
  [[nodiscard]] void* allocate(std::size_t n, std::size_t align);
  /// For T among char, double, std::uint32_t, std::uint64_t, CacheLine and Triple.
  template <class T>
  [[nodiscard]] T* alloc_array(std::size_t count);
  void reset();
  [[nodiscard]] std::size_t used() const;
  [[nodiscard]] std::size_t peak() const;
  [[nodiscard]] std::size_t capacity() const;

  /// The learner's Marker: its offset.
  struct Marker {
    std::size_t offset;
  };
  [[nodiscard]] Marker mark() const;
  void rewind(Marker m);

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

}  // namespace alloclab::test::arena
