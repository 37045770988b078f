// Exercise 03 benchmarks: the block pool's own operations, and beam search over a paged KV
// cache against one contiguous buffer per beam.
//
//   allocate_release/block_pool    256 x allocate(1), then 256 x release(): 512 pool calls
//   allocate_release/std_set       the same with a std::set of free block numbers (lowest first)
//   allocate_release/malloc        256 x malloc of one block's bytes (32 KiB), then 256 x free
//   retain_release/block_pool      256 x retain(), then 256 x release() of blocks in use
//   retain_release/atomic_counts   the same counts kept in std::atomic<int>, as a thread-safe
//                                  pool would need them
//   make_writable/block_pool       128 x (retain, make_writable of the now shared block,
//                                  release of the copy): 384 pool calls
//   beam_search/block_pool         one request: a 512-token prompt, 8 beams, 128 new tokens,
//                                  in a PagedKVCache of 16-token blocks
//   beam_search/contiguous         the same request with one buffer per beam, reserved for
//                                  the longest possible sequence (prompt + 128 tokens)
//
// items_per_second counts pool calls (tokens stored, for beam_search). The beam-search rows
// also report `kv_peak_KiB`, the most KV-cache memory the request held at any moment: for the
// paged cache, the blocks in use; for the contiguous buffers, what they reserve.
//
// malloc is slow here for a reason an engine would meet too: when 8 MiB of 32 KiB blocks are
// freed together, glibc hands the memory back to the kernel, and the next round faults it in
// again, page by page.
//
// A token here is 2 KiB: a toy model, so that the benchmark stays quick. The ratio of the two
// kv_peak_KiB figures, not their size, is what carries over to a real model, whose tokens
// take hundreds of KiB each.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "block_pool.hpp"

namespace {

constexpr int kBatch = 256;
constexpr int kBlockTokens = 16;
constexpr std::size_t kTokenBytes = 2048;
constexpr std::size_t kBlockBytes = kBlockTokens * kTokenBytes;

void skip_on_exception(benchmark::State& state, const std::exception& e) {
  state.SkipWithError((std::string("the block pool threw: ") + e.what()).c_str());
}

// ---- allocate_release --------------------------------------------------------

void BM_AllocateRelease_BlockPool(benchmark::State& state) {
  try {
    alloclab::BlockPool pool(kBatch);
    std::array<int, kBatch> ids{};
    for (auto _ : state) {
      for (int i = 0; i < kBatch; ++i) {
        auto got = pool.allocate(1);
        if (!got || got->size() != 1) {
          state.SkipWithError("BlockPool::allocate(1) failed on a pool with free blocks: implement stage 1 first");
          return;
        }
        ids[static_cast<std::size_t>(i)] = got->front();
      }
      benchmark::DoNotOptimize(ids.data());
      for (int i = kBatch - 1; i >= 0; --i) pool.release(ids[static_cast<std::size_t>(i)]);
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.SetItemsProcessed(state.iterations() * 2 * kBatch);
}

void BM_AllocateRelease_StdSet(benchmark::State& state) {
  std::set<int> free_blocks;
  for (int b = 0; b < kBatch; ++b) free_blocks.insert(b);
  std::array<int, kBatch> ids{};
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      auto it = free_blocks.begin();
      ids[static_cast<std::size_t>(i)] = *it;
      free_blocks.erase(it);
    }
    benchmark::DoNotOptimize(ids.data());
    for (int i = kBatch - 1; i >= 0; --i) free_blocks.insert(ids[static_cast<std::size_t>(i)]);
  }
  state.SetItemsProcessed(state.iterations() * 2 * kBatch);
}

void BM_AllocateRelease_Malloc(benchmark::State& state) {
  std::array<void*, kBatch> blocks{};
  for (auto _ : state) {
    for (auto& p : blocks) {
      p = std::malloc(kBlockBytes);
      if (p == nullptr) {
        state.SkipWithError("malloc failed");
        return;
      }
      static_cast<unsigned char*>(p)[0] = 1;
    }
    benchmark::DoNotOptimize(blocks.data());
    for (void* p : blocks) std::free(p);
  }
  state.SetItemsProcessed(state.iterations() * 2 * kBatch);
}

// ---- retain_release ----------------------------------------------------------

void BM_RetainRelease_BlockPool(benchmark::State& state) {
  try {
    alloclab::BlockPool pool(kBatch);
    auto all = pool.allocate(kBatch);
    if (!all || all->size() != static_cast<std::size_t>(kBatch)) {
      state.SkipWithError("BlockPool::allocate failed on a new pool: implement stage 1 first");
      return;
    }
    for (auto _ : state) {
      for (int b : *all) pool.retain(b);
      for (int b : *all) pool.release(b);
      benchmark::ClobberMemory();
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.SetItemsProcessed(state.iterations() * 2 * kBatch);
}

// What the counts cost when they must be safe to change from several threads at once: an
// atomic read-modify-write for every retain and every release.
void BM_RetainRelease_AtomicCounts(benchmark::State& state) {
  std::vector<std::atomic<int>> counts(kBatch);
  for (auto& c : counts) c.store(1, std::memory_order_relaxed);
  for (auto _ : state) {
    for (auto& c : counts) c.fetch_add(1, std::memory_order_relaxed);
    for (auto& c : counts)
      if (c.fetch_sub(1, std::memory_order_acq_rel) == 1) benchmark::DoNotOptimize(&c);  // the last owner
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 2 * kBatch);
}

// ---- make_writable -----------------------------------------------------------

void BM_MakeWritable_BlockPool(benchmark::State& state) {
  constexpr int kShared = kBatch / 2;
  try {
    alloclab::BlockPool pool(kBatch);
    auto held = pool.allocate(kShared);
    if (!held || held->size() != static_cast<std::size_t>(kShared)) {
      state.SkipWithError("BlockPool::allocate failed on a new pool: implement stage 1 first");
      return;
    }
    for (auto _ : state) {
      for (int b : *held) {
        pool.retain(b);                     // a fork: the block is now shared
        const int mine = pool.make_writable(b);  // the writer gets its own block
        if (mine < 0 || mine == b) {
          state.SkipWithError("make_writable of a shared block must return a new block: implement stage 3 first");
          return;
        }
        pool.release(mine);  // the writer's sequence ends
      }
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.SetItemsProcessed(state.iterations() * 3 * kShared);
}

// ---- beam_search ---------------------------------------------------------------

constexpr int kBeams = 8;
constexpr int kPrompt = 512;
constexpr int kGenerate = 128;
constexpr int kMaxTokens = kPrompt + kGenerate;
constexpr int kCacheBlocks = 256;  // more than the request ever needs

// The same choices, every iteration and for both caches: after each step, which beam each
// of the 8 beams continues. Beams mostly continue themselves; now and then a strong beam
// (a low number) takes over the place of another one.
std::vector<std::array<int, kBeams>> beam_parents() {
  std::vector<std::array<int, kBeams>> steps(kGenerate);
  std::uint32_t x = 12345;
  auto next = [&x] {
    x = x * 1664525u + 1013904223u;
    return x >> 8;
  };
  for (auto& parents : steps)
    for (int i = 0; i < kBeams; ++i)
      parents[static_cast<std::size_t>(i)] = next() % 4 == 0 ? static_cast<int>(next() % 3) : i;
  return steps;
}

// The bytes of one token: the content does not matter, only that it is copied.
const std::vector<unsigned char>& token_bytes() {
  static const std::vector<unsigned char> t(kTokenBytes, 0x5A);
  return t;
}

void BM_BeamSearch_Paged(benchmark::State& state) {
  const auto steps = beam_parents();
  const unsigned char* kv = token_bytes().data();
  int peak_blocks = 0;
  try {
    alloclab::PagedKVCache cache(kCacheBlocks, kBlockTokens, kTokenBytes);
    const int total_blocks = cache.pool().num_blocks();
    auto in_use = [&] { return total_blocks - cache.pool().num_free(); };
    for (auto _ : state) {
      // Prefill: the prompt is stored once and shared by every beam.
      const auto root = cache.create();
      for (int t = 0; t < kPrompt; ++t) {
        if (!cache.append(root, kv)) {
          state.SkipWithError("PagedKVCache::append failed with blocks free: implement stage 4 first");
          return;
        }
      }
      std::array<alloclab::PagedKVCache::SeqId, kBeams> beams{};
      beams[0] = root;
      for (int i = 1; i < kBeams; ++i) beams[static_cast<std::size_t>(i)] = cache.fork(root);
      for (const auto& parents : steps) {
        // A beam with several children forks; one without any is freed; the first child of
        // each surviving beam simply continues it.
        std::array<alloclab::PagedKVCache::SeqId, kBeams> next{};
        std::array<bool, kBeams> continued{};
        for (int i = 0; i < kBeams; ++i) {
          const auto p = static_cast<std::size_t>(parents[static_cast<std::size_t>(i)]);
          if (!continued[p]) {
            continued[p] = true;
            next[static_cast<std::size_t>(i)] = beams[p];
          } else {
            next[static_cast<std::size_t>(i)] = cache.fork(beams[p]);
          }
        }
        for (std::size_t p = 0; p < kBeams; ++p)
          if (!continued[p]) cache.free(beams[p]);
        beams = next;
        for (auto s : beams) {
          if (!cache.append(s, kv)) {
            state.SkipWithError("PagedKVCache::append failed with blocks free");
            return;
          }
        }
        peak_blocks = std::max(peak_blocks, in_use());
      }
      for (auto s : beams) cache.free(s);
      if (in_use() != 0) {
        state.SkipWithError("blocks are still in use after every beam was freed: a reference leaks");
        return;
      }
    }
  } catch (const std::exception& e) {
    skip_on_exception(state, e);
    return;
  }
  state.SetItemsProcessed(state.iterations() * (kPrompt + kBeams * kGenerate));
  state.counters["kv_peak_KiB"] = static_cast<double>(peak_blocks) * kBlockBytes / 1024.0;
}

void BM_BeamSearch_Contiguous(benchmark::State& state) {
  const auto steps = beam_parents();
  const unsigned char* kv = token_bytes().data();
  constexpr std::size_t kBeamBytes = kMaxTokens * kTokenBytes;
  // Each beam reserves room for the longest sequence it may reach.
  std::vector<std::unique_ptr<unsigned char[]>> buffers;
  for (int i = 0; i < kBeams; ++i) buffers.emplace_back(new unsigned char[kBeamBytes]);
  std::array<unsigned char*, kBeams> beams{};
  for (auto _ : state) {
    for (int i = 0; i < kBeams; ++i) beams[static_cast<std::size_t>(i)] = buffers[static_cast<std::size_t>(i)].get();
    // Prefill: every beam holds its own copy of the prompt.
    for (int t = 0; t < kPrompt; ++t) std::memcpy(beams[0] + t * kTokenBytes, kv, kTokenBytes);
    for (std::size_t i = 1; i < kBeams; ++i) std::memcpy(beams[i], beams[0], kPrompt * kTokenBytes);
    std::size_t length = kPrompt;
    for (const auto& parents : steps) {
      // A beam without children gives its buffer to an extra child of another beam, which
      // copies its parent's whole history into it.
      std::array<bool, kBeams> continued{};
      std::array<int, kBeams> extra{};
      int extras = 0;
      for (std::size_t i = 0; i < kBeams; ++i) {
        const auto p = static_cast<std::size_t>(parents[i]);
        if (!continued[p])
          continued[p] = true;
        else
          extra[static_cast<std::size_t>(extras++)] = static_cast<int>(p);
      }
      int e = 0;
      for (std::size_t p = 0; p < kBeams; ++p)
        if (!continued[p]) std::memcpy(beams[p], beams[static_cast<std::size_t>(extra[static_cast<std::size_t>(e++)])], length * kTokenBytes);
      for (auto* b : beams) std::memcpy(b + length * kTokenBytes, kv, kTokenBytes);
      ++length;
    }
    benchmark::DoNotOptimize(beams.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * (kPrompt + kBeams * kGenerate));
  state.counters["kv_peak_KiB"] = static_cast<double>(kBeams * kBeamBytes) / 1024.0;
}

}  // namespace

BENCHMARK(BM_AllocateRelease_BlockPool)->Name("allocate_release/block_pool");
BENCHMARK(BM_AllocateRelease_StdSet)->Name("allocate_release/std_set");
BENCHMARK(BM_AllocateRelease_Malloc)->Name("allocate_release/malloc");
BENCHMARK(BM_RetainRelease_BlockPool)->Name("retain_release/block_pool");
BENCHMARK(BM_RetainRelease_AtomicCounts)->Name("retain_release/atomic_counts");
BENCHMARK(BM_MakeWritable_BlockPool)->Name("make_writable/block_pool");
BENCHMARK(BM_BeamSearch_Paged)->Name("beam_search/block_pool")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BeamSearch_Contiguous)->Name("beam_search/contiguous")->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
