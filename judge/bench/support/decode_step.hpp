// The decode step of the seed's per-token workload, shared by the benchmarks that replay it
// (chapter 1's arena and chapter 6's ring): 64 temporary tensors a step, of 512 KiB, 128 KiB
// and 16 KiB in turn, about 14 MiB in all.
#pragma once

#include <cstddef>

namespace alloclab::bench {

constexpr std::size_t kTensorsPerStep = 64;
constexpr std::size_t kSizes[] = {512 * 1024, 128 * 1024, 16 * 1024};

/// The size of tensor `i` of a step.
constexpr std::size_t tensor_size(std::size_t i) { return kSizes[i % 3]; }

/// The bytes one step asks for.
constexpr std::size_t step_bytes() {
  std::size_t total = 0;
  for (std::size_t i = 0; i < kTensorsPerStep; ++i) total += tensor_size(i);
  return total;
}

}  // namespace alloclab::bench
