// What the global operator new and delete are asked for, seen from the tests of exercise 05.
//
// heap_log.cpp replaces the global allocation and deallocation functions for the whole test
// binary (a replacement in the program wins over the standard library's and over the
// sanitizer runtime's). Each call is written to the HeapLog that is open on the calling
// thread, if any; with none open, the calls only pass through to malloc and free.
#pragma once

#include <cstddef>
#include <new>

namespace alloclab::test {

/// One call of a global allocation or deallocation function.
struct HeapCall {
  bool is_new;            // operator new (true) or operator delete (false)
  const void* p;          // the block returned or given back
  std::size_t size;       // the size asked for, or passed to a sized delete
  std::size_t alignment;  // the std::align_val_t passed, 0 when the call passed none
  bool sized;             // a delete that was passed the block's size
};

/// Records the global operator new and delete calls this thread makes while it is open.
/// Only one is open per thread at a time; it must not outlive the scope that opened it.
class HeapLog {
 public:
  static constexpr std::size_t kCapacity = 512;

  HeapLog() noexcept : previous_(open_) { open_ = this; }
  ~HeapLog() { open_ = previous_; }
  HeapLog(const HeapLog&) = delete;
  HeapLog& operator=(const HeapLog&) = delete;

  /// Stops recording; what was recorded stays readable.
  void close() noexcept {
    if (open_ == this) open_ = previous_;
  }

  /// From now until close(), every operator new this thread makes fails: the throwing forms
  /// throw std::bad_alloc, the nothrow forms return nullptr.
  void fail_every_allocation() noexcept { failing_ = true; }

  std::size_t news() const noexcept { return news_; }
  std::size_t deletes() const noexcept { return deletes_; }
  /// The calls in order, up to kCapacity of them.
  const HeapCall* begin() const noexcept { return calls_; }
  const HeapCall* end() const noexcept { return calls_ + (count_ < kCapacity ? count_ : kCapacity); }

  /// Called by the replacement functions only.
  static void record(const HeapCall& call) noexcept {
    HeapLog* log = open_;
    if (log == nullptr) return;
    (call.is_new ? log->news_ : log->deletes_)++;
    if (log->count_ < kCapacity) log->calls_[log->count_] = call;
    ++log->count_;
  }
  static bool failing() noexcept { return open_ != nullptr && open_->failing_; }

 private:
  static inline thread_local HeapLog* open_ = nullptr;
  HeapLog* previous_;
  bool failing_ = false;
  std::size_t news_ = 0;
  std::size_t deletes_ = 0;
  std::size_t count_ = 0;
  HeapCall calls_[kCapacity];
};

}  // namespace alloclab::test
