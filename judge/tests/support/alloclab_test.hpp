// Helpers shared by the staged test suites. Test files include this after the header
// under test.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define ALLOCLAB_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOCLAB_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define ALLOCLAB_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ALLOCLAB_TEST_TSAN 1
#endif
#endif

#ifdef ALLOCLAB_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if defined(ALLOCLAB_TEST_ASAN) || defined(ALLOCLAB_TEST_TSAN)
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else  // g++ ships no such header, but its runtimes have the function
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif
#define ALLOCLAB_TEST_HEAP_BYTES 1
#endif

#include <cstdlib>
#include <string>

namespace alloclab::test {

/// True when this test binary is built with AddressSanitizer.
constexpr bool kHasAsan =
#ifdef ALLOCLAB_TEST_ASAN
    true;
#else
    false;
#endif

/// True when AddressSanitizer would report an access to the byte at `p`.
inline bool is_poisoned([[maybe_unused]] const void* p) {
#ifdef ALLOCLAB_TEST_ASAN
  return __asan_address_is_poisoned(p) != 0;
#else
  return false;
#endif
}

/// The first byte in [p, p + n) that AddressSanitizer would report, or nullptr.
inline const void* first_poisoned([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) {
#ifdef ALLOCLAB_TEST_ASAN
  return __asan_region_is_poisoned(const_cast<void*>(p), n);
#else
  return nullptr;
#endif
}

inline std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Bytes the heap holds for the program right now, malloc and operator new alike, as the
/// sanitizer's allocator counts them; 0 in a build without one (ALLOCLAB_TEST_HEAP_BYTES
/// says whether the count is real).
inline std::size_t heap_bytes_in_use() {
#ifdef ALLOCLAB_TEST_HEAP_BYTES
  return __sanitizer_get_current_allocated_bytes();
#else
  return 0;
#endif
}

/// AddressSanitizer's shadow bytes of the granules that [p, p + n) touches, one per 8 bytes,
/// in hex ("fa fa f7"; empty without AddressSanitizer). Unlike is_poisoned(), they tell apart the heap's own
/// redzone from memory a program poisoned: comparing them before and after a call shows
/// whether it poisoned anything outside its own buffer.
// Not instrumented itself: AddressSanitizer would check the shadow of the shadow, which is unmapped.
__attribute__((no_sanitize_address)) inline std::string shadow_bytes([[maybe_unused]] const void* p,
                                                                     [[maybe_unused]] std::size_t n) {
  std::string shadow;
#ifdef ALLOCLAB_TEST_ASAN
  std::size_t scale = 0, offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  const std::uintptr_t first = address(p) >> scale, last = (address(p) + n - 1) >> scale;
  for (std::uintptr_t g = first; n != 0 && g <= last; ++g) {
    const auto byte = *reinterpret_cast<const unsigned char*>(g + offset);
    shadow += (shadow.empty() ? "" : " ") + std::string(1, "0123456789abcdef"[byte >> 4]) + "0123456789abcdef"[byte & 15];
  }
#endif
  return shadow;
}

/// A small deterministic generator (xorshift64): the same run every time, one per thread.
struct XorShift {
  std::uint64_t state;
  std::uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  /// A number in [lo, hi].
  std::size_t between(std::size_t lo, std::size_t hi) { return lo + static_cast<std::size_t>(next() % (hi - lo + 1)); }
};

/// Makes the death tests that follow cheap. A death test only needs to see that the
/// sanitizer reports; turning the dying child's stack into file names and lines would take a
/// quarter of a second each. The child is started afresh ("threadsafe" style), so it reads
/// the environment set here, while this process keeps its symbolized reports.
inline void quick_death_tests() {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* options = std::getenv("ASAN_OPTIONS");
  std::string quick = std::string(options ? options : "") + ":symbolize=0";
  setenv("ASAN_OPTIONS", quick.c_str(), 1);
}

}  // namespace alloclab::test

/// Skips the current test unless the binary is built with AddressSanitizer.
#define ALLOCLAB_REQUIRE_ASAN()                                                       \
  do {                                                                                \
    if (!::alloclab::test::kHasAsan) GTEST_SKIP() << "needs an AddressSanitizer build"; \
  } while (0)
