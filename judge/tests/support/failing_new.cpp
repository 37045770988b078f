// The replaced global operator new and delete that failing_new.hpp controls. Compile this
// file into one translation unit of a test binary, no more (see failing_new.hpp).
//
// Not under ThreadSanitizer: its runtime defines operator new and delete itself, and the link
// refuses a second definition. There the controls do nothing, failing_new_works() is false,
// and the stages that need a failing heap are not run under ThreadSanitizer.
#include "failing_new.hpp"

#include "alloclab_test.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// Named after the file, like every file-local helper of the tests: the stages are compiled
// two to a translation unit, and an anonymous namespace would be shared with the other file.
namespace failing_new {

std::atomic<long> countdown{0};  // calls left until the armed failure; 0: disarmed
std::atomic<bool> fired{false};
std::atomic<long> in_use{0};  // blocks returned and not yet freed
std::atomic<alloclab::test::OwnHeap*> own_heap{nullptr};

// Counts the call; true when this is the one armed to fail.
bool must_fail() noexcept {
  long left = countdown.load(std::memory_order_relaxed);
  while (left > 0) {
    if (countdown.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      if (left != 1) return false;
      fired.store(true, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

void* allocate(std::size_t n, std::size_t align) noexcept {
  if (must_fail()) return nullptr;
  if (n == 0) n = 1;  // every call returns a distinct pointer
  void* p = nullptr;
  if (auto* heap = own_heap.load(std::memory_order_acquire)) p = heap->take(n, align);
  if (p == nullptr && align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (p == nullptr && posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  if (p != nullptr) {
    in_use.fetch_add(1, std::memory_order_relaxed);
  }
  return p;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  in_use.fetch_sub(1, std::memory_order_relaxed);
  if (auto* heap = own_heap.load(std::memory_order_acquire); heap != nullptr && heap->give_back(p)) return;
  std::free(p);
}

void* allocate_or_throw(std::size_t n, std::size_t align) {
  void* p = allocate(n, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace failing_new

namespace alloclab::test {

void fail_nth_new(long n) noexcept {
  failing_new::fired.store(false, std::memory_order_relaxed);
  failing_new::countdown.store(n > 0 ? n : 0, std::memory_order_relaxed);
}

long pause_failing_new() noexcept { return failing_new::countdown.exchange(0, std::memory_order_relaxed); }

void resume_failing_new(long countdown) noexcept {
  failing_new::countdown.store(countdown, std::memory_order_relaxed);
}

bool failed_new() noexcept { return failing_new::fired.load(std::memory_order_relaxed); }

long news_in_use() noexcept { return failing_new::in_use.load(std::memory_order_relaxed); }

void use_own_heap(OwnHeap* heap) noexcept { failing_new::own_heap.store(heap, std::memory_order_release); }

}  // namespace alloclab::test

#ifndef ALLOCLAB_TEST_TSAN
// Every replaceable form, so that none of the runtime's own is linked beside these.
void* operator new(std::size_t n) { return failing_new::allocate_or_throw(n, 0); }
void* operator new[](std::size_t n) { return failing_new::allocate_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return failing_new::allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return failing_new::allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return failing_new::allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return failing_new::allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return failing_new::allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return failing_new::allocate(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { failing_new::release(p); }
void operator delete[](void* p) noexcept { failing_new::release(p); }
void operator delete(void* p, std::size_t) noexcept { failing_new::release(p); }
void operator delete[](void* p, std::size_t) noexcept { failing_new::release(p); }
void operator delete(void* p, std::align_val_t) noexcept { failing_new::release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { failing_new::release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { failing_new::release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { failing_new::release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { failing_new::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { failing_new::release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { failing_new::release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { failing_new::release(p); }
#endif  // ALLOCLAB_TEST_TSAN
