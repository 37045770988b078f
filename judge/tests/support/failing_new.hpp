// Makes the global operator new fail on purpose, to prove that a member which allocates
// keeps the strong guarantee: when an allocation inside it throws std::bad_alloc, the object
// is exactly as it was before the call.
//
// The replaced operator new is defined in failing_new.cpp. A replacement must be defined in
// exactly one translation unit of a program, and the stages are compiled two to a unit, so a
// test binary that uses this header gets the definitions from one file of its own folder
// that does nothing but `#include "failing_new.cpp"`. Only binaries that need it replace
// operator new. The replacement allocates with malloc, where AddressSanitizer would see malloc
// and free on both sides and no longer tell a `new[]` freed by `delete` from a matching pair; so
// the replacement records each block's form (scalar or array, alignment, size) and reports a
// release through another form in AddressSanitizer's words (alloc-dealloc-mismatch,
// new-delete-type-mismatch). The rest (a block used after its free, freed twice, overrun) is
// still AddressSanitizer's to see, in the malloc'd blocks.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace alloclab::test {

/// From now on, the `n`-th call of any global operator new (counting from 1, on any thread)
/// throws std::bad_alloc; the calls after it succeed again. `n == 0` disarms.
void fail_nth_new(long n) noexcept;

/// True once the armed failure has been thrown.
bool failed_new() noexcept;

/// Blocks from the global operator new not yet given back to operator delete: a member that
/// fails with the strong guarantee leaves it as it was.
long news_in_use() noexcept;

/// Takes the armed failure's count away (0 if none is armed) and disarms; `resume_failing_new`
/// gives it back. See `UncountedNew`.
long pause_failing_new() noexcept;
void resume_failing_new(long countdown) noexcept;

/// The allocations made in its scope neither count towards the armed failure nor fail: a test's
/// own bookkeeping inside a call under test (exercise 07's seam, converting between its types
/// and the learner's) stays out of what the learner's code is judged on.
class UncountedNew {
 public:
  UncountedNew() noexcept : countdown_(pause_failing_new()) {}
  UncountedNew(const UncountedNew&) = delete;
  UncountedNew& operator=(const UncountedNew&) = delete;
  ~UncountedNew() { resume_failing_new(countdown_); }

 private:
  long countdown_;
};

/// An empty holder from the heap, taken outside the count of a failing heap: a seam's room for the
/// learner's object (`std::optional` members), which the learner's constructor, run into it
/// afterwards, fills meeting the failing heap as it would alone. The holder is default-initialized,
/// not value-initialized: the room keeps whatever the heap left in it (AddressSanitizer fills a new
/// block with 0xbe), as the learner's object would find on the stack or the heap, so that a member
/// the learner's constructor leaves uninitialized reads garbage there too, not zeros.
template <class Holder>
std::unique_ptr<Holder> uncounted_holder() {
  const UncountedNew uncounted;
  return std::make_unique_for_overwrite<Holder>();
}

/// Memory of a test's own that the global operator new takes blocks from before it asks malloc:
/// exercise 02's model stage places each block its pools take where the drawn sequence says
/// (model_heap.hpp), so that no answer of a pool depends on where malloc happens to put things.
/// `take` returns nullptr to leave a request to malloc; `give_back` says whether a block was its
/// own. A failing heap (above) refuses a call before the own heap is asked.
class OwnHeap {
 public:
  virtual void* take(std::size_t n, std::size_t align) noexcept = 0;
  virtual bool give_back(void* p) noexcept = 0;

 protected:
  ~OwnHeap() = default;
};

/// From now on operator new asks `heap` first, and operator delete gives `heap` its own blocks
/// back. Set once and for good: a block it handed out may be deleted at any later time.
void use_own_heap(OwnHeap* heap) noexcept;

/// Arms `fail_nth_new(n)` for the lifetime of the scope and disarms at its end, whatever
/// the code inside does. Take every snapshot to compare with before the scope and check
/// after it: the comparison allocates too.
class FailingNew {
 public:
  explicit FailingNew(long n) noexcept { fail_nth_new(n); }
  FailingNew(const FailingNew&) = delete;
  FailingNew& operator=(const FailingNew&) = delete;
  ~FailingNew() { fail_nth_new(0); }

  /// True when the n-th allocation happened, so the call under test saw it fail.
  bool fired() const noexcept { return failed_new(); }
};

/// What happened to one call made while the n-th allocation fails.
struct FailingNewOutcome {
  bool fired;  // the call reached the n-th allocation, and it failed
  bool threw;  // the call ended with std::bad_alloc
};

/// Calls `member()` while the `n`-th allocation from now on fails. Any exception other than
/// std::bad_alloc propagates, for the test to report.
template <class Member>
FailingNewOutcome call_with_failing_new(long n, Member&& member) {
  FailingNew failing(n);
  bool threw = false;
  try {
    member();
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  return {failing.fired(), threw};
}

/// True when this binary's operator new really fails on demand, so the tests that rely on
/// it cannot pass for want of a failure.
inline bool failing_new_works() {
  return call_with_failing_new(1, [] {
           int* volatile p = new int(0);  // volatile: the compiler may not elide the pair
           delete p;
         }).threw;
}

/// Runs `call(n)` for n = 1, 2, 3, …, where `call` sets up a fresh object, arms a
/// `FailingNew(n)` around the member under test, and returns whether the failure fired; stops
/// at the first n the member gets through without reaching (every allocation it makes has
/// then been refused once). Returns how many allocations failed; a bound of 10000 stops a
/// member that allocates without end.
template <class Call>
int for_each_failing_allocation(Call&& call) {
  int failures = 0;
  for (long n = 1; n <= 10000; ++n) {
    if (!call(n)) break;
    ++failures;
  }
  return failures;
}

}  // namespace alloclab::test
