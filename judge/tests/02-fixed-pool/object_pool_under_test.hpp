// The learner's ObjectPool<T> as exercise 02's tests of it see it: a class template of the same
// name and signatures, in the tests' own namespace, whose every member calls the learner's through
// one file, object_pool_under_test.cpp.
//
// Why: an edit of the learner's header then recompiles that file and no test file. The learner's
// create() forwards any arguments to any T, which no seam can pass on in general; but the tests
// build a known list of types from a known list of arguments, so object_pool_under_test.cpp
// instantiates the learner's ObjectPool<T> for each type (object_types.hpp), and its create() for
// each list of argument types, value categories included, that a test passes. A test that passes a
// new list fails to link, naming the create() it needs: add that instantiation there.
//
// Nothing here judges: each member forwards the call, its arguments as they were given (an rvalue
// stays an rvalue) and its outcome (value or exception) unchanged. The seam's own heap block is
// taken outside the count of a failing heap (failing_new.hpp), as in pool_under_test.hpp.
#pragma once

#include <cstddef>
#include <memory>

namespace alloclab::test::pool {

/// The learner's ObjectPool<T>: each member calls the member of the same name.
template <class T>
class ObjectPool {
 public:
  /// Calls the learner's constructor without an argument, so that its default is the one used.
  ObjectPool();
  explicit ObjectPool(std::size_t objects_per_chunk);
  ~ObjectPool();
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;

  template <class... Args>
  [[nodiscard]] T* create(Args&&... args);
  void destroy(T* p);
  [[nodiscard]] std::size_t live() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

}  // namespace alloclab::test::pool
