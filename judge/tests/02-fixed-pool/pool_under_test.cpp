// The test file that calls the learner's FixedPool and SharedFixedPool: each member of the tests'
// pools (pool_under_test.hpp) calls the learner's member of the same name.
#include "fixed_pool.hpp"

#include <cstddef>
#include <optional>
#include <utility>

#include "failing_new.hpp"
#include "pool_under_test.hpp"

namespace alloclab::test::pool {

namespace {

template <Kind K>
struct Theirs {
  using type = ::alloclab::FixedPool;
};
template <>
struct Theirs<Kind::shared> {
  using type = ::alloclab::SharedFixedPool;
};

}  // namespace

Copyability traits_of(Kind kind) {
  return kind == Kind::fixed ? copyability_of<Theirs<Kind::fixed>::type>()
                              : copyability_of<Theirs<Kind::shared>::type>();
}

template <Kind K>
struct PoolUnderTest<K>::Learners {
  std::optional<typename Theirs<K>::type> p;
};

// The learner's constructor runs into a holder the seam already has, so a constructor that throws
// leaves nothing behind, as it would with the learner's type on the stack.
template <Kind K>
PoolUnderTest<K>::PoolUnderTest(std::size_t block_size) : learners_(uncounted_holder<Learners>()) {
  learners_->p.emplace(block_size);
}
template <Kind K>
PoolUnderTest<K>::PoolUnderTest(std::size_t block_size, std::size_t blocks_per_chunk)
    : learners_(uncounted_holder<Learners>()) {
  learners_->p.emplace(block_size, blocks_per_chunk);
}
template <Kind K>
PoolUnderTest<K>::PoolUnderTest(std::size_t block_size, std::size_t blocks_per_chunk, std::size_t max_chunks)
    : learners_(uncounted_holder<Learners>()) {
  learners_->p.emplace(block_size, blocks_per_chunk, max_chunks);
}
template <Kind K>
PoolUnderTest<K>::~PoolUnderTest() = default;

template <Kind K>
void* PoolUnderTest<K>::allocate() {
  return learners_->p->allocate();
}
template <Kind K>
void PoolUnderTest<K>::deallocate(void* p) {
  learners_->p->deallocate(p);
}

// The observers are called on a const pool, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
template <Kind K>
bool PoolUnderTest<K>::owns(const void* p) const {
  return std::as_const(*learners_->p).owns(p);
}
template <Kind K>
std::size_t PoolUnderTest<K>::block_size() const {
  return std::as_const(*learners_->p).block_size();
}
template <Kind K>
std::size_t PoolUnderTest<K>::blocks_per_chunk() const {
  return std::as_const(*learners_->p).blocks_per_chunk();
}
template <Kind K>
std::size_t PoolUnderTest<K>::chunk_count() const {
  return std::as_const(*learners_->p).chunk_count();
}
template <Kind K>
std::size_t PoolUnderTest<K>::free_blocks() const {
  return std::as_const(*learners_->p).free_blocks();
}
template <Kind K>
std::size_t PoolUnderTest<K>::capacity() const {
  return std::as_const(*learners_->p).capacity();
}

template class PoolUnderTest<Kind::fixed>;
template class PoolUnderTest<Kind::shared>;

}  // namespace alloclab::test::pool
