// The learner's classes of exercise 08 as the tests see them: classes of the same names and
// signatures, in the tests' own namespace, whose every member calls the learner's through one
// file, vm_under_test.cpp, the only test file that includes virtual_memory.hpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam they are compiled once per build tree; an edit of the
// header recompiles that small file (and header_in_a_second_unit.cpp, beside it).
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged. A class that hands out another by reference (`range()`, `segment()`,
// `memory()`) hands out the seam's view of the learner's object it returned.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "copyability.hpp"

namespace alloclab::test::vm {

/// The learner's object a seam's view shows (one the learner's code owns and returned by reference).
struct ViewOf {
  const void* learners;
};

/// Whether the learner's PhysicalMemory and AddressRange can be copied (read where they are complete).
[[nodiscard]] Copyability traits_of_the_memory();
[[nodiscard]] Copyability traits_of_the_range();

/// The learner's PhysicalMemory.
class PhysicalMemory {
 public:
  PhysicalMemory(std::size_t granule_bytes, std::size_t num_granules);
  ~PhysicalMemory();
  PhysicalMemory(const PhysicalMemory&) = delete;
  PhysicalMemory& operator=(const PhysicalMemory&) = delete;

  [[nodiscard]] std::optional<std::size_t> create();
  void retain(std::size_t g);
  void release(std::size_t g);
  [[nodiscard]] std::size_t refcount(std::size_t g) const;
  [[nodiscard]] std::size_t committed_bytes() const;
  [[nodiscard]] std::size_t granule_bytes() const;
  [[nodiscard]] std::size_t num_granules() const;
  [[nodiscard]] std::size_t num_in_use() const;
  [[nodiscard]] std::size_t num_free() const;
  [[nodiscard]] int fd() const;
  [[nodiscard]] off_t offset(std::size_t g) const;

  struct Learners;
  /// The learner's object, for the other classes of the seam.
  [[nodiscard]] Learners& learners() const { return *learners_; }

 private:
  std::unique_ptr<Learners> learners_;
};

/// The learner's AddressRange: one of the test's own, or a view of one the learner's
/// ExpandableSegment or ContiguousKVCache returned (whose members that change it are not reached:
/// the learner's returns it const).
class AddressRange {
 public:
  AddressRange(PhysicalMemory& memory, std::size_t slots);
  ~AddressRange();
  AddressRange(const AddressRange&) = delete;
  AddressRange& operator=(const AddressRange&) = delete;

  void map(std::size_t slot, std::size_t g);
  std::size_t unmap(std::size_t slot);
  [[nodiscard]] std::optional<std::size_t> mapped(std::size_t slot) const;
  [[nodiscard]] std::byte* address(std::size_t slot) const;
  [[nodiscard]] std::byte* base() const;
  [[nodiscard]] std::size_t slots() const;
  [[nodiscard]] std::size_t bytes() const;
  [[nodiscard]] std::size_t num_mapped() const;
  [[nodiscard]] std::size_t map_calls() const;
  [[nodiscard]] std::size_t unmap_calls() const;
  [[nodiscard]] PhysicalMemory& memory() const;

  struct Learners;
  /// A view of a range the learner's code owns (a const AddressRange of the learner's).
  AddressRange(PhysicalMemory& memory, ViewOf view);

 private:
  PhysicalMemory* memory_;
  std::unique_ptr<Learners> learners_;
};

/// The learner's ExpandableSegment.
class ExpandableSegment {
 public:
  ExpandableSegment(PhysicalMemory& memory, std::size_t max_bytes);
  ~ExpandableSegment();
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  [[nodiscard]] bool map(std::size_t offset, std::size_t bytes);
  std::size_t unmap(std::size_t offset, std::size_t bytes);
  [[nodiscard]] bool is_mapped(std::size_t offset) const;
  [[nodiscard]] std::byte* base() const;
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::size_t granule_bytes() const;
  [[nodiscard]] std::size_t mapped_bytes() const;
  [[nodiscard]] const AddressRange& range() const;

  struct Learners;
  /// A view of a segment the learner's SegmentAllocator owns.
  ExpandableSegment(PhysicalMemory& memory, ViewOf view);

 private:
  std::unique_ptr<Learners> learners_;
  std::unique_ptr<AddressRange> range_;
};

/// The learner's SegmentAllocator.
class SegmentAllocator {
 public:
  static constexpr std::size_t kAlignment = 512;

  SegmentAllocator(PhysicalMemory& memory, std::size_t max_bytes);
  ~SegmentAllocator();
  SegmentAllocator(const SegmentAllocator&) = delete;
  SegmentAllocator& operator=(const SegmentAllocator&) = delete;

  [[nodiscard]] std::byte* allocate(std::size_t bytes);
  void deallocate(std::byte* p);
  std::size_t empty_cache();
  [[nodiscard]] std::size_t mapped_bytes() const;
  [[nodiscard]] std::size_t allocated_bytes() const;
  [[nodiscard]] const ExpandableSegment& segment() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
  std::unique_ptr<ExpandableSegment> segment_;
};

/// The learner's ContiguousKVCache.
class ContiguousKVCache {
 public:
  using RequestId = int;

  ContiguousKVCache(PhysicalMemory& memory, std::size_t max_sequences, std::size_t max_tokens, std::size_t token_bytes);
  ~ContiguousKVCache();
  ContiguousKVCache(const ContiguousKVCache&) = delete;
  ContiguousKVCache& operator=(const ContiguousKVCache&) = delete;

  [[nodiscard]] bool admit(RequestId r, std::size_t tokens);
  [[nodiscard]] bool grow(RequestId r, std::size_t tokens);
  [[nodiscard]] bool fork(RequestId parent, RequestId child);
  void release(RequestId r);
  std::size_t trim();
  void sleep(std::span<const RequestId> keep = {});
  [[nodiscard]] bool wake();
  [[nodiscard]] std::byte* data(RequestId r) const;
  [[nodiscard]] std::size_t num_tokens(RequestId r) const;
  [[nodiscard]] std::size_t slice_of(RequestId r) const;
  [[nodiscard]] bool asleep() const;
  [[nodiscard]] std::size_t num_sequences() const;
  [[nodiscard]] std::size_t max_sequences() const;
  [[nodiscard]] std::size_t max_tokens() const;
  [[nodiscard]] std::size_t token_bytes() const;
  [[nodiscard]] std::size_t slice_granules() const;
  [[nodiscard]] std::size_t slice_bytes() const;
  [[nodiscard]] std::size_t mapped_granules() const;
  [[nodiscard]] std::size_t idle_granules() const;
  [[nodiscard]] const AddressRange& range() const;
  [[nodiscard]] const PhysicalMemory& memory() const;

 private:
  PhysicalMemory* memory_;
  struct Learners;
  std::unique_ptr<Learners> learners_;
  std::unique_ptr<AddressRange> range_;
};

/// The learner's PageReserve.
class PageReserve {
 public:
  PageReserve(PhysicalMemory& memory, std::size_t pages, std::size_t low, std::size_t high,
              std::function<void(std::size_t)> before_map = {});
  ~PageReserve();
  PageReserve(const PageReserve&) = delete;
  PageReserve& operator=(const PageReserve&) = delete;

  [[nodiscard]] std::optional<std::size_t> acquire();
  void give_back(std::size_t page);
  void settle();
  [[nodiscard]] std::byte* address(std::size_t page) const;
  [[nodiscard]] std::size_t ready() const;
  [[nodiscard]] std::size_t in_use() const;
  [[nodiscard]] std::size_t slow_maps() const;
  [[nodiscard]] std::size_t pages() const;
  [[nodiscard]] std::size_t page_bytes() const;

 private:
  struct Learners;
  std::unique_ptr<Learners> learners_;
};

}  // namespace alloclab::test::vm
