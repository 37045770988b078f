// Helpers shared by the stages of exercise 05. Included after aligned_allocator.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory_resource>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "heap_log.hpp"

namespace alloclab::test::aligned {

/// `r.allocate(n, align)`, without the sanitizer's own check that the result is aligned:
/// libstdc++ declares memory_resource::allocate's result aligned to `align`, so a misaligned
/// block would stop the test at the call, before it can say what is wrong with the block.
#if defined(__clang__)
[[clang::no_sanitize("alignment")]]
#endif
inline void* allocate_unchecked(std::pmr::memory_resource& r, std::size_t n, std::size_t align) {
  return r.allocate(n, align);
}

/// True when [p, p + n) lies inside [buffer, buffer + size).
inline bool inside(const void* p, std::size_t n, const void* buffer, std::size_t size) {
  return address(p) >= address(buffer) && address(p) - address(buffer) <= size &&
         n <= size - (address(p) - address(buffer));
}

/// Succeeds when an allocator of type A hands out one object's worth of memory: the tests
/// that give it to a container check this first, so that an allocate() that still returns
/// nullptr fails the test instead of crashing it.
template <class A>
::testing::AssertionResult hands_out_memory() {
  A alloc;
  auto* p = alloc.allocate(1);
  if (p == nullptr)
    return ::testing::AssertionFailure() << "allocate(1) returned nullptr: a container would write its first "
                                            "element through it and crash. allocate must return memory or throw.";
  alloc.deallocate(p, 1);
  return ::testing::AssertionSuccess();
}

/// An upstream resource that keeps the books: every block it hands out, with the size and
/// alignment it was asked for, and every way it is given back wrongly (a pointer it never
/// handed out, a block given back twice, a size or an alignment other than the one asked
/// for). It takes its memory from malloc, not from operator new, so that a HeapLog sees only
/// what the arena itself allocates.
///
/// A block given back keeps its memory until the resource is destroyed (poisoned under
/// AddressSanitizer, so that a use after the give-back is still reported): no later block can
/// get its address, and a second give-back of it is always seen as one, with or without the
/// sanitizer's quarantine. Everything is freed when the resource is destroyed, so that a leak
/// fails a test instead of the whole program.
class TrackingResource : public std::pmr::memory_resource {
 public:
  static constexpr std::size_t kMaxBlocks = 64;

  /// Requests larger than `limit` bytes throw std::bad_alloc, as an exhausted upstream does.
  explicit TrackingResource(std::size_t limit = std::size_t{1} << 24) : limit_(limit) {}
  TrackingResource(const TrackingResource&) = delete;
  TrackingResource& operator=(const TrackingResource&) = delete;
  ~TrackingResource() override {
    for (std::size_t i = 0; i < count_; ++i) {
#ifdef ALLOCLAB_TEST_ASAN
      ASAN_UNPOISON_MEMORY_REGION(blocks_[i].p, blocks_[i].bytes);
#endif
      std::free(blocks_[i].p);
    }
  }

  std::size_t outstanding_blocks() const {
    std::size_t n = 0;
    for (const Block& b : blocks_) n += b.live ? 1 : 0;
    return n;
  }
  std::size_t outstanding_bytes() const {
    std::size_t n = 0;
    for (const Block& b : blocks_) n += b.live ? b.bytes : 0;
    return n;
  }
  std::size_t allocations() const { return count_; }
  std::size_t refused() const { return refused_; }
  /// Every wrong deallocation seen, one per line; empty when there was none.
  std::string problems() const { return problems_.str(); }

  /// One block as the resource handed it out: where, how it was asked for, and whether it is
  /// still held (not given back yet).
  struct Handed {
    const void* p;
    std::size_t bytes;
    std::size_t alignment;
    bool held;
  };
  /// Every block handed out so far, oldest first.
  std::vector<Handed> handed_out() const {
    std::vector<Handed> all;
    for (std::size_t i = 0; i < count_; ++i) all.push_back({blocks_[i].p, blocks_[i].bytes, blocks_[i].alignment, blocks_[i].live});
    return all;
  }

 private:
  struct Block {
    void* p = nullptr;
    std::size_t bytes = 0;
    std::size_t alignment = 0;
    bool live = false;
  };

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (bytes > limit_ || count_ == kMaxBlocks) {
      ++refused_;
      throw std::bad_alloc();
    }
    void* p = nullptr;
    if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, bytes == 0 ? 1 : bytes) != 0)
      throw std::bad_alloc();
    blocks_[count_++] = Block{p, bytes, alignment, true};
    return p;
  }

  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    // The live block at p, if there is one; else a block at p that was given back already.
    Block* found = nullptr;
    for (std::size_t i = 0; i < count_; ++i) {
      if (blocks_[i].p != p) continue;
      found = &blocks_[i];
      if (found->live) break;
    }
    if (found == nullptr) {
      problems_ << "deallocate(" << p << ", " << bytes << ", " << alignment
                << ") names a block the upstream never handed out\n";
      return;
    }
    if (!found->live) {
      problems_ << "the upstream block at " << p << " was given back twice\n";
      return;
    }
    if (found->bytes != bytes || found->alignment != alignment) {
      problems_ << "the upstream block at " << p << " was taken as (" << found->bytes << " bytes, alignment "
                << found->alignment << ") but given back as (" << bytes << " bytes, alignment " << alignment << ")\n";
    }
    found->live = false;
#ifdef ALLOCLAB_TEST_ASAN
    ASAN_POISON_MEMORY_REGION(p, found->bytes);
#endif
  }

  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  std::size_t limit_;
  std::size_t count_ = 0;
  std::size_t refused_ = 0;
  Block blocks_[kMaxBlocks];
  std::ostringstream problems_;
};

}  // namespace alloclab::test::aligned
