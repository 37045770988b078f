// The replaced global operator new and delete that failing_new.hpp controls. Compile this
// file into one translation unit of a test binary, no more (see failing_new.hpp).
//
// Not under ThreadSanitizer: its runtime defines operator new and delete itself, and the link
// refuses a second definition. There the controls do nothing, failing_new_works() is false,
// and the stages that need a failing heap are not run under ThreadSanitizer.
#include "failing_new.hpp"

#include "alloclab_test.hpp"

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

#include <unistd.h>

#if defined(ALLOCLAB_TEST_ASAN) && !__has_include(<sanitizer/allocator_interface.h>)
extern "C" int __sanitizer_get_ownership(const volatile void* p);  // g++ ships no header for it
#endif

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

// How a block was asked for or given back. Blocks come from malloc, so AddressSanitizer's own
// check that each block goes back through the delete that matches its new sees malloc and free
// on both sides; the tests check it here instead, and report a mismatch as AddressSanitizer does.
struct Form {
  std::size_t size;       // the size asked for, or passed to a sized delete
  std::size_t alignment;  // the std::align_val_t passed, 0 for the forms that take none
  bool array;             // operator new[] or delete[]
  bool sized;             // a delete that was passed the block's size
};

// The table's code runs in every allocation of every test, and is the tests' own, proven here:
// left out of the sanitizers' checks (and under g++ optimized, as clang++ cannot be asked to) so
// that it costs little at the -O0 the tests are built at.
#if defined(__clang__)
#define FAILING_NEW_TABLE __attribute__((no_sanitize("address", "undefined")))
#else
#define FAILING_NEW_TABLE __attribute__((no_sanitize("address", "undefined"), optimize("O2")))
#endif

// The form of every block not yet given back, by address: a hash table with linear probing,
// split into shards with a lock each, so that threads allocating at once seldom wait for one
// another. Its memory comes from calloc, never from operator new. Constant-initialized, so it
// is ready for the first operator new of a static constructor, and never freed, so it still
// serves an operator delete after every static destructor. Its slots are packed in two words,
// and it starts small, so that the records of a test's blocks stay in the cache.
struct Slot {
  std::uintptr_t p;    // key(address); 0: empty
  std::uint64_t form;  // pack(form)
};

// The size (below 2^56: malloc served it), the alignment's log2 plus one (0: none; an alignment
// malloc served is a power of two) and the array bit, in one word.
FAILING_NEW_TABLE std::uint64_t pack(const Form& form) noexcept {
  const std::uint64_t log = form.alignment == 0 ? 0 : 1 + static_cast<unsigned>(std::countr_zero(form.alignment));
  return (std::uint64_t{form.size} << 8) | (log << 1) | (form.array ? 1 : 0);
}

FAILING_NEW_TABLE Form unpack(std::uint64_t word) noexcept {
  const std::uint64_t log = (word >> 1) & 0x7f;
  return Form{static_cast<std::size_t>(word >> 8), log == 0 ? 0 : std::size_t{1} << (log - 1), (word & 1) != 0,
              false};
}

struct Shard {
  std::mutex lock;
  Slot* slots = nullptr;
  std::size_t capacity = 0;  // 0 or a power of two
  std::size_t used = 0;
};

constexpr int kShardBits = 4;
Shard shards[1 << kShardBits];

// Spreads addresses that share their low bits (aligned blocks) over the shards and slots.
FAILING_NEW_TABLE std::uint64_t mix(std::uintptr_t p) noexcept {
  std::uint64_t h = p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

FAILING_NEW_TABLE Shard& shard_of(std::uint64_t h) noexcept { return shards[h >> (64 - kShardBits)]; }

FAILING_NEW_TABLE void place(Slot* slots, std::size_t capacity, const Slot& slot) noexcept {
  std::size_t i = mix(slot.p) & (capacity - 1);
  while (slots[i].p != 0 && slots[i].p != slot.p) i = (i + 1) & (capacity - 1);
  slots[i] = slot;
}

// The table keeps each address inverted: LeakSanitizer reads every word of the heap for pointers,
// and a table of plain addresses would keep every block it records reachable, so that a block the
// learner's code loses would never be reported as a leak.
FAILING_NEW_TABLE std::uintptr_t key(void* p) noexcept { return ~reinterpret_cast<std::uintptr_t>(p); }

// Records the block's form; false when the table cannot grow, and the block cannot be served.
FAILING_NEW_TABLE bool remember(void* p, const Form& form) noexcept {
  const auto key = failing_new::key(p);
  Shard& shard = shard_of(mix(key));
  const std::lock_guard<std::mutex> guard(shard.lock);
  if ((shard.used + 1) * 4 > shard.capacity * 3) {  // at most three quarters full
    const std::size_t capacity = shard.capacity == 0 ? 64 : 2 * shard.capacity;
    auto* slots = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
    if (slots == nullptr) return false;
    for (std::size_t i = 0; i < shard.capacity; ++i) {
      if (shard.slots[i].p != 0) place(slots, capacity, shard.slots[i]);
    }
    std::free(shard.slots);
    shard.slots = slots;
    shard.capacity = capacity;
  }
  place(shard.slots, shard.capacity, Slot{key, pack(form)});
  ++shard.used;
  return true;
}

// Takes the block's record out of the table; false when it has none (never from operator new,
// or given back already).
FAILING_NEW_TABLE bool forget(void* p, Form& form) noexcept {
  const auto key = failing_new::key(p);
  Shard& shard = shard_of(mix(key));
  const std::lock_guard<std::mutex> guard(shard.lock);
  if (shard.capacity == 0) return false;
  const std::size_t mask = shard.capacity - 1;
  std::size_t hole = mix(key) & mask;
  while (shard.slots[hole].p != key) {
    if (shard.slots[hole].p == 0) return false;
    hole = (hole + 1) & mask;
  }
  form = unpack(shard.slots[hole].form);
  // Backward shift: move each later slot of the run into the hole unless that would put it
  // before its home slot, so that no search stops early at the hole.
  for (std::size_t j = (hole + 1) & mask; shard.slots[j].p != 0; j = (j + 1) & mask) {
    const std::size_t home = mix(shard.slots[j].p) & mask;
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      shard.slots[hole] = shard.slots[j];
      hole = j;
    }
  }
  shard.slots[hole].p = 0;
  --shard.used;
  return true;
}

const char* new_name(const Form& form) noexcept { return form.array ? "operator new []" : "operator new"; }
const char* delete_name(const Form& form) noexcept { return form.array ? "operator delete []" : "operator delete"; }

// AddressSanitizer's words for an alignment: "64 bytes", or "default-aligned" for none.
void print_alignment(const char* line, std::size_t alignment) noexcept {
  char words[32] = "default-aligned";
  if (alignment != 0) std::snprintf(words, sizeof words, "%zu bytes", alignment);
  std::fprintf(stderr, line, words);
}

// Prints the report AddressSanitizer prints for a mismatched release (its first line, the
// stack of the release, where the block was allocated, its SUMMARY line), so that the judge
// reads it as one, and ends the program as AddressSanitizer does.
[[noreturn]] void report(void* p, const char* kind, const Form* allocated, const Form& released) noexcept {
  const int pid = static_cast<int>(getpid());
  std::fprintf(stderr, "=================================================================\n");
  if (allocated == nullptr) {
    std::fprintf(stderr, "==%d==ERROR: AddressSanitizer: %s (malloc vs %s) on %p\n", pid, kind,
                 delete_name(released), p);
  } else if (allocated->array != released.array) {
    std::fprintf(stderr, "==%d==ERROR: AddressSanitizer: %s (%s vs %s) on %p\n", pid, kind, new_name(*allocated),
                 delete_name(released), p);
  } else {
    std::fprintf(stderr, "==%d==ERROR: AddressSanitizer: %s on %p:\n", pid, kind, p);
    std::fprintf(stderr, "  object passed to delete has wrong type:\n");
    if (released.sized) {
      std::fprintf(stderr, "  size of the allocated type:   %zu bytes;\n", allocated->size);
      std::fprintf(stderr, "  size of the deallocated type: %zu bytes.\n", released.size);
    }
    if (released.alignment != allocated->alignment) {
      print_alignment("  alignment of the allocated type:   %s;\n", allocated->alignment);
      print_alignment("  alignment of the deallocated type: %s.\n", released.alignment);
    }
  }
  std::fflush(stderr);
#ifdef ALLOCLAB_TEST_ASAN
  __sanitizer_print_stack_trace();
  void* trace[64];
  int thread = 0;
  const std::size_t frames = __asan_get_alloc_stack(p, trace, 64, &thread);
  if (allocated != nullptr) {
    // The stack above ends with an empty line, as AddressSanitizer's reports have one here.
    std::fprintf(stderr, "%p is located 0 bytes inside of %zu-byte region [%p,%p)\n", p, allocated->size, p,
                 static_cast<void*>(static_cast<char*>(p) + allocated->size));
  }
  if (frames > 0) {
    std::fprintf(stderr, "allocated by thread T%d here:\n", thread);
    for (std::size_t i = 0; i < frames; ++i) {
      char frame[1024];
      __sanitizer_symbolize_pc(trace[i], "%p %F %L", frame, sizeof frame);
      std::fprintf(stderr, "    #%zu %s\n", i, frame);
    }
  }
#else
  std::fprintf(stderr, "    (no stack: this test program is built without AddressSanitizer)\n");
#endif
  std::fprintf(stderr, "\nSUMMARY: AddressSanitizer: %s in %s\n", kind, delete_name(released));
  std::fprintf(stderr,
               "==%d==NOTE: reported by the tests' operator new and delete (judge/tests/support/failing_new.cpp), "
               "which allocate with malloc and so check in AddressSanitizer's stead that each block goes back "
               "through the delete that matches its new.\n",
               pid);
  std::fprintf(stderr, "==%d==ABORTING\n", pid);
  std::fflush(stderr);
  std::_Exit(1);
}

void* allocate(std::size_t n, std::size_t align, bool array) noexcept {
  if (must_fail()) return nullptr;
  const Form form{n, align, array, false};
  if (n == 0) n = 1;  // every call returns a distinct pointer
  void* p = nullptr;
  if (auto* heap = own_heap.load(std::memory_order_acquire)) p = heap->take(n, align);
  if (p == nullptr && align <= alignof(std::max_align_t)) {
    p = std::malloc(n);
  } else if (p == nullptr && posix_memalign(&p, align, n) != 0) {
    p = nullptr;
  }
  if (p != nullptr && !remember(p, form)) {
    auto* heap = own_heap.load(std::memory_order_acquire);
    if (heap == nullptr || !heap->give_back(p)) std::free(p);
    p = nullptr;
  }
  if (p != nullptr) {
    in_use.fetch_add(1, std::memory_order_relaxed);
  }
  return p;
}

// Gives the block back, after checking that `released` is the delete that matches its new: the
// same array form, the same alignment (none for none), and when sized, the size asked for.
void release(void* p, const Form& released) noexcept {
  if (p == nullptr) return;
  Form allocated{};
  if (!forget(p, allocated)) {
#ifdef ALLOCLAB_TEST_ASAN
    // A live block of the heap that operator new never returned came from malloc.
    if (__sanitizer_get_ownership(p) != 0) report(p, "alloc-dealloc-mismatch", nullptr, released);
#endif
    // Anything else (a block given back twice, an address inside a block or off the heap) is
    // free's to report, as it did before.
    std::free(p);
    return;
  }
  if (allocated.array != released.array) report(p, "alloc-dealloc-mismatch", &allocated, released);
  if (allocated.alignment != released.alignment || (released.sized && released.size != allocated.size)) {
    report(p, "new-delete-type-mismatch", &allocated, released);
  }
  in_use.fetch_sub(1, std::memory_order_relaxed);
  if (auto* heap = own_heap.load(std::memory_order_acquire); heap != nullptr && heap->give_back(p)) return;
  std::free(p);
}

// What each form of operator delete is passed, for release() to check against the block's new.
void release_unsized(void* p, std::size_t align, bool array) noexcept { release(p, Form{0, align, array, false}); }
void release_sized(void* p, std::size_t n, std::size_t align, bool array) noexcept {
  release(p, Form{n, align, array, true});
}

void* allocate_or_throw(std::size_t n, std::size_t align, bool array) {
  void* p = allocate(n, align, array);
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
void* operator new(std::size_t n) { return failing_new::allocate_or_throw(n, 0, false); }
void* operator new[](std::size_t n) { return failing_new::allocate_or_throw(n, 0, true); }
void* operator new(std::size_t n, std::align_val_t a) {
  return failing_new::allocate_or_throw(n, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return failing_new::allocate_or_throw(n, static_cast<std::size_t>(a), true);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return failing_new::allocate(n, 0, false); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return failing_new::allocate(n, 0, true); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return failing_new::allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return failing_new::allocate(n, static_cast<std::size_t>(a), true);
}

using failing_new::release_sized;
using failing_new::release_unsized;
void operator delete(void* p) noexcept { release_unsized(p, 0, false); }
void operator delete[](void* p) noexcept { release_unsized(p, 0, true); }
void operator delete(void* p, std::size_t n) noexcept { release_sized(p, n, 0, false); }
void operator delete[](void* p, std::size_t n) noexcept { release_sized(p, n, 0, true); }
void operator delete(void* p, std::align_val_t a) noexcept { release_unsized(p, static_cast<std::size_t>(a), false); }
void operator delete[](void* p, std::align_val_t a) noexcept { release_unsized(p, static_cast<std::size_t>(a), true); }
void operator delete(void* p, std::size_t n, std::align_val_t a) noexcept {
  release_sized(p, n, static_cast<std::size_t>(a), false);
}
void operator delete[](void* p, std::size_t n, std::align_val_t a) noexcept {
  release_sized(p, n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { release_unsized(p, 0, false); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release_unsized(p, 0, true); }
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  release_unsized(p, static_cast<std::size_t>(a), false);
}
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  release_unsized(p, static_cast<std::size_t>(a), true);
}
#endif  // ALLOCLAB_TEST_TSAN
