// The learner's FixedPool and SharedFixedPool as exercise 02's tests of them see them: classes of
// the same names and signatures, in the tests' own namespace, whose every member calls the
// learner's through one file, pool_under_test.cpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam stages 1, 2 and 4 are compiled once per build tree, the
// ThreadSanitizer tree's too. ObjectPool<T> has a seam of its own (object_pool_under_test.hpp), so
// an edit recompiles the two seams and header_in_a_second_unit.cpp, and no stage file.
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged. The seam's own heap block (the one that holds the learner's pool) is taken
// outside the count of a failing heap (failing_new.hpp), so a test that fails the Nth allocation
// of a constructor still fails the learner's Nth. What a test asserts about the learner's type
// itself (that it cannot be copied) is read in pool_under_test.cpp, where the type is complete.
#pragma once

#include <cstddef>
#include <memory>

#include "copyability.hpp"

namespace alloclab::test::pool {

/// Which of the learner's pools.
enum class Kind { fixed, shared };

/// The learner's FixedPool (Kind::fixed) or SharedFixedPool (Kind::shared): each member calls
/// the member of the same name.
template <Kind K>
class PoolUnderTest {
 public:
  /// Each constructor calls the learner's with as many arguments, so that its defaults are the
  /// ones used.
  explicit PoolUnderTest(std::size_t block_size);
  PoolUnderTest(std::size_t block_size, std::size_t blocks_per_chunk);
  PoolUnderTest(std::size_t block_size, std::size_t blocks_per_chunk, std::size_t max_chunks);
  ~PoolUnderTest();
  PoolUnderTest(const PoolUnderTest&) = delete;
  PoolUnderTest& operator=(const PoolUnderTest&) = delete;

  [[nodiscard]] void* allocate();
  void deallocate(void* p);
  [[nodiscard]] bool owns(const void* p) const;
  [[nodiscard]] std::size_t block_size() const;
  [[nodiscard]] std::size_t blocks_per_chunk() const;
  [[nodiscard]] std::size_t chunk_count() const;
  [[nodiscard]] std::size_t free_blocks() const;
  [[nodiscard]] std::size_t capacity() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

using FixedPool = PoolUnderTest<Kind::fixed>;
using SharedFixedPool = PoolUnderTest<Kind::shared>;
extern template class PoolUnderTest<Kind::fixed>;
extern template class PoolUnderTest<Kind::shared>;

/// Whether the learner's pool of that kind can be copied, read in pool_under_test.cpp.
[[nodiscard]] Copyability traits_of(Kind kind);

}  // namespace alloclab::test::pool
