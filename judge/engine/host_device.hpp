// The "device" under the caching allocator: host memory that counts its mallocs.
#pragma once

#include <cstddef>
#include <cstdlib>

#include "arithmetic.hpp"

namespace alloclab::engine {

/// Exercise 04's Device concept over the C heap: malloc (nullptr when refused), free, and
/// streams reduced to one that has always finished its work (a CPU forward pass is done when
/// it returns). What matters is `mallocs()`: every call here is what cudaMalloc would be on a
/// GPU, a slow call that synchronises the device, and the caching allocator exists to make
/// it rare.
class HostDevice {
 public:
  void* malloc(std::size_t n) noexcept {
    ++mallocs_;
    return std::aligned_alloc(512, round_up(n, std::size_t{512}));
  }
  void free(void* p) noexcept { std::free(p); }
  int record_event(int) noexcept { return 0; }
  bool event_done(int) const noexcept { return true; }
  void synchronize() noexcept {}

  [[nodiscard]] std::size_t mallocs() const noexcept { return mallocs_; }

 private:
  std::size_t mallocs_ = 0;
};

}  // namespace alloclab::engine
