// The replaced global operator new and delete that failing_new.hpp controls. Compile this
// file into one translation unit of a test binary, no more (see failing_new.hpp).
#include "failing_new.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// Named after the file, like every file-local helper of the tests: the stages are compiled
// two to a translation unit, and an anonymous namespace would be shared with the other file.
namespace failing_new {

std::atomic<long> countdown{0};  // calls left until the armed failure; 0: disarmed
std::atomic<bool> fired{false};

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
  if (align <= alignof(std::max_align_t)) return std::malloc(n);
  void* p = nullptr;
  return posix_memalign(&p, align, n) == 0 ? p : nullptr;
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

bool failed_new() noexcept { return failing_new::fired.load(std::memory_order_relaxed); }

}  // namespace alloclab::test

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

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
