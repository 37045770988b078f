// The test binary's own munmap, under AddressSanitizer only (without it nothing is recorded,
// and the tests that read the record skip): it records the calls that give
// back a watched address, with what ASan thought of the bytes at that moment, then unmaps
// with the system call itself.
//
// Why: the destructor must unpoison the buffer before munmap, or the next mapping the kernel
// puts at that address starts out poisoned. Some ASan runtimes clear the shadow of the pages
// themselves in their own munmap (clang++ 19's does; clang++ 14's and g++ 12's do not), and
// after such a munmap the shadow says nothing about what the ring did. Reading it at the
// moment of the call, here, tells the same on every toolchain. A definition in the program
// takes the place of the C library's munmap and of the runtime's (a weak symbol in clang's).
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "alloclab_test.hpp"
#include "ring_test_support.hpp"

namespace alloclab::test::ring::unmap_watch {

std::atomic<std::uintptr_t> watched{0};
std::mutex lock;
std::vector<Unmapping>& calls() {
  static auto* recorded = new std::vector<Unmapping>();  // never destroyed: munmap may run at exit
  return *recorded;
}

}  // namespace alloclab::test::ring::unmap_watch

#ifdef ALLOCLAB_TEST_ASAN
extern "C" int munmap(void* addr, std::size_t length) noexcept {
  namespace w = alloclab::test::ring::unmap_watch;
  const auto begin = reinterpret_cast<std::uintptr_t>(addr);
  const std::uintptr_t watched = w::watched.load();
  if (watched != 0 && begin <= watched && watched - begin < length) {
    const void* poisoned = __asan_region_is_poisoned(addr, length);
    std::lock_guard<std::mutex> guard(w::lock);
    w::calls().push_back({begin, length, poisoned});
  }
  return static_cast<int>(::syscall(SYS_munmap, addr, length));
}
#endif  // ALLOCLAB_TEST_ASAN

namespace alloclab::test::ring {

void watch_unmapping(const void* p) {
  std::lock_guard<std::mutex> guard(unmap_watch::lock);
  unmap_watch::calls().clear();
  unmap_watch::watched.store(reinterpret_cast<std::uintptr_t>(p));
}

std::vector<Unmapping> unmappings() {
  std::lock_guard<std::mutex> guard(unmap_watch::lock);
  return unmap_watch::calls();
}

}  // namespace alloclab::test::ring
