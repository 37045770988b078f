// The test file that calls the learner's header: each member of the tests' classes
// (vm_under_test.hpp) calls the learner's member of the same name. An edit of the header
// recompiles this file and header_in_a_second_unit.cpp, and no test.
#include "virtual_memory.hpp"

#include <optional>
#include <stdexcept>
#include <utility>

#include "vm_under_test.hpp"

namespace alloclab::test::vm {

namespace L = ::alloclab;

Copyability traits_of_the_memory() { return copyability_of<L::PhysicalMemory>(); }
Copyability traits_of_the_range() { return copyability_of<L::AddressRange>(); }

// Each learner's object is built before the pointer owns it, so a constructor that throws leaves
// nothing behind, as it would with the learner's type on the stack. The observers are called on a
// const object, as a caller holding a const reference would: an observer the learner did not
// declare const does not compile here.

struct PhysicalMemory::Learners {
  L::PhysicalMemory m;
  Learners(std::size_t granule_bytes, std::size_t num_granules) : m(granule_bytes, num_granules) {}
};

PhysicalMemory::PhysicalMemory(std::size_t granule_bytes, std::size_t num_granules)
    : learners_(std::make_unique<Learners>(granule_bytes, num_granules)) {}
PhysicalMemory::~PhysicalMemory() = default;
std::optional<std::size_t> PhysicalMemory::create() { return learners_->m.create(); }
void PhysicalMemory::retain(std::size_t g) { learners_->m.retain(g); }
void PhysicalMemory::release(std::size_t g) { learners_->m.release(g); }
std::size_t PhysicalMemory::refcount(std::size_t g) const { return std::as_const(learners_->m).refcount(g); }
std::size_t PhysicalMemory::committed_bytes() const { return std::as_const(learners_->m).committed_bytes(); }
std::size_t PhysicalMemory::granule_bytes() const { return std::as_const(learners_->m).granule_bytes(); }
std::size_t PhysicalMemory::num_granules() const { return std::as_const(learners_->m).num_granules(); }
std::size_t PhysicalMemory::num_in_use() const { return std::as_const(learners_->m).num_in_use(); }
std::size_t PhysicalMemory::num_free() const { return std::as_const(learners_->m).num_free(); }
int PhysicalMemory::fd() const { return std::as_const(learners_->m).fd(); }
off_t PhysicalMemory::offset(std::size_t g) const { return std::as_const(learners_->m).offset(g); }

namespace {

// What a learner's object hands out by reference must be the object it was built on: the seam
// can only show the test's own PhysicalMemory.
PhysicalMemory& same_memory(PhysicalMemory* seam, const L::PhysicalMemory& learners, const char* what) {
  if (&learners != &seam->learners().m)
    throw std::logic_error(std::string(what) + " returned another PhysicalMemory than the one it was built on");
  return *seam;
}

}  // namespace

struct AddressRange::Learners {
  std::optional<L::AddressRange> own;
  L::AddressRange* r = nullptr;
};

AddressRange::AddressRange(PhysicalMemory& memory, std::size_t slots)
    : memory_(&memory), learners_(std::make_unique<Learners>()) {
  learners_->own.emplace(memory.learners().m, slots);
  learners_->r = &*learners_->own;
}
AddressRange::AddressRange(PhysicalMemory& memory, ViewOf view)
    : memory_(&memory), learners_(std::make_unique<Learners>()) {
  // Reached only through a const reference: the members that change the range are not called.
  learners_->r = const_cast<L::AddressRange*>(static_cast<const L::AddressRange*>(view.learners));
}
AddressRange::~AddressRange() = default;
void AddressRange::map(std::size_t slot, std::size_t g) { learners_->r->map(slot, g); }
std::size_t AddressRange::unmap(std::size_t slot) { return learners_->r->unmap(slot); }
std::optional<std::size_t> AddressRange::mapped(std::size_t slot) const { return std::as_const(*learners_->r).mapped(slot); }
std::byte* AddressRange::address(std::size_t slot) const { return std::as_const(*learners_->r).address(slot); }
std::byte* AddressRange::base() const { return std::as_const(*learners_->r).base(); }
std::size_t AddressRange::slots() const { return std::as_const(*learners_->r).slots(); }
std::size_t AddressRange::bytes() const { return std::as_const(*learners_->r).bytes(); }
std::size_t AddressRange::num_mapped() const { return std::as_const(*learners_->r).num_mapped(); }
std::size_t AddressRange::map_calls() const { return std::as_const(*learners_->r).map_calls(); }
std::size_t AddressRange::unmap_calls() const { return std::as_const(*learners_->r).unmap_calls(); }
PhysicalMemory& AddressRange::memory() const {
  return same_memory(memory_, std::as_const(*learners_->r).memory(), "AddressRange::memory()");
}

struct ExpandableSegment::Learners {
  std::optional<L::ExpandableSegment> own;
  L::ExpandableSegment* s = nullptr;
};

ExpandableSegment::ExpandableSegment(PhysicalMemory& memory, std::size_t max_bytes)
    : learners_(std::make_unique<Learners>()) {
  learners_->own.emplace(memory.learners().m, max_bytes);
  learners_->s = &*learners_->own;
  range_ = std::make_unique<AddressRange>(memory, ViewOf{&std::as_const(*learners_->s).range()});
}
ExpandableSegment::ExpandableSegment(PhysicalMemory& memory, ViewOf view)
    : learners_(std::make_unique<Learners>()) {
  learners_->s = const_cast<L::ExpandableSegment*>(static_cast<const L::ExpandableSegment*>(view.learners));
  range_ = std::make_unique<AddressRange>(memory, ViewOf{&std::as_const(*learners_->s).range()});
}
ExpandableSegment::~ExpandableSegment() = default;
bool ExpandableSegment::map(std::size_t offset, std::size_t bytes) { return learners_->s->map(offset, bytes); }
std::size_t ExpandableSegment::unmap(std::size_t offset, std::size_t bytes) { return learners_->s->unmap(offset, bytes); }
bool ExpandableSegment::is_mapped(std::size_t offset) const { return std::as_const(*learners_->s).is_mapped(offset); }
std::byte* ExpandableSegment::base() const { return std::as_const(*learners_->s).base(); }
std::size_t ExpandableSegment::size() const { return std::as_const(*learners_->s).size(); }
std::size_t ExpandableSegment::granule_bytes() const { return std::as_const(*learners_->s).granule_bytes(); }
std::size_t ExpandableSegment::mapped_bytes() const { return std::as_const(*learners_->s).mapped_bytes(); }
const AddressRange& ExpandableSegment::range() const { return *range_; }

struct SegmentAllocator::Learners {
  L::SegmentAllocator a;
  Learners(L::PhysicalMemory& memory, std::size_t max_bytes) : a(memory, max_bytes) {}
};

static_assert(L::SegmentAllocator::kAlignment == SegmentAllocator::kAlignment,
              "SegmentAllocator::kAlignment is 512, as the skeleton declares it: keep every declaration of "
              "virtual_memory.hpp as it is.");

SegmentAllocator::SegmentAllocator(PhysicalMemory& memory, std::size_t max_bytes)
    : learners_(std::make_unique<Learners>(memory.learners().m, max_bytes)),
      segment_(std::make_unique<ExpandableSegment>(memory, ViewOf{&std::as_const(learners_->a).segment()})) {}
SegmentAllocator::~SegmentAllocator() = default;
std::byte* SegmentAllocator::allocate(std::size_t bytes) { return learners_->a.allocate(bytes); }
void SegmentAllocator::deallocate(std::byte* p) { learners_->a.deallocate(p); }
std::size_t SegmentAllocator::empty_cache() { return learners_->a.empty_cache(); }
std::size_t SegmentAllocator::mapped_bytes() const { return std::as_const(learners_->a).mapped_bytes(); }
std::size_t SegmentAllocator::allocated_bytes() const { return std::as_const(learners_->a).allocated_bytes(); }
const ExpandableSegment& SegmentAllocator::segment() const { return *segment_; }

struct ContiguousKVCache::Learners {
  L::ContiguousKVCache c;
  Learners(L::PhysicalMemory& memory, std::size_t sequences, std::size_t tokens, std::size_t token_bytes)
      : c(memory, sequences, tokens, token_bytes) {}
};

ContiguousKVCache::ContiguousKVCache(PhysicalMemory& memory, std::size_t max_sequences, std::size_t max_tokens,
                                     std::size_t token_bytes)
    : memory_(&memory),
      learners_(std::make_unique<Learners>(memory.learners().m, max_sequences, max_tokens, token_bytes)),
      range_(std::make_unique<AddressRange>(memory, ViewOf{&std::as_const(learners_->c).range()})) {}
ContiguousKVCache::~ContiguousKVCache() = default;
bool ContiguousKVCache::admit(RequestId r, std::size_t tokens) { return learners_->c.admit(r, tokens); }
bool ContiguousKVCache::grow(RequestId r, std::size_t tokens) { return learners_->c.grow(r, tokens); }
bool ContiguousKVCache::fork(RequestId parent, RequestId child) { return learners_->c.fork(parent, child); }
void ContiguousKVCache::release(RequestId r) { learners_->c.release(r); }
std::size_t ContiguousKVCache::trim() { return learners_->c.trim(); }
void ContiguousKVCache::sleep(std::span<const RequestId> keep) { learners_->c.sleep(keep); }
bool ContiguousKVCache::wake() { return learners_->c.wake(); }
std::byte* ContiguousKVCache::data(RequestId r) const { return std::as_const(learners_->c).data(r); }
std::size_t ContiguousKVCache::num_tokens(RequestId r) const { return std::as_const(learners_->c).num_tokens(r); }
std::size_t ContiguousKVCache::slice_of(RequestId r) const { return std::as_const(learners_->c).slice_of(r); }
bool ContiguousKVCache::asleep() const { return std::as_const(learners_->c).asleep(); }
std::size_t ContiguousKVCache::num_sequences() const { return std::as_const(learners_->c).num_sequences(); }
std::size_t ContiguousKVCache::max_sequences() const { return std::as_const(learners_->c).max_sequences(); }
std::size_t ContiguousKVCache::max_tokens() const { return std::as_const(learners_->c).max_tokens(); }
std::size_t ContiguousKVCache::token_bytes() const { return std::as_const(learners_->c).token_bytes(); }
std::size_t ContiguousKVCache::slice_granules() const { return std::as_const(learners_->c).slice_granules(); }
std::size_t ContiguousKVCache::slice_bytes() const { return std::as_const(learners_->c).slice_bytes(); }
std::size_t ContiguousKVCache::mapped_granules() const { return std::as_const(learners_->c).mapped_granules(); }
std::size_t ContiguousKVCache::idle_granules() const { return std::as_const(learners_->c).idle_granules(); }
const AddressRange& ContiguousKVCache::range() const { return *range_; }
const PhysicalMemory& ContiguousKVCache::memory() const {
  return same_memory(memory_, std::as_const(learners_->c).memory(), "ContiguousKVCache::memory()");
}

struct PageReserve::Learners {
  L::PageReserve p;
  Learners(L::PhysicalMemory& memory, std::size_t pages, std::size_t low, std::size_t high,
           std::function<void(std::size_t)> before_map)
      : p(memory, pages, low, high, std::move(before_map)) {}
};

PageReserve::PageReserve(PhysicalMemory& memory, std::size_t pages, std::size_t low, std::size_t high,
                         std::function<void(std::size_t)> before_map)
    : learners_(std::make_unique<Learners>(memory.learners().m, pages, low, high, std::move(before_map))) {}
PageReserve::~PageReserve() = default;
std::optional<std::size_t> PageReserve::acquire() { return learners_->p.acquire(); }
void PageReserve::give_back(std::size_t page) { learners_->p.give_back(page); }
void PageReserve::settle() { learners_->p.settle(); }
std::byte* PageReserve::address(std::size_t page) const { return std::as_const(learners_->p).address(page); }
std::size_t PageReserve::ready() const { return std::as_const(learners_->p).ready(); }
std::size_t PageReserve::in_use() const { return std::as_const(learners_->p).in_use(); }
std::size_t PageReserve::slow_maps() const { return std::as_const(learners_->p).slow_maps(); }
std::size_t PageReserve::pages() const { return std::as_const(learners_->p).pages(); }
std::size_t PageReserve::page_bytes() const { return std::as_const(learners_->p).page_bytes(); }

}  // namespace alloclab::test::vm
