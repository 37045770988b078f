// The test file that calls the learner's ArenaResource: each member of the tests' ArenaResource
// (arena_resource_under_test.hpp) calls the learner's member of the same name. An edit of the
// header recompiles this file with the other files that include it, and not stages 3 and 4.
#include "aligned_allocator.hpp"

#include <cstdlib>
#include <memory_resource>
#include <new>
#include <optional>
#include <utility>

#include "arena_resource_under_test.hpp"

namespace alloclab::test::aligned {

using LearnersArena = ::alloclab::ArenaResource;

Copyability traits_of_the_arena_resource() { return copyability_of<LearnersArena>(); }

struct ArenaResource::Learners {
  std::optional<LearnersArena> r;
};

// The room for the learner's resource comes from malloc: the tests' heap log (heap_log.cpp)
// records the global operator new and delete, and the arena's tests count them, so the seam's
// own block must not be among them. The room is left as the heap gave it (default-initialized),
// so that a member the learner's constructor forgets reads garbage, as it would anywhere else.
template <class... Args>
ArenaResource::Learners* ArenaResource::built(Args... args) {
  void* room = std::malloc(sizeof(ArenaResource::Learners));
  if (room == nullptr) throw std::bad_alloc();
  auto* learners = ::new (room) ArenaResource::Learners;
  try {
    learners->r.emplace(args...);
  } catch (...) {
    learners->~Learners();
    std::free(room);
    throw;
  }
  return learners;
}

ArenaResource::ArenaResource(void* buffer, std::size_t size) : learners_(built(buffer, size)) {}
ArenaResource::ArenaResource(void* buffer, std::size_t size, std::pmr::memory_resource* upstream)
    : learners_(built(buffer, size, upstream)) {}
ArenaResource::~ArenaResource() {
  learners_->~Learners();
  std::free(learners_);
}

// The observers are called on a const resource, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
std::size_t ArenaResource::used() const { return std::as_const(*learners_->r).used(); }
std::size_t ArenaResource::upstream_bytes() const { return std::as_const(*learners_->r).upstream_bytes(); }
void ArenaResource::release() { learners_->r->release(); }

// Without the sanitizer's check that the block is aligned as asked (libstdc++ declares
// memory_resource::allocate's result so): a test that reads a misaligned block through
// allocate_unchecked says what is wrong with it, as it did calling the learner's resource itself.
#if defined(__clang__)
[[clang::no_sanitize("alignment")]]
#endif
void* ArenaResource::do_allocate(std::size_t bytes, std::size_t alignment) {
  return learners_->r->allocate(bytes, alignment);
}
void ArenaResource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  learners_->r->deallocate(p, bytes, alignment);
}
bool ArenaResource::do_is_equal(const std::pmr::memory_resource& other) const noexcept {
  const auto* seam = dynamic_cast<const ArenaResource*>(&other);
  const std::pmr::memory_resource& theirs = seam != nullptr ? *seam->learners_->r : other;
  return std::as_const(*learners_->r).is_equal(theirs);
}

}  // namespace alloclab::test::aligned
