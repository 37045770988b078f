// Exercise 01 benchmarks: the decode-step workload of an inference engine.
//
// One decode step allocates 64 temporary tensors (512 KiB, 128 KiB and 16 KiB in turn,
// about 14 MiB in all), touches each one, and reclaims all of them when the step ends.
// The same step runs against these allocators:
//
//   decode_step/arena          alloclab::Arena, reset() at the end of each step
//   decode_step/malloc         malloc, then free of every tensor at the end of each step
//   decode_step/new_delete     new std::byte[], then delete[] of every tensor
//   decode_step/pmr_monotonic  std::pmr::monotonic_buffer_resource over a preallocated
//                              buffer, release() at the end of each step
//   decode_step/malloc_tuned   malloc/free again, with glibc told never to give memory
//                              back to the kernel (the setting is the process's: `bench`
//                              runs each benchmark in a process of its own)
//
// Only one byte of each tensor is written: enough that no allocation can be optimised
// away, little enough that the allocator's own cost is what is measured. Each tensor's
// byte sits on a different cache line (byte 64 * i of tensor i); the first byte of every
// tensor would map all 64 writes to one cache set, and the benchmark would measure the
// cache's conflicts instead of the allocator.
//
// With glibc's default settings, the blocks of 128 KiB and more are first served by
// mmap; once such a block is freed, glibc raises its mmap threshold to that block's size
// and serves them from the heap instead, but it keeps giving the top of the heap back to
// the kernel whenever more than twice that threshold is free, which is every step. So
// each step asks the kernel for memory again and faults its pages in again: that cost is
// real, and an engine's step pays it too. What malloc costs therefore depends on the
// process's past: after a free of an mmapped block of 8 MiB or more (a 16 MiB buffer, say)
// the trim threshold is above what a step frees, the heap is never trimmed, and a step
// costs microseconds instead of a millisecond; mallopt (malloc_tuned) cannot be undone.
// Rows in one process would see each other's settings, in whatever order they ran, so
// `bench` runs every benchmark in a process of its own. Within one, the arena's and the
// pmr resource's buffers are allocated once and kept, so that freeing them cannot raise
// the thresholds between Google Benchmark's runs of the same row.
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <memory_resource>
#include <new>
#include <string>

#include "arena.hpp"
#include "decode_step.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

using namespace alloclab::bench;  // the decode step: kTensorsPerStep, tensor_size, step_bytes

// Room for one step: every size is a multiple of 16 KiB, so no padding is needed, but
// leave a little slack for an arena that pads more than it must.
constexpr std::size_t kStepCapacity = step_bytes() + (1 << 20);

// Writes one byte of tensor i, on a cache line of its own, and tells the compiler the
// memory is observed. Every tensor is at least 16 KiB, so the byte is inside it.
inline void touch(void* p, std::size_t i) {
  static_cast<unsigned char*>(p)[(64 * i) % 4096] = static_cast<unsigned char>(i);
  benchmark::DoNotOptimize(p);
}

void report(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kTensorsPerStep));
  state.counters["tensors/step"] = static_cast<double>(kTensorsPerStep);
  state.counters["MiB/step"] = static_cast<double>(step_bytes()) / (1 << 20);
}

// Built on first use and kept until the process exits (see the top of this file).
alloclab::Arena& step_arena() {
  static alloclab::Arena arena(kStepCapacity);
  return arena;
}

void BM_Arena(benchmark::State& state) {
  try {
    alloclab::Arena& arena = step_arena();
    arena.reset();
    for (auto _ : state) {
      for (std::size_t i = 0; i < kTensorsPerStep; ++i) {
        void* p = arena.allocate(tensor_size(i));
        if (p == nullptr) {
          state.SkipWithError("Arena::allocate returned nullptr: implement stage 1 first");
          return;
        }
        touch(p, i);
      }
      arena.reset();
    }
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("the arena threw: ") + e.what()).c_str());
    return;
  }
  report(state);
}

void malloc_free_steps(benchmark::State& state) {
  std::array<void*, kTensorsPerStep> tensors{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kTensorsPerStep; ++i) {
      tensors[i] = std::malloc(tensor_size(i));
      if (tensors[i] == nullptr) {
        state.SkipWithError("malloc returned nullptr");
        return;
      }
      touch(tensors[i], i);
    }
    for (void* p : tensors) std::free(p);
  }
  report(state);
}

void BM_Malloc(benchmark::State& state) { malloc_free_steps(state); }

// The same, after telling glibc to serve every block from the heap and never to trim it:
// what malloc costs when the kernel is kept out of the step. mallopt cannot be undone: run
// alone, as `bench` runs every benchmark, it changes no other row.
void BM_MallocTuned(benchmark::State& state) {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts; every tensor is far below it.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 256 << 20) != 1) {
    state.SkipWithError("mallopt refused the settings");
    return;
  }
  malloc_free_steps(state);
#else
  state.SkipWithError("needs glibc's mallopt");
#endif
}

void BM_NewDelete(benchmark::State& state) {
  std::array<std::byte*, kTensorsPerStep> tensors{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kTensorsPerStep; ++i) {
      tensors[i] = new std::byte[tensor_size(i)];
      touch(tensors[i], i);
    }
    for (std::byte* p : tensors) delete[] p;
  }
  report(state);
}

void BM_PmrMonotonic(benchmark::State& state) {
  // The buffer is allocated once, like the arena's; the resource never asks its upstream
  // for more, so a step that did not fit would throw instead of measuring something else.
  static const auto buffer = std::make_unique<std::byte[]>(kStepCapacity);
  std::pmr::monotonic_buffer_resource resource(buffer.get(), kStepCapacity, std::pmr::null_memory_resource());
  for (auto _ : state) {
    for (std::size_t i = 0; i < kTensorsPerStep; ++i) {
      void* p = resource.allocate(tensor_size(i), alignof(std::max_align_t));
      touch(p, i);
    }
    resource.release();  // back to the start of the buffer
  }
  report(state);
}

}  // namespace

BENCHMARK(BM_Arena)->Name("decode_step/arena");
BENCHMARK(BM_Malloc)->Name("decode_step/malloc");
BENCHMARK(BM_NewDelete)->Name("decode_step/new_delete");
BENCHMARK(BM_PmrMonotonic)->Name("decode_step/pmr_monotonic");
BENCHMARK(BM_MallocTuned)->Name("decode_step/malloc_tuned");

BENCHMARK_MAIN();
