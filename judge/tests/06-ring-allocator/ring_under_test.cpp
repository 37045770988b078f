// The stage file that calls the learner's header: each member of the tests' RingBumpAllocator
// (ring_under_test.hpp) calls the learner's member of the same name. An edit of the header
// recompiles this file and header_in_a_second_unit.cpp, and no stage file.
#include "ring_allocator.hpp"

#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <utility>

#include "ring_under_test.hpp"

namespace alloclab::test::ring {

using LearnersRing = ::alloclab::RingBumpAllocator;

struct RingBumpAllocator::Learners {
  LearnersRing r;
  explicit Learners(std::size_t capacity) : r(capacity) {}
};

Copyability traits_of_the_ring() { return copyability_of<LearnersRing>(); }

// The learner's constructor runs before the pointer owns it, so a constructor that throws leaves
// nothing behind, as it would with the learner's type on the stack.
RingBumpAllocator::RingBumpAllocator(std::size_t capacity) : learners_(std::make_unique<Learners>(capacity)) {}
RingBumpAllocator::~RingBumpAllocator() = default;

void* RingBumpAllocator::allocate(std::size_t n) { return learners_->r.allocate(n); }
void* RingBumpAllocator::allocate(std::size_t n, std::size_t align) { return learners_->r.allocate(n, align); }
void RingBumpAllocator::reclaim(std::uint64_t c) { learners_->r.reclaim(c); }

// The observers are called on a const ring, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
std::uint64_t RingBumpAllocator::checkpoint() const { return std::as_const(learners_->r).checkpoint(); }
std::size_t RingBumpAllocator::capacity() const { return std::as_const(learners_->r).capacity(); }
std::size_t RingBumpAllocator::in_use() const { return std::as_const(learners_->r).in_use(); }

namespace {

constexpr std::align_val_t kPlacement{alignof(LearnersRing) > 64 ? alignof(LearnersRing) : 64};

LearnersRing& placed(unsigned char* storage) { return *std::launder(reinterpret_cast<LearnersRing*>(storage)); }

}  // namespace

RingInPlace::RingInPlace(std::size_t capacity)
    : storage_(static_cast<unsigned char*>(::operator new(sizeof(LearnersRing), kPlacement))) {
  std::memset(storage_, 0xA5, sizeof(LearnersRing));
  try {
    ::new (static_cast<void*>(storage_)) LearnersRing(capacity);
  } catch (...) {
    ::operator delete(storage_, kPlacement);
    throw;
  }
}

RingInPlace::~RingInPlace() {
  std::destroy_at(&placed(storage_));
  ::operator delete(storage_, kPlacement);
}

std::span<const unsigned char> RingInPlace::bytes() const { return {storage_, sizeof(LearnersRing)}; }
void* RingInPlace::allocate(std::size_t n, std::size_t align) { return placed(storage_).allocate(n, align); }
std::uint64_t RingInPlace::checkpoint() const { return std::as_const(placed(storage_)).checkpoint(); }
void RingInPlace::reclaim(std::uint64_t c) { placed(storage_).reclaim(c); }

}  // namespace alloclab::test::ring
