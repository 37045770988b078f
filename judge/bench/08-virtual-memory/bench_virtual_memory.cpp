// Exercise 08 benchmarks: what a granule of virtual memory costs against exercise 03's block
// pool, growth on the hot path with pages mapped ahead and without, the ranges a mapping leaves
// in /proc/self/maps, and the bytes committed against the KV bytes in use.
//
// An iteration is a batch of 32 operations, in every row of a workload, so that rows compare per
// operation; only the operation named is timed (Google Benchmark's manual time), the rest of each
// granule's life (create, map, touch, unmap, release) runs around it untimed.
//
//   map/vm_<granule>           AddressRange::map of a created granule never touched
//   unmap/vm_<granule>         AddressRange::unmap of a mapped granule whose pages were written
//   release/vm_<granule>       PhysicalMemory::release of the last reference to such a granule,
//                              once unmapped: a hole punched in the file
//   first_touch/vm_<granule>   one write to each page of a granule just mapped
//   <each of those>/block_pool BlockPool::allocate(1) of exercise 03's reference: what the paged
//                              design pays for a block, the same in all four workloads
//
//   grow/vm_reserve            PageReserve::acquire with pages ready (2 MiB pages): the hot path
//                              when the background thread has mapped ahead
//   grow/vm_on_demand_<g>      create + map + first touch on the hot path, no thread
//   grow/block_pool            BlockPool::allocate(1)
//   Target (read in the figures, never asserted): vm_reserve within 2x of block_pool.
//
//   ranges/vm_consecutive      1024 granules of 64 KiB mapped into consecutive slots in the
//                              order of their file offsets
//   ranges/vm_scattered        the same granules, neighbouring slots holding granules 7 apart
//   The time is the 1024 maps; `ranges` counts the lines of /proc/self/maps inside the
//   reservation, `pct_max_map_count` what share of vm.max_map_count they are.
//
//   kv_footprint/vm_<granule>  a ContiguousKVCache of 16 slices of 2048 tokens of 2 KiB, over
//                              physical memory for all of them, serves 48 sequences of random
//                              lengths (the same ones in every row), at most 12 at a time: the
//                              prompt (half the length) at admission, then a token a step;
//                              a released slice stays idle with its granules (deferred
//                              reclamation) for the next sequence
//   kv_footprint/vm_trim_<g>   the same, with trim() after every release: idle slices hold nothing
//   kv_footprint/block_pool    the same sequences in exercise 03's PagedKVCache, 16-token blocks,
//                              its buffer sized for the same 16 sequences of 2048 tokens
//   Counters, sampled every 8 steps and summed over the samples before dividing:
//     held_over_used       bytes of the granules (blocks) mapped in live sequences' slices ÷ KV
//                          bytes in use: with trim, what rounding to whole granules costs; without,
//                          a reused slice also keeps what its last sequence mapped beyond the need
//     mapped_over_used     every granule mapped, idle slices' included ÷ KV bytes in use: what
//                          a GPU commits, since cuMemCreate commits a whole granule
//     committed_over_used  the bytes the kernel committed to the file (fstat) ÷ KV bytes in use:
//                          what the CPU commits, page by page as they are touched; for the
//                          block pool, its whole buffer, allocated and zeroed up front
//   Every row starts cold: its memory is created in the iteration, and given back in it.
//
// Counts beside times, since a count does not move with the machine's load: `faults` (minor
// faults of the timed thread, getrusage's ru_minflt, per operation, per sequence in kv_footprint;
// for vm_reserve, those the hot path takes writing every page of a batch it got, counted once,
// untimed; a granule here is made of the system's pages, 4 KiB on x86-64, with no huge pages, so
// a 2 MiB granule's first touch is 512 faults), `committed_KiB` (the change
// of the file's committed bytes per operation), `hot_path_maps` (granules mapped by the hot path
// per operation: PageReserve::acquire's own maps, every one without the thread), `maps` (map calls
// per sequence served).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "virtual_memory.hpp"
#include "../../../solutions/03-block-pool/block_pool.hpp"

namespace {

constexpr int kBatch = 32;
constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

void skip_on_exception(benchmark::State& state, const std::exception& e) {
  state.SkipWithError((std::string("threw: ") + e.what()).c_str());
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Seconds since `start`, for SetIterationTime.
double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An address the code under test returned: a null one is refused here, where a write through it
// would end the whole run with a crash instead of one row with a message.
std::byte* usable(std::byte* p, const char* what) {
  if (p == nullptr) throw std::logic_error(std::string(what) + " returned nullptr");
  return p;
}

void touch(std::byte* p, std::size_t bytes) {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (std::size_t at = 0; at < bytes; at += page) *reinterpret_cast<volatile std::byte*>(p + at) = std::byte{1};
}

// A granule of `memory`; none is a mistake here, since every batch gives its granules back.
std::size_t created(alloclab::PhysicalMemory& memory) {
  const auto g = memory.create();
  if (!g) throw std::logic_error("PhysicalMemory::create found no free granule in a pool whose granules were all released");
  return *g;
}

// A count summed over the run, per operation.
double per_op(const benchmark::State& state, double count) {
  return count / (static_cast<double>(state.iterations()) * kBatch);
}

// What is timed of a granule's life; the other steps run untimed around it.
enum class Step { map, first_touch, unmap, release };

void BM_Granule(benchmark::State& state, std::size_t granule, Step timed) {
  long faults = 0;
  double committed = 0;
  try {
    alloclab::PhysicalMemory memory(granule, kBatch);
    alloclab::AddressRange range(memory, kBatch);
    std::vector<std::size_t> g(kBatch);
    for (auto _ : state) {
      for (std::size_t& granule_made : g) granule_made = created(memory);
      double seconds = 0;
      // Runs `step` on every granule of the batch, timed, counted, when it is the step measured.
      auto run = [&](Step step, auto&& each) {
        const bool measured = step == timed;
        const long faults_before = measured ? minor_faults() : 0;
        const double committed_before = measured ? static_cast<double>(memory.committed_bytes()) : 0;
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < kBatch; ++i) each(i);
        if (!measured) return;
        seconds = since(start);
        faults += minor_faults() - faults_before;
        committed += static_cast<double>(memory.committed_bytes()) - committed_before;
      };
      run(Step::map, [&](std::size_t i) { range.map(i, g[i]); });
      // Unmap and release are timed on granules whose pages were written, as a KV cache's are;
      // a map is timed alone, and its granules are given back untouched, which costs little.
      if (timed != Step::map) run(Step::first_touch, [&](std::size_t i) { touch(usable(range.address(i), "AddressRange::address"), granule); });
      run(Step::unmap, [&](std::size_t i) { benchmark::DoNotOptimize(range.unmap(i)); });
      run(Step::release, [&](std::size_t i) { memory.release(g[i]); });
      state.SetIterationTime(seconds);
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.counters["faults"] = per_op(state, static_cast<double>(faults));
  state.counters["committed_KiB"] = per_op(state, committed) / KiB;
}

// kBatch x allocate(1) of exercise 03's reference, timed; the releases are not.
void BM_BlockPoolAllocate(benchmark::State& state) {
  long faults = 0;
  try {
    alloclab::BlockPool pool(kBatch);
    std::vector<int> ids(kBatch);
    for (auto _ : state) {
      const long faults_before = minor_faults();
      const auto start = std::chrono::steady_clock::now();
      for (int& id : ids) id = pool.allocate(1)->front();
      const double seconds = since(start);
      faults += minor_faults() - faults_before;
      benchmark::DoNotOptimize(ids.data());
      for (const int id : ids) pool.release(id);
      state.SetIterationTime(seconds);
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.counters["faults"] = per_op(state, static_cast<double>(faults));
  state.counters["committed_KiB"] = 0;
  state.counters["hot_path_maps"] = 0;
}

// ---- grow --------------------------------------------------------------------

// Pages ready stay between the marks through a batch: 36 ready, 32 taken leave 4 (not below the
// low mark, so the thread is not woken), and 32 given back make 36 (not above the high mark).
// The thread maps nothing while the hot path is timed.
constexpr std::size_t kReserveGranule = 2 * MiB, kReservePages = 40, kReserveLow = 4, kReserveHigh = 36;

void BM_Reserve(benchmark::State& state) {
  long faults = 0;
  std::size_t hot_path_maps = 0;
  try {
    alloclab::PhysicalMemory memory(kReserveGranule, kReservePages);
    alloclab::PageReserve reserve(memory, kReservePages, kReserveLow, kReserveHigh);
    reserve.settle();
    const std::size_t slow_before = reserve.slow_maps();
    std::vector<std::size_t> pages(kBatch);
    bool first = true;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (auto& page : pages) {
        const auto got = reserve.acquire();
        if (!got) {
          state.SkipWithError("PageReserve::acquire returned no page with pages ready");
          return;
        }
        page = *got;
      }
      const double seconds = since(start);
      if (first) {
        // Untimed, once: a page handed out ready takes no fault when the hot path writes it
        // (the block pool's allocate writes no block either).
        const long faults_before = minor_faults();
        for (const std::size_t page : pages) touch(usable(reserve.address(page), "PageReserve::address"), kReserveGranule);
        faults = minor_faults() - faults_before;
        first = false;
      }
      for (const std::size_t page : pages) reserve.give_back(page);
      state.SetIterationTime(seconds);
    }
    hot_path_maps = reserve.slow_maps() - slow_before;
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.counters["faults"] = static_cast<double>(faults) / kBatch;
  state.counters["hot_path_maps"] = per_op(state, static_cast<double>(hot_path_maps));
}

void BM_OnDemand(benchmark::State& state, std::size_t granule) {
  long faults = 0;
  std::size_t maps = 0;
  try {
    alloclab::PhysicalMemory memory(granule, kBatch);
    alloclab::AddressRange range(memory, kBatch);
    for (auto _ : state) {
      const std::size_t maps_before = range.map_calls();
      const long faults_before = minor_faults();
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < kBatch; ++i) {
        range.map(i, created(memory));
        touch(usable(range.address(i), "AddressRange::address"), granule);
      }
      const double seconds = since(start);
      faults += minor_faults() - faults_before;
      maps += range.map_calls() - maps_before;
      for (std::size_t i = 0; i < kBatch; ++i) memory.release(range.unmap(i));
      state.SetIterationTime(seconds);
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.counters["faults"] = per_op(state, static_cast<double>(faults));
  state.counters["hot_path_maps"] = per_op(state, static_cast<double>(maps));
}

// ---- ranges ------------------------------------------------------------------

constexpr std::size_t kRangeGranules = 1024, kRangeGranule = 64 * KiB, kScatter = 7;

// The lines of /proc/self/maps that lie inside [base, base + bytes).
std::size_t ranges_inside(const std::byte* base, std::size_t bytes) {
  const auto lo = reinterpret_cast<std::uintptr_t>(base), hi = lo + bytes;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::size_t n = 0;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2 && start >= lo && end <= hi) ++n;
  }
  return n;
}

double max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  double n = 0;
  return f >> n ? n : 0;
}

void BM_Ranges(benchmark::State& state, bool scattered) {
  std::size_t ranges = 0;
  try {
    alloclab::PhysicalMemory memory(kRangeGranule, kRangeGranules);
    alloclab::AddressRange range(memory, kRangeGranules);
    for (std::size_t i = 0; i < kRangeGranules; ++i)
      if (memory.create() != i) {
        state.SkipWithError("PhysicalMemory::create must hand out the lowest free granule first");
        return;
      }
    // Slot s holds granule 7s mod 1024 (7 is odd, so every granule once): neighbouring slots
    // map file offsets 7 granules apart, which the kernel cannot merge into one range.
    auto granule_at = [&](std::size_t slot) { return scattered ? slot * kScatter % kRangeGranules : slot; };
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t s = 0; s < kRangeGranules; ++s) range.map(s, granule_at(s));
      const double seconds = since(start);
      if (ranges == 0) ranges = ranges_inside(range.base(), range.bytes());
      for (std::size_t s = 0; s < kRangeGranules; ++s) benchmark::DoNotOptimize(range.unmap(s));
      state.SetIterationTime(seconds);
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.counters["ranges"] = static_cast<double>(ranges);
  if (const double limit = max_map_count(); limit > 0) state.counters["pct_max_map_count"] = 100.0 * ranges / limit;
}

// ---- kv_footprint --------------------------------------------------------------

constexpr std::size_t kSlices = 16, kMaxTokens = 2048, kTokenBytes = 2 * KiB;
constexpr std::size_t kSequences = 48, kLive = 12, kSampleEvery = 8;
constexpr int kBlockTokens = 16;

struct Request {
  std::size_t prompt, length;
};

// The same 48 requests in every row: lengths uniform in [16, 2048], the prompt half of it.
std::vector<Request> requests() {
  std::vector<Request> r;
  std::uint32_t x = 2026;
  for (std::size_t i = 0; i < kSequences; ++i) {
    x = x * 1664525u + 1013904223u;
    const std::size_t length = 16 + (x >> 8) % (kMaxTokens - 15);
    r.push_back({length / 2, length});
  }
  return r;
}

const std::byte* token_kv() {
  static const std::vector<std::byte> t(kTokenBytes, std::byte{0x5A});
  return t.data();
}

// Sums of the samples, divided at the end.
struct Footprint {
  double used = 0, held = 0, mapped = 0, committed = 0;
  void report(benchmark::State& state) const {
    if (used == 0) return;
    state.counters["held_over_used"] = held / used;
    state.counters["mapped_over_used"] = mapped / used;
    state.counters["committed_over_used"] = committed / used;
  }
};

// Serves the requests, at most kLive at a time: `admit(i, prompt)`, `grow(i, tokens)` (the token
// is written there), `release(i)`, and `sample(used)` every kSampleEvery steps. False when the
// cache refused, which it never should with memory for every slice.
template <class Admit, class Grow, class Release, class Sample>
bool serve(const std::vector<Request>& reqs, Admit admit, Grow grow, Release release, Sample sample) {
  struct Live {
    std::size_t id, tokens;
  };
  std::vector<Live> live;
  std::size_t next = 0, step = 0;
  while (next < reqs.size() || !live.empty()) {
    while (live.size() < kLive && next < reqs.size()) {
      if (!admit(next, reqs[next].prompt)) return false;
      live.push_back({next, reqs[next].prompt});
      ++next;
    }
    for (Live& l : live)
      if (!grow(l.id, ++l.tokens)) return false;
    for (std::size_t k = live.size(); k-- > 0;)
      if (live[k].tokens == reqs[live[k].id].length) {
        release(live[k].id);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
    if (++step % kSampleEvery == 0) {
      std::size_t tokens = 0;
      for (const Live& l : live) tokens += l.tokens;
      sample(static_cast<double>(tokens * kTokenBytes));
    }
  }
  return true;
}

// Times `serve_once(f)` every iteration, its memory's creation and return included, and reports
// the footprint it sampled into `f`, the faults and the map calls per sequence. `serve_once`
// returns the map calls it made, or std::nullopt when the cache refused.
template <class ServeOnce>
void footprint(benchmark::State& state, const char* refused, ServeOnce serve_once) {
  Footprint f;
  long faults = 0;
  std::size_t maps = 0;
  try {
    for (auto _ : state) {
      const long faults_before = minor_faults();
      const auto start = std::chrono::steady_clock::now();
      f = {};
      const std::optional<std::size_t> made = serve_once(f);
      if (!made) {
        state.SkipWithError(refused);
        return;
      }
      state.SetIterationTime(since(start));
      faults = minor_faults() - faults_before;
      maps = *made;
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  f.report(state);
  state.counters["faults"] = static_cast<double>(faults) / kSequences;
  state.counters["maps"] = static_cast<double>(maps) / kSequences;
}

void BM_FootprintContiguous(benchmark::State& state, std::size_t granule, bool trim) {
  const auto reqs = requests();
  footprint(state, "ContiguousKVCache refused a sequence with physical memory for every slice",
            [&](Footprint& f) -> std::optional<std::size_t> {
              const std::size_t slice_granules = (kMaxTokens * kTokenBytes + granule - 1) / granule;
              alloclab::PhysicalMemory memory(granule, kSlices * slice_granules);
              alloclab::ContiguousKVCache cache(memory, kSlices, kMaxTokens, kTokenBytes);
              auto write = [&](std::size_t id, std::size_t from, std::size_t to) {
                std::byte* kv = usable(cache.data(static_cast<int>(id)), "ContiguousKVCache::data");
                for (std::size_t t = from; t < to; ++t) std::memcpy(kv + t * kTokenBytes, token_kv(), kTokenBytes);
              };
              const bool served = serve(
                  reqs,
                  [&](std::size_t id, std::size_t prompt) {
                    if (!cache.admit(static_cast<int>(id), prompt)) return false;
                    write(id, 0, prompt);
                    return true;
                  },
                  [&](std::size_t id, std::size_t tokens) {
                    if (!cache.grow(static_cast<int>(id), tokens)) return false;
                    write(id, tokens - 1, tokens);
                    return true;
                  },
                  [&](std::size_t id) {
                    cache.release(static_cast<int>(id));
                    if (trim) cache.trim();
                  },
                  [&](double used) {
                    const double mapped = static_cast<double>(cache.mapped_granules() * granule);
                    f.used += used;
                    f.mapped += mapped;
                    f.held += mapped - static_cast<double>(cache.idle_granules() * granule);
                    f.committed += static_cast<double>(memory.committed_bytes());
                  });
              if (!served) return std::nullopt;
              return cache.range().map_calls();
            });
}

void BM_FootprintPaged(benchmark::State& state) {
  const auto reqs = requests();
  constexpr int kBlocks = static_cast<int>(kSlices * kMaxTokens / kBlockTokens);
  constexpr double kBlockBytes = kBlockTokens * kTokenBytes;
  footprint(state, "PagedKVCache refused a token with blocks for every sequence",
            [&](Footprint& f) -> std::optional<std::size_t> {
              alloclab::PagedKVCache cache(kBlocks, kBlockTokens, kTokenBytes);
              std::vector<alloclab::PagedKVCache::SeqId> seq(reqs.size());
              const bool served = serve(
                  reqs,
                  [&](std::size_t id, std::size_t prompt) {
                    seq[id] = cache.create();
                    for (std::size_t t = 0; t < prompt; ++t)
                      if (!cache.append(seq[id], token_kv())) return false;
                    return true;
                  },
                  [&](std::size_t id, std::size_t) { return cache.append(seq[id], token_kv()); },
                  [&](std::size_t id) { cache.free(seq[id]); },
                  [&](double used) {
                    f.used += used;
                    f.held += (kBlocks - cache.pool().num_free()) * kBlockBytes;
                    f.mapped += kBlocks * kBlockBytes;
                    f.committed += kBlocks * kBlockBytes;
                  });
              if (!served) return std::nullopt;
              return std::size_t{0};  // the paged cache maps nothing: its buffer is the heap's
            });
}

struct Size {
  const char* name;
  std::size_t bytes;
};
constexpr Size kSizes[] = {{"4KiB", 4 * KiB}, {"64KiB", 64 * KiB}, {"2MiB", 2 * MiB}};

// Registered in this order, which is the order the judge prints the rows in.
[[maybe_unused]] const bool registered = [] {
  const std::pair<const char*, Step> steps[] = {
      {"map", Step::map}, {"unmap", Step::unmap}, {"release", Step::release}, {"first_touch", Step::first_touch}};
  for (const auto& [workload, step] : steps) {
    for (const Size& size : kSizes)
      benchmark::RegisterBenchmark((std::string(workload) + "/vm_" + size.name).c_str(), BM_Granule, size.bytes, step)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string(workload) + "/block_pool").c_str(), BM_BlockPoolAllocate)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("grow/vm_reserve", BM_Reserve)->UseManualTime()->Unit(benchmark::kMicrosecond);
  for (const Size& size : kSizes)
    benchmark::RegisterBenchmark((std::string("grow/vm_on_demand_") + size.name).c_str(), BM_OnDemand, size.bytes)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("grow/block_pool", BM_BlockPoolAllocate)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ranges/vm_consecutive", BM_Ranges, false)->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("ranges/vm_scattered", BM_Ranges, true)->UseManualTime()->Unit(benchmark::kMicrosecond);
  for (const Size& size : kSizes)
    benchmark::RegisterBenchmark((std::string("kv_footprint/vm_") + size.name).c_str(), BM_FootprintContiguous,
                                 size.bytes, false)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  for (const Size& size : kSizes)
    benchmark::RegisterBenchmark((std::string("kv_footprint/vm_trim_") + size.name).c_str(), BM_FootprintContiguous,
                                 size.bytes, true)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("kv_footprint/block_pool", BM_FootprintPaged)->UseManualTime()->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
