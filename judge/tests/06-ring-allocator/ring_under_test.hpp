// The learner's RingBumpAllocator as exercise 06's tests see it: a class of the same names and
// signatures, in the tests' own namespace, whose every member calls the learner's through one
// file, ring_under_test.cpp, the only test file that calls ring_allocator.hpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam they are compiled once per build tree, the
// ThreadSanitizer tree's too; an edit of the header recompiles that small file (and
// header_in_a_second_unit.cpp, beside it). The ring's interface has no templates, so it can sit behind a seam, as exercise 07's
// manager does (manager_under_test.hpp).
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged. What a test asserts about the learner's type itself (that it cannot be
// copied, how its bytes are laid out) is read in ring_under_test.cpp, where the type is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "copyability.hpp"

namespace alloclab::test::ring {

/// Whether the learner's ring can be copied, read in ring_under_test.cpp.
[[nodiscard]] Copyability traits_of_the_ring();

/// The learner's RingBumpAllocator: each member calls the member of the same name.
class RingBumpAllocator {
 public:
  explicit RingBumpAllocator(std::size_t capacity);
  ~RingBumpAllocator();
  RingBumpAllocator(const RingBumpAllocator&) = delete;
  RingBumpAllocator& operator=(const RingBumpAllocator&) = delete;

  /// Calls the learner's allocate with one argument, so that its default alignment is the one used.
  [[nodiscard]] void* allocate(std::size_t n);
  [[nodiscard]] void* allocate(std::size_t n, std::size_t align);
  [[nodiscard]] std::uint64_t checkpoint() const;
  void reclaim(std::uint64_t c);
  [[nodiscard]] std::size_t capacity() const;
  [[nodiscard]] std::size_t in_use() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

/// The learner's ring built in storage the test can read byte by byte, on a boundary of 64 bytes
/// (or of the type's alignment, if larger), every byte 0xA5 before the constructor runs: for the
/// test that finds which of the object's bytes each thread's calls write.
class RingInPlace {
 public:
  explicit RingInPlace(std::size_t capacity);
  ~RingInPlace();
  RingInPlace(const RingInPlace&) = delete;
  RingInPlace& operator=(const RingInPlace&) = delete;

  /// The object's bytes: sizeof the learner's type.
  [[nodiscard]] std::span<const unsigned char> bytes() const;
  [[nodiscard]] void* allocate(std::size_t n, std::size_t align);
  [[nodiscard]] std::uint64_t checkpoint() const;
  void reclaim(std::uint64_t c);

 private:
  unsigned char* storage_;
};

}  // namespace alloclab::test::ring
