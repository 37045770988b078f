// Hostile: the reference pool of exercise 02, but its thread-safe wrapper takes two locks in
// opposite orders: allocate() locks the free list, then the statistics; deallocate() the
// statistics, then the free list. Two threads soon wait for each other forever. The judge's
// time limit stops the test program, and the stage fails with the tests that hung.
// Judge: exercise 2, stage 4, asan
// Verdict: failed
// Outcome: timeout
// Report says: test_timeout_seconds
// Command line: no (it would wait out, or fill, the catalog's full limits)
#pragma once

// The reference, with its thread-safe pool renamed out of the way.
#define SharedFixedPool ReferenceSharedFixedPool
#include "../../../solutions/02-fixed-pool/fixed_pool.hpp"
#undef SharedFixedPool

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

namespace alloclab {

class SharedFixedPool {
 public:
  explicit SharedFixedPool(std::size_t block_size, std::size_t blocks_per_chunk = 1024,
                           std::size_t max_chunks = SIZE_MAX)
      : pool_(block_size, blocks_per_chunk, max_chunks) {}
  SharedFixedPool(const SharedFixedPool&) = delete;
  SharedFixedPool& operator=(const SharedFixedPool&) = delete;

  void* allocate() {
    std::lock_guard list(list_mutex_);
    std::this_thread::yield();  // widen the window in which the other order can start
    std::lock_guard stats(stats_mutex_);
    ++operations_;
    return pool_.allocate();
  }

  void deallocate(void* p) noexcept {
    if (p == nullptr) return;
    std::lock_guard stats(stats_mutex_);
    std::this_thread::yield();
    std::lock_guard list(list_mutex_);
    ++operations_;
    pool_.deallocate(p);
  }

  bool owns(const void* p) const noexcept {
    std::lock_guard list(list_mutex_);
    return pool_.owns(p);
  }
  std::size_t block_size() const noexcept { return pool_.block_size(); }
  std::size_t blocks_per_chunk() const noexcept { return pool_.blocks_per_chunk(); }
  std::size_t chunk_count() const noexcept {
    std::lock_guard list(list_mutex_);
    return pool_.chunk_count();
  }
  std::size_t free_blocks() const noexcept {
    std::lock_guard list(list_mutex_);
    return pool_.free_blocks();
  }
  std::size_t capacity() const noexcept {
    std::lock_guard list(list_mutex_);
    return pool_.capacity();
  }

 private:
  mutable std::mutex list_mutex_;
  mutable std::mutex stats_mutex_;
  std::size_t operations_ = 0;
  FixedPool pool_;
};

}  // namespace alloclab
