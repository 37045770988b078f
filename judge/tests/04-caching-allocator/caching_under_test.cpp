// The test file that calls the learner's header: each member of the tests' CachingAllocatorOnAnyDevice
// (caching_under_test.hpp) calls the learner's member of the same name. An edit of the header
// recompiles this file and header_in_a_second_unit.cpp, and no other test file.
#include "caching_allocator.hpp"

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "caching_under_test.hpp"
#include "failing_new.hpp"

namespace alloclab::test::caching {

OutOfMemoryError::OutOfMemoryError(const char* learners_what) noexcept : what_{} {
  for (std::size_t i = 0; learners_what != nullptr && i + 1 < sizeof what_ && learners_what[i] != '\0'; ++i)
    what_[i] = learners_what[i];
}

namespace {

// Calls `call`, and throws the learner's OutOfMemoryError on as the tests' own; every other
// outcome, value or exception, passes unchanged.
template <class Call>
decltype(auto) translated(Call&& call) {
  try {
    return std::forward<Call>(call)();
  } catch (const ::alloclab::OutOfMemoryError& e) {
    throw OutOfMemoryError(e.what());
  }
}

CacheStats copied(const ::alloclab::CacheStats& s) {
  return {s.allocated_bytes, s.reserved_bytes, s.peak_allocated_bytes, s.peak_reserved_bytes,
          s.device_mallocs,  s.device_frees,   s.cache_hits,           s.oom_retries};
}

}  // namespace

using LearnersAllocator = ::alloclab::CachingAllocator<AnyDevice>;

Copyability traits_of_the_allocator() { return copyability_of<LearnersAllocator>(); }

bool pending_of_a_block_info_of_three_fields() {
  const ::alloclab::BlockInfo info{0, 512, false};
  return info.pending;
}

struct CachingAllocatorOnAnyDevice::Learners {
  std::optional<LearnersAllocator> a;
};

// The learner's constructor runs into a holder taken outside a failing heap's count, so that a
// test failing the Nth allocation of the constructor fails the learner's Nth.
CachingAllocatorOnAnyDevice::CachingAllocatorOnAnyDevice(AnyDevice& device)
    : learners_(uncounted_holder<Learners>()) {
  translated([&] { learners_->a.emplace(device); });
}
CachingAllocatorOnAnyDevice::~CachingAllocatorOnAnyDevice() = default;

std::size_t CachingAllocatorOnAnyDevice::round_size(std::size_t n) { return LearnersAllocator::round_size(n); }
void* CachingAllocatorOnAnyDevice::allocate(std::size_t n) {
  return translated([&] { return learners_->a->allocate(n); });
}
void* CachingAllocatorOnAnyDevice::allocate(std::size_t n, int stream) {
  return translated([&] { return learners_->a->allocate(n, stream); });
}
void CachingAllocatorOnAnyDevice::deallocate(void* p) {
  translated([&] { learners_->a->deallocate(p); });
}
void CachingAllocatorOnAnyDevice::record_stream(void* p, int stream) {
  translated([&] { learners_->a->record_stream(p, stream); });
}
void CachingAllocatorOnAnyDevice::empty_cache() {
  translated([&] { learners_->a->empty_cache(); });
}

// The observers are called on a const allocator, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
std::size_t CachingAllocatorOnAnyDevice::pending_bytes() const { return std::as_const(*learners_->a).pending_bytes(); }
CacheStats CachingAllocatorOnAnyDevice::stats() const { return copied(std::as_const(*learners_->a).stats()); }
std::vector<SegmentInfo> CachingAllocatorOnAnyDevice::snapshot() const {
  const std::vector<::alloclab::SegmentInfo> learners =
      translated([&] { return std::as_const(*learners_->a).snapshot(); });
  std::vector<SegmentInfo> out;
  out.reserve(learners.size());
  for (const auto& seg : learners) {
    SegmentInfo s{seg.base, seg.size, seg.small_pool, {}};
    s.blocks.reserve(seg.blocks.size());
    for (const auto& b : seg.blocks) s.blocks.push_back({b.offset, b.size, b.allocated, b.pending});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace alloclab::test::caching
