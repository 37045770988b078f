// The device of exercise 04's tests and benchmarks: it stands in for a GPU's memory.
//
// It hands out real host memory, carved from one buffer of a fixed budget (first fit,
// 512-byte aligned, neighbours merged when freed), so that two segments can sit side by side
// as they do on a real device, and a request that does not fit gets nullptr, as a full GPU
// answers cudaMalloc. It counts every call and can charge a cost per call, so that going to
// the device is as visible in a benchmark as it is in an engine. It never throws from
// malloc or free, and it never crashes on a bad free: it counts it, for the tests to report.
// free never allocates from the heap, and malloc at most once, before it changes anything:
// when the heap refuses, malloc answers nullptr, as the device would.
//
// The buffer is mapped from the kernel, not taken from the heap: a page costs only once it is
// touched, as device memory never touched costs nothing, and AddressSanitizer does not write the
// shadow of a 128 MiB buffer each time a test makes a device (which took 04's tests seconds).
//
// It also has streams, as a GPU does, so far as the allocator can see them: an event recorded
// on a stream completes once that stream has run the work queued on it before the event. Here
// no work runs by itself: a stream runs what was queued on it when the test calls
// `complete(stream)`, and every stream when anyone calls `synchronize()`, so that a test can
// keep an event incomplete as long as it likes, then complete it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>

namespace alloclab::test {

class TestDevice {
 public:
  static constexpr std::size_t kAlignment = 512;

  /// A device of `budget` bytes (rounded up to 512); every call busy-waits `cost_per_call`.
  explicit TestDevice(std::size_t budget, std::chrono::nanoseconds cost_per_call = {})
      : budget_(round_up(budget)),
        cost_(cost_per_call),
        memory_(map(budget_)) {
    if (budget_ != 0) free_ranges_.emplace(0, budget_);
  }
  TestDevice(const TestDevice&) = delete;
  TestDevice& operator=(const TestDevice&) = delete;
  ~TestDevice() { ::munmap(memory_, budget_ ? budget_ : 1); }

  /// `n` bytes (at least one granule), or nullptr when no free range of the budget holds them.
  void* malloc(std::size_t n) noexcept {
    pay();
    ++malloc_calls_;
    const std::size_t size = n == 0 ? kAlignment : round_up(n);
    // n too large to round, larger than the device, or beyond the limit set by the test.
    if (size == 0 || n > budget_ || in_use_ + size > limit_) return nullptr;
    for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
      if (it->second < size) continue;
      const std::size_t offset = it->first, left = it->second - size;
      // The range's own node becomes the live entry; only a leftover range needs a new node,
      // made first, so that a heap failure refuses the call and changes nothing.
      if (left) {
        try {
          free_ranges_.emplace(offset + size, left);
        } catch (const std::bad_alloc&) {
          return nullptr;
        }
      }
      auto node = free_ranges_.extract(it);
      node.mapped() = size;
      live_.insert(std::move(node));
      in_use_ += size;
      if (in_use_ > peak_in_use_) peak_in_use_ = in_use_;
      ++mallocs_;
      return memory_ + offset;
    }
    return nullptr;
  }

  /// Gives back a pointer `malloc` returned. Anything else is counted in `bad_frees()` and
  /// otherwise ignored.
  void free(void* p) noexcept {
    pay();
    ++free_calls_;
    const auto* b = static_cast<std::byte*>(p);
    auto live = b >= memory_ && b < memory_ + budget_ ? live_.find(static_cast<std::size_t>(b - memory_)) : live_.end();
    if (live == live_.end()) {
      ++bad_frees_;
      return;
    }
    // The live entry's node becomes the free range, so that free never allocates: a test that
    // makes the heap fail may call it at any moment.
    auto node = live_.extract(live);
    const std::size_t offset = node.key();
    std::size_t size = node.mapped();
    in_use_ -= size;
    ++frees_;
    // Merge with the free ranges on either side, so that the device fragments only where
    // its callers keep memory.
    auto next = free_ranges_.lower_bound(offset);
    if (next != free_ranges_.end() && next->first == offset + size) {
      size += next->second;
      next = free_ranges_.erase(next);
    }
    if (next != free_ranges_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    node.mapped() = size;
    free_ranges_.insert(next, std::move(node));
  }

  /// An event on `stream`: it completes when `stream` has run all the work queued on it so
  /// far, that is at the next `complete(stream)` or `synchronize()`. Ids count from 0.
  int record_event(int stream) noexcept {
    events_.push_back({stream, ++queued_[stream]});
    return static_cast<int>(events_.size() - 1);
  }

  /// Whether the event has completed; never waits. An id `record_event` never returned is
  /// counted in `bad_event_queries()` and is not done.
  bool event_done(int event) noexcept {
    ++event_queries_;
    if (event < 0 || static_cast<std::size_t>(event) >= events_.size()) {
      ++bad_event_queries_;
      return false;
    }
    const Event& e = events_[static_cast<std::size_t>(event)];
    return e.ticket <= ran_[e.stream];
  }

  /// Waits for every event: every stream runs all the work queued on it.
  void synchronize() noexcept {
    ++synchronize_calls_;
    for (const auto& [stream, queued] : queued_) ran_[stream] = queued;
  }

  /// For the tests: `stream` runs all the work queued on it so far, so every event recorded on
  /// it until now completes, and none recorded after.
  void complete(int stream) noexcept { ran_[stream] = queued_[stream]; }

  std::size_t events_recorded() const noexcept { return events_.size(); }
  std::size_t events_recorded_on(int stream) const noexcept {
    std::size_t n = 0;
    for (const Event& e : events_) n += e.stream == stream;
    return n;
  }
  std::size_t event_queries() const noexcept { return event_queries_; }
  std::size_t bad_event_queries() const noexcept { return bad_event_queries_; }
  std::size_t synchronize_calls() const noexcept { return synchronize_calls_; }

  /// Refuses from now on any request that would take the bytes in use beyond `bytes`, even
  /// where the budget has room: a device that other processes share.
  void set_limit(std::size_t bytes) noexcept { limit_ = bytes; }

  std::size_t budget() const noexcept { return budget_; }
  std::size_t in_use() const noexcept { return in_use_; }              // bytes handed out and not freed
  std::size_t peak_in_use() const noexcept { return peak_in_use_; }
  std::size_t live_allocations() const noexcept { return live_.size(); }
  std::size_t malloc_calls() const noexcept { return malloc_calls_; }  // every call, refused or not
  std::size_t mallocs() const noexcept { return mallocs_; }            // the calls that succeeded
  std::size_t refusals() const noexcept { return malloc_calls_ - mallocs_; }
  std::size_t free_calls() const noexcept { return free_calls_; }
  std::size_t frees() const noexcept { return frees_; }                // the calls that freed something
  std::size_t bad_frees() const noexcept { return bad_frees_; }

  /// Where `p` lies from the start of the device's memory: two devices that served the same
  /// calls place their allocations at the same offsets.
  std::size_t offset_of(const void* p) const noexcept { return offset_of(reinterpret_cast<std::uintptr_t>(p)); }
  std::size_t offset_of(std::uintptr_t address) const noexcept {
    return static_cast<std::size_t>(address - reinterpret_cast<std::uintptr_t>(memory_));
  }

  /// The size of the live allocation that starts at `p`, or 0.
  std::size_t size_of(const void* p) const noexcept {
    const auto* b = static_cast<const std::byte*>(p);
    if (b < memory_ || b >= memory_ + budget_) return 0;
    auto it = live_.find(static_cast<std::size_t>(b - memory_));
    return it == live_.end() ? 0 : it->second;
  }

 private:
  static std::size_t round_up(std::size_t n) noexcept { return (n + kAlignment - 1) & ~(kAlignment - 1); }
  /// Page-aligned, so 512-aligned; zero-filled pages appear as they are first touched.
  static std::byte* map(std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<std::byte*>(p);
  }

  void pay() const noexcept {
    if (cost_.count() == 0) return;
    const auto until = std::chrono::steady_clock::now() + cost_;
    while (std::chrono::steady_clock::now() < until) {
    }
  }

  struct Event {
    int stream;
    std::size_t ticket;  // the stream's count of recorded events when this one was recorded
  };

  std::size_t budget_;
  std::chrono::nanoseconds cost_;
  std::byte* memory_;
  std::size_t limit_ = SIZE_MAX;
  std::map<std::size_t, std::size_t> free_ranges_;  // offset -> size, address order
  std::map<std::size_t, std::size_t> live_;         // offset -> size
  std::size_t in_use_ = 0, peak_in_use_ = 0;
  std::size_t malloc_calls_ = 0, mallocs_ = 0, free_calls_ = 0, frees_ = 0, bad_frees_ = 0;
  std::vector<Event> events_;
  std::map<int, std::size_t> queued_, ran_;  // per stream: events recorded, and how many of them have run
  std::size_t event_queries_ = 0, bad_event_queries_ = 0, synchronize_calls_ = 0;
};

/// A device without streams: every event is done at once, and the device counts the events
/// recorded and the synchronizations. The allocator must work with it too.
class InstantDevice : public TestDevice {
 public:
  using TestDevice::TestDevice;
  int record_event(int) noexcept {
    ++recorded;
    return 0;
  }
  bool event_done(int) noexcept { return true; }
  void synchronize() noexcept { ++synchronized; }
  std::size_t recorded = 0, synchronized = 0;
};

}  // namespace alloclab::test
