// The model runner: the KV buffer, each step's block copies, the forward pass and the sampler,
// on a thread of its own fed through the ring (or on the caller's, with one thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "aligned_allocator.hpp"
#include "arithmetic.hpp"
#include "caching_allocator.hpp"
#include "heap_tally.hpp"
#include "host_device.hpp"
#include "model.hpp"
#include "ring_allocator.hpp"
#include "sampler.hpp"
#include "step_inputs.hpp"

namespace alloclab::engine {

namespace detail {

/// Activations from the caching allocator: one block per forward pass, carved into the
/// pass's tensors (as a compiled graph's memory planner lays them out), handed back when the
/// step ends. Steps differ in size, and the allocator's best fit and splitting serve each from
/// the segments it already holds: after the first steps the device is not called again.
class CachedWorkspace {
 public:
  /// `count` and `tally`: where the allocator's own heap allocations are counted.
  CachedWorkspace(CachingAllocator<HostDevice>& a, std::uint64_t (*count)(), std::uint64_t& tally)
      : a_(a), count_(count), tally_(tally) {}
  CachedWorkspace(const CachedWorkspace&) = delete;
  CachedWorkspace& operator=(const CachedWorkspace&) = delete;
  ~CachedWorkspace() {
    HeapTally t(count_, tally_);
    a_.deallocate(block_);
  }

  void reserve(std::size_t floats) {
    HeapTally t(count_, tally_);
    block_ = static_cast<float*>(a_.allocate(floats * sizeof(float)));
    size_ = floats;
  }
  /// The next tensor, rounded as the forward pass rounded it when it reserved.
  float* floats(std::size_t n) {
    n = tensor_floats(n);
    if (used_ + n > size_) throw std::logic_error("CachedWorkspace: more than reserved");
    float* p = block_ + used_;
    used_ += n;
    return p;
  }

 private:
  CachingAllocator<HostDevice>& a_;
  std::uint64_t (*count_)();
  std::uint64_t& tally_;
  float* block_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
};

}  // namespace detail

/// Owns what the forward pass touches: the KV buffer (exercise 05's aligned rows), the ring the
/// step's inputs arrive in (exercise 06) and the caching allocator of activations (exercise 04).
/// `execute` hands it a step and returns once the step's tokens are sampled.
class ModelRunner {
 public:
  static constexpr std::size_t kRingBytes = 16 << 20;

  /// `samples`: the most tokens a step samples. `heap_count`: where the caching allocator's own
  /// heap allocations are read.
  ModelRunner(const Model& model, const KVLayout& layout, int kv_blocks, int samples, bool two_threads,
              std::uint64_t (*heap_count)())
      : model_(model), layout_(layout), two_threads_(two_threads), heap_count_(heap_count),
        kv_(static_cast<std::size_t>(kv_blocks) * layout.block_floats(model.config())), ring_(kRingBytes),
        caching_(device_), sampled_(static_cast<std::size_t>(samples)) {}
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;
  ~ModelRunner() { stop(); }

  /// Starts the runner's thread, when it has one.
  void start() {
    if (two_threads_) thread_ = std::thread([this] { loop(); });
  }

  /// Stops the runner's thread, once the step it is running (if any) is done.
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  /// Runs the step `in` (on the runner's thread, when it has one, while this one waits) and
  /// rethrows what it threw.
  void execute(const StepInput* in) {
    if (!two_threads_) {
      run(*in);
      return;
    }
    std::unique_lock lock(mutex_);
    job_ = in;
    done_ = false;
    cv_.notify_all();
    cv_.wait(lock, [this] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }

  /// The last step's tokens, as its SampleJobs placed them.
  [[nodiscard]] std::span<const int> sampled() const noexcept { return sampled_; }
  [[nodiscard]] float* kv() noexcept { return kv_.data(); }
  [[nodiscard]] RingBumpAllocator& ring() noexcept { return ring_; }
  [[nodiscard]] std::size_t device_mallocs() const noexcept { return device_.mallocs(); }
  /// The caching allocator's bytes, reserved and handed out, while the last step ran.
  [[nodiscard]] std::size_t reserved_bytes() const noexcept { return last_reserved_; }
  [[nodiscard]] std::size_t allocated_bytes() const noexcept { return last_allocated_; }
  /// Heap allocations made by the caching allocator since the last call (read once a step is done).
  [[nodiscard]] std::uint64_t take_allocator_heap() noexcept {
    caching_heap_ += allocator_heap_;
    return std::exchange(allocator_heap_, 0);
  }
  /// The caching allocator's heap allocations in the run; the KV buffer's bytes.
  [[nodiscard]] std::uint64_t caching_heap() const noexcept { return caching_heap_ + allocator_heap_; }
  [[nodiscard]] std::size_t kv_bytes() const noexcept { return kv_.size() * sizeof(float); }

 private:
  void loop() {
    for (;;) {
      const StepInput* in = nullptr;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || job_ != nullptr; });
        if (stop_) return;
        in = std::exchange(job_, nullptr);
      }
      try {
        run(*in);
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        done_ = true;
      }
      cv_.notify_all();
    }
  }

  /// Copies ordered by copy-on-write (or by the reserving manager's fork), then the forward
  /// pass, then the samples.
  void run(const StepInput& in) {
    const std::size_t block_floats = layout_.block_floats(model_.config());
    for (int i = 0; i < in.copy_count; ++i)
      std::memcpy(kv_.data() + static_cast<std::size_t>(in.copies[i].dst) * block_floats,
                  kv_.data() + static_cast<std::size_t>(in.copies[i].src) * block_floats, block_floats * sizeof(float));
    detail::CachedWorkspace ws(caching_, heap_count_, allocator_heap_);  // its block goes back at the end
    const float* logits = model_.forward(in.batch, ws);
    const int vocab = model_.config().vocab;
    for (int i = 0; i < in.job_count; ++i) {
      const SampleJob& j = in.jobs[i];
      top_k(logits + static_cast<std::size_t>(i) * static_cast<std::size_t>(vocab), vocab, top_);
      for (int k = 0; k < j.count; ++k)
        sampled_[static_cast<std::size_t>(j.out + k)] = draw_token(top_, j.seed, j.first_sample + k, j.position);
    }
    const CacheStats cs = caching_.stats();  // before the step's block goes back
    last_reserved_ = cs.reserved_bytes;
    last_allocated_ = cs.allocated_bytes;
    // The step's inputs are read: the ring may hand their bytes out again.
    ring_.reclaim(in.checkpoint);
  }

  const Model& model_;
  KVLayout layout_;
  bool two_threads_;
  std::uint64_t (*heap_count_)();
  aligned_vector<float> kv_;  // every block's K and V, 64-byte aligned (exercise 05)
  RingBumpAllocator ring_;
  HostDevice device_;
  CachingAllocator<HostDevice> caching_;
  std::vector<int> sampled_;
  TopK top_;  // the sampling scratch
  std::size_t last_reserved_ = 0, last_allocated_ = 0;
  std::uint64_t allocator_heap_ = 0;  // the caching allocator's, on the runner's thread
  std::uint64_t caching_heap_ = 0;    // and before the last take

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  const StepInput* job_ = nullptr;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
};

}  // namespace alloclab::engine
