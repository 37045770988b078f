// The one place in the test binary of exercise 05 that replaces the global operator new and
// delete (see heap_log.hpp). Every form is replaced, so that no call bypasses the log: the
// plain, array, nothrow and aligned forms, and the sized deletes.
#include <cstdlib>
#include <new>

#include "heap_log.hpp"

namespace {

using alloclab::test::HeapCall;
using alloclab::test::HeapLog;

void* take(std::size_t size, std::size_t alignment) noexcept {
  if (HeapLog::failing()) return nullptr;
  if (size == 0) size = 1;  // every call returns a distinct block, even for 0 bytes
  void* p = nullptr;
  if (alignment == 0) {
    p = std::malloc(size);
  } else if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, size) != 0) {
    p = nullptr;
  }
  return p;
}

void* take_or_throw(std::size_t size, std::size_t alignment) {
  void* p = take(size, alignment);
  HeapLog::record(HeapCall{true, p, size, alignment, false});
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* take_or_null(std::size_t size, std::size_t alignment) noexcept {
  void* p = take(size, alignment);
  HeapLog::record(HeapCall{true, p, size, alignment, false});
  return p;
}

void give(void* p, std::size_t size, std::size_t alignment, bool sized) noexcept {
  if (p == nullptr) return;
  HeapLog::record(HeapCall{false, p, size, alignment, sized});
  std::free(p);
}

std::size_t value(std::align_val_t a) { return static_cast<std::size_t>(a); }

}  // namespace

void* operator new(std::size_t n) { return take_or_throw(n, 0); }
void* operator new[](std::size_t n) { return take_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return take_or_null(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return take_or_null(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return take_or_throw(n, value(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return take_or_throw(n, value(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take_or_null(n, value(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return take_or_null(n, value(a));
}

void operator delete(void* p) noexcept { give(p, 0, 0, false); }
void operator delete[](void* p) noexcept { give(p, 0, 0, false); }
void operator delete(void* p, const std::nothrow_t&) noexcept { give(p, 0, 0, false); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { give(p, 0, 0, false); }
void operator delete(void* p, std::size_t n) noexcept { give(p, n, 0, true); }
void operator delete[](void* p, std::size_t n) noexcept { give(p, n, 0, true); }
void operator delete(void* p, std::align_val_t a) noexcept { give(p, 0, value(a), false); }
void operator delete[](void* p, std::align_val_t a) noexcept { give(p, 0, value(a), false); }
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept { give(p, 0, value(a), false); }
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept { give(p, 0, value(a), false); }
void operator delete(void* p, std::size_t n, std::align_val_t a) noexcept { give(p, n, value(a), true); }
void operator delete[](void* p, std::size_t n, std::align_val_t a) noexcept { give(p, n, value(a), true); }
