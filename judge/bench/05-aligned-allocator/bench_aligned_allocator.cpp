// Exercise 05 benchmarks: why engines align per-thread state, and what an arena behind
// std::pmr buys a container.
//
// false_sharing: two threads each increment their own counter 4,000,000 times (a load and a
// store each time, as a per-thread statistic is updated). Only where the two counters live
// changes:
//
//   false_sharing/alloclab_aligned_64    aligned_vector<Line64, 64>: one counter per 64-byte line
//   false_sharing/alloclab_aligned_128   aligned_vector<Line128, 128>: one per pair of lines, out
//                                        of reach of the adjacent-line prefetcher as well
//   false_sharing/std_vector_adjacent    std::vector<Counter>: both counters in one cache line
//
// false_sharing_atomic: the same three layouts, each increment a relaxed fetch_add.
//
// The adjacent counters share one line, which the two cores take from each other. With fewer
// free cores than threads the two threads take turns instead of running together, and the
// line stops moving: the ratio then shrinks towards 1.
//
// pmr_vector and pmr_unordered_map: one step's container, built and destroyed, over
//
//   alloclab_arena    alloclab::ArenaResource over a 1 MiB buffer, release() after each step
//   monotonic         std::pmr::monotonic_buffer_resource over the same buffer, release()
//   unsync_pool       std::pmr::unsynchronized_pool_resource, kept from step to step
//   new_delete        std::pmr::new_delete_resource(), the heap
//
// pmr_vector pushes 16,384 ints one by one (the vector grows 15 times); pmr_unordered_map
// inserts 2,048 entries (a node each, and a bucket array that grows). The buffers have a null
// upstream, so a step that did not fit would stop the benchmark instead of measuring the heap.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <memory_resource>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "aligned_allocator.hpp"

namespace {

constexpr std::uint64_t kIncrements = 4'000'000;

struct Counter {
  std::atomic<std::uint64_t> value{0};
};
struct alignas(64) Line64 {
  std::atomic<std::uint64_t> value{0};
};
struct alignas(128) Line128 {
  std::atomic<std::uint64_t> value{0};
};

// A per-thread statistic: a relaxed load and store, no locked instruction. The stores wait in
// the core's store buffer and its loads are served from there, so the core does not wait for
// the line: it writes the buffered stores into the line each time it holds it. How many it
// writes per visit, and so what sharing the line costs, depends on the CPU.
template <class Slot>
void count(Slot& slot) {
  for (std::uint64_t i = 0; i < kIncrements; ++i)
    slot.value.store(slot.value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// A per-thread atomic counter (a reference count, a ticket, a queue index): every fetch_add
// must own the line when it executes, so a shared line moves once per increment.
template <class Slot>
void count_atomically(Slot& slot) {
  for (std::uint64_t i = 0; i < kIncrements; ++i) slot.value.fetch_add(1, std::memory_order_relaxed);
}

template <class Vector, bool kAtomic>
void two_threads(benchmark::State& state) {
  const auto work = [](auto& slot) {
    if constexpr (kAtomic) {
      count_atomically(slot);
    } else {
      count(slot);
    }
  };
  try {
    Vector counters(2);
    for (auto _ : state) {
      std::thread other([&] { work(counters[1]); });
      work(counters[0]);
      other.join();
    }
    const auto gap = reinterpret_cast<std::uintptr_t>(&counters[1]) - reinterpret_cast<std::uintptr_t>(&counters[0]);
    state.counters["bytes_apart"] = static_cast<double>(gap);
    state.counters["line_offset"] = static_cast<double>(reinterpret_cast<std::uintptr_t>(counters.data()) % 64);
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("allocation threw: ") + e.what()).c_str());
  }
}

template <bool kAtomic>
void BM_Aligned64(benchmark::State& state) { two_threads<alloclab::aligned_vector<Line64, 64>, kAtomic>(state); }
template <bool kAtomic>
void BM_Aligned128(benchmark::State& state) { two_threads<alloclab::aligned_vector<Line128, 128>, kAtomic>(state); }
template <bool kAtomic>
void BM_Adjacent(benchmark::State& state) { two_threads<std::vector<Counter>, kAtomic>(state); }

// ---- one step's container over a memory resource ---------------------------------------

constexpr int kVectorInts = 16'384;
constexpr int kMapEntries = 2'048;
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

std::byte* step_buffer() {
  static const auto buffer = std::make_unique<std::byte[]>(kBufferBytes);
  return buffer.get();
}

void build_vector(std::pmr::memory_resource* r) {
  std::pmr::vector<int> v(r);
  for (int i = 0; i < kVectorInts; ++i) v.push_back(i);
  benchmark::DoNotOptimize(v.data());
}

void build_map(std::pmr::memory_resource* r) {
  std::pmr::unordered_map<int, int> m(r);
  for (int i = 0; i < kMapEntries; ++i) m.emplace(i * 7, i);
  benchmark::DoNotOptimize(m.size());
}

using Build = void (*)(std::pmr::memory_resource*);

template <class Resource>
void steps_then_release(benchmark::State& state, Resource& r, Build build) {
  try {
    for (auto _ : state) {
      build(&r);
      r.release();
    }
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("the resource threw: ") + e.what() +
                         " (a step fits in the buffer: implement stage 3 first)").c_str());
  }
}

void arena(benchmark::State& state, Build build) {
  alloclab::ArenaResource r(step_buffer(), kBufferBytes, std::pmr::null_memory_resource());
  steps_then_release(state, r, build);
}

void monotonic(benchmark::State& state, Build build) {
  std::pmr::monotonic_buffer_resource r(step_buffer(), kBufferBytes, std::pmr::null_memory_resource());
  steps_then_release(state, r, build);
}

void pool(benchmark::State& state, Build build) {
  std::pmr::unsynchronized_pool_resource r;
  build(&r);  // warmed up once: the pool keeps its chunks from step to step, as an engine's would
  for (auto _ : state) build(&r);
}

void heap(benchmark::State& state, Build build) {
  for (auto _ : state) build(std::pmr::new_delete_resource());
}

}  // namespace

BENCHMARK(BM_Aligned64<false>)->Name("false_sharing/alloclab_aligned_64")->UseRealTime();
BENCHMARK(BM_Aligned128<false>)->Name("false_sharing/alloclab_aligned_128")->UseRealTime();
BENCHMARK(BM_Adjacent<false>)->Name("false_sharing/std_vector_adjacent")->UseRealTime();

BENCHMARK(BM_Aligned64<true>)->Name("false_sharing_atomic/alloclab_aligned_64")->UseRealTime();
BENCHMARK(BM_Aligned128<true>)->Name("false_sharing_atomic/alloclab_aligned_128")->UseRealTime();
BENCHMARK(BM_Adjacent<true>)->Name("false_sharing_atomic/std_vector_adjacent")->UseRealTime();

BENCHMARK_CAPTURE(arena, vector, build_vector)->Name("pmr_vector/alloclab_arena");
BENCHMARK_CAPTURE(monotonic, vector, build_vector)->Name("pmr_vector/monotonic");
BENCHMARK_CAPTURE(pool, vector, build_vector)->Name("pmr_vector/unsync_pool");
BENCHMARK_CAPTURE(heap, vector, build_vector)->Name("pmr_vector/new_delete");

BENCHMARK_CAPTURE(arena, map, build_map)->Name("pmr_unordered_map/alloclab_arena");
BENCHMARK_CAPTURE(monotonic, map, build_map)->Name("pmr_unordered_map/monotonic");
BENCHMARK_CAPTURE(pool, map, build_map)->Name("pmr_unordered_map/unsync_pool");
BENCHMARK_CAPTURE(heap, map, build_map)->Name("pmr_unordered_map/new_delete");

BENCHMARK_MAIN();
