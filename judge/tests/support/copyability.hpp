// Whether the learner's type can be copied, as a seam (<name>_under_test.cpp) reads it where the
// type is complete, for the tests that assert it cannot be: two copies would free the same memory.
#pragma once

#include <type_traits>

namespace alloclab::test {

struct Copyability {
  bool copy_constructible;
  bool copy_assignable;
};

template <class T>
constexpr Copyability copyability_of() {
  return {std::is_copy_constructible_v<T>, std::is_copy_assignable_v<T>};
}

}  // namespace alloclab::test
