// The learner's caching allocator as exercise 04's tests see it: a class template and value types
// of the same names, members and signatures, in the tests' own namespace, whose every member calls
// the learner's through one file, caching_under_test.cpp, the only test file that calls
// caching_allocator.hpp.
//
// Why: the test files are most of what a judge compiles (04's are the longest of the kit), and
// none of them changes when the learner's header does. Behind this seam they are compiled once per
// build tree; an edit of the header recompiles that small file (and header_in_a_second_unit.cpp,
// beside it). The learner's class template is instantiated once, for AnyDevice below, behind
// which each test's device (TestDevice, InstantDevice, the model's Device) answers.
//
// Nothing here judges: every member forwards the call, its arguments and its outcome unchanged.
// The learner's values are copied field by field into the types below; the learner's
// OutOfMemoryError is thrown on as the one below, with the same what(), and any other exception
// as it is. None of that takes heap memory inside a call, so a failing heap (failing_new.hpp)
// meets the learner's allocations only. What a test asserts about the learner's types themselves
// (that the allocator cannot be copied, what a BlockInfo of three fields holds) is read in
// caching_under_test.cpp, where they are complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "copyability.hpp"

namespace alloclab::test::caching {

/// The learner's CacheStats, field by field.
struct CacheStats {
  std::size_t allocated_bytes, reserved_bytes, peak_allocated_bytes, peak_reserved_bytes;
  std::size_t device_mallocs, device_frees, cache_hits, oom_retries;
};

/// The learner's BlockInfo, field by field.
struct BlockInfo {
  std::size_t offset, size;
  bool allocated;
  bool pending = false;
};

/// The learner's SegmentInfo, field by field.
struct SegmentInfo {
  std::uintptr_t base;
  std::size_t size;
  bool small_pool;
  std::vector<BlockInfo> blocks;
};

/// Thrown where the learner's allocator threw its alloclab::OutOfMemoryError: a std::bad_alloc
/// whose what() is the learner's, kept in a char array as the learner's own must be.
class OutOfMemoryError : public std::bad_alloc {
 public:
  explicit OutOfMemoryError(const char* learners_what) noexcept;
  [[nodiscard]] const char* what() const noexcept override { return what_; }

 private:
  char what_[4096];
};

/// Whether the learner's CachingAllocator can be copied, read in caching_under_test.cpp.
[[nodiscard]] Copyability traits_of_the_allocator();

/// `pending` of the learner's `BlockInfo{0, 512, false}`: a BlockInfo built from three fields.
[[nodiscard]] bool pending_of_a_block_info_of_three_fields();

/// The device the learner's allocator is instantiated for, once: CachingAllocator<AnyDevice>.
/// Each call goes on to the test's own device (DeviceOf below), whatever its type. It has the
/// device calls of the contract and nothing else, so a header that calls anything more of its
/// device does not compile, and it cannot be copied, as no device of the tests can.
class AnyDevice {
 public:
  AnyDevice() = default;
  AnyDevice(const AnyDevice&) = delete;
  AnyDevice& operator=(const AnyDevice&) = delete;

  virtual void* malloc(std::size_t n) noexcept = 0;
  virtual void free(void* p) noexcept = 0;
  virtual int record_event(int stream) noexcept = 0;
  virtual bool event_done(int event) noexcept = 0;
  virtual void synchronize() noexcept = 0;

 protected:
  ~AnyDevice() = default;
};

/// A test's device of type D, as an AnyDevice.
template <class D>
class DeviceOf final : public AnyDevice {
 public:
  explicit DeviceOf(D& device) noexcept : device_(device) {}
  void* malloc(std::size_t n) noexcept override { return device_.malloc(n); }
  void free(void* p) noexcept override { device_.free(p); }
  int record_event(int stream) noexcept override { return device_.record_event(stream); }
  bool event_done(int event) noexcept override { return device_.event_done(event); }
  void synchronize() noexcept override { device_.synchronize(); }

 private:
  D& device_;
};

/// The learner's CachingAllocator<AnyDevice>: each member calls the member of the same name.
class CachingAllocatorOnAnyDevice {
 public:
  explicit CachingAllocatorOnAnyDevice(AnyDevice& device);
  ~CachingAllocatorOnAnyDevice();
  CachingAllocatorOnAnyDevice(const CachingAllocatorOnAnyDevice&) = delete;
  CachingAllocatorOnAnyDevice& operator=(const CachingAllocatorOnAnyDevice&) = delete;

  [[nodiscard]] static std::size_t round_size(std::size_t n);
  /// Calls the learner's allocate with one argument, so that its default stream is the one used.
  [[nodiscard]] void* allocate(std::size_t n);
  [[nodiscard]] void* allocate(std::size_t n, int stream);
  void deallocate(void* p);
  void record_stream(void* p, int stream);
  [[nodiscard]] std::size_t pending_bytes() const;
  void empty_cache();
  [[nodiscard]] CacheStats stats() const;
  [[nodiscard]] std::vector<SegmentInfo> snapshot() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

namespace detail {
// A base, so that the device is built before the allocator that is given it, and outlives it.
template <class D>
struct DeviceHolder {
  explicit DeviceHolder(D& device) noexcept : any_device(device) {}
  DeviceOf<D> any_device;
};
}  // namespace detail

/// The learner's allocator over a test's device of type D (TestDevice, InstantDevice, the model's
/// Device): the learner's CachingAllocator<AnyDevice>, over that device.
template <class D>
class CachingAllocator : private detail::DeviceHolder<D>, public CachingAllocatorOnAnyDevice {
 public:
  explicit CachingAllocator(D& device)
      : detail::DeviceHolder<D>(device), CachingAllocatorOnAnyDevice(this->any_device) {}
};

}  // namespace alloclab::test::caching
