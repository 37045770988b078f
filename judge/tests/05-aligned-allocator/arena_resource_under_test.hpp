// The learner's ArenaResource as stages 3 and 4 of exercise 05 see it: a memory resource of the
// same name, constructors and members, in the tests' own namespace, whose every call goes on to
// the learner's through one file, arena_resource_under_test.cpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam the arena's two stages are compiled once per build
// tree. AlignedAllocator<T, Align> cannot cross it (its tests hand it to std::vector for any T,
// and ask its rebind and traits at compile time), so stages 1 and 2 and the model's runner
// include the header, and an edit recompiles them and this seam.
//
// Nothing here judges: every call, its arguments and its outcome (value or exception) pass
// unchanged, and no call takes heap memory of its own. It is a std::pmr::memory_resource itself,
// so a pmr container or another arena uses it as it would the learner's: allocate and deallocate
// go to the learner's, and is_equal asks the learner's resource about the other one (the other's
// learner's resource, when the other is one of these). What a test asserts about the learner's
// type itself (that it cannot be copied) is read in arena_resource_under_test.cpp.
#pragma once

#include <cstddef>
#include <memory_resource>

#include "copyability.hpp"

namespace alloclab::test::aligned {

/// Whether the learner's ArenaResource can be copied, read in arena_resource_under_test.cpp.
[[nodiscard]] Copyability traits_of_the_arena_resource();

/// The learner's ArenaResource: each member calls the member of the same name.
class ArenaResource : public std::pmr::memory_resource {
 public:
  /// Calls the learner's constructor with two arguments, so that its default upstream is the one used.
  ArenaResource(void* buffer, std::size_t size);
  ArenaResource(void* buffer, std::size_t size, std::pmr::memory_resource* upstream);
  ~ArenaResource() override;
  ArenaResource(const ArenaResource&) = delete;
  ArenaResource& operator=(const ArenaResource&) = delete;

  [[nodiscard]] std::size_t used() const;
  [[nodiscard]] std::size_t upstream_bytes() const;
  void release();

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override;

  struct Learners;
  template <class... Args>
  static Learners* built(Args... args);
  Learners* learners_;  // from malloc, which the tests' heap log does not see (see the .cpp)
};

}  // namespace alloclab::test::aligned
