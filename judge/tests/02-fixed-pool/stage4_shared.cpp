// Stage 4 — SharedFixedPool: every rule of FixedPool while many threads allocate and free at once.
//
// Run under ThreadSanitizer, which reports any unsynchronised access to the pool's state,
// and under AddressSanitizer, which with the patterns below catches a block handed to two
// threads. The work is bounded in operations, never in time.
#include "pool_under_test.hpp"

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "alloclab_test.hpp"
#include "pool_test_support.hpp"

namespace stage4_shared {

using alloclab::test::pool::SharedFixedPool;
using alloclab::test::address;
using alloclab::test::XorShift;
using namespace alloclab::test::pool;

constexpr int kThreads = 4;

// The pattern thread `t` writes into the block it took as its `n`-th.
std::uint64_t tag(int t, std::uint64_t n) { return (static_cast<std::uint64_t>(t + 1) << 48) | n; }

void write_tag(void* p, std::size_t n, std::uint64_t value) {
  auto* words = static_cast<std::uint64_t*>(p);
  for (std::size_t i = 0; i < n / sizeof(std::uint64_t); ++i) words[i] = value;
}

bool has_tag(const void* p, std::size_t n, std::uint64_t value) {
  const auto* words = static_cast<const std::uint64_t*>(p);
  for (std::size_t i = 0; i < n / sizeof(std::uint64_t); ++i)
    if (words[i] != value) return false;
  return true;
}

TEST(PoolShared, KeepsTheSingleThreadedContract) {
  EXPECT_FALSE(alloclab::test::pool::traits_of(alloclab::test::pool::Kind::shared).copy_constructible)
      << "SharedFixedPool must not be copyable.";
  EXPECT_THROW(SharedFixedPool{0}, std::invalid_argument) << "SharedFixedPool(0) must throw std::invalid_argument, as FixedPool does.";
  EXPECT_THROW(SharedFixedPool(64, 0), std::invalid_argument) << "SharedFixedPool(64, 0) must throw std::invalid_argument.";
  EXPECT_THROW(SharedFixedPool(64, 4, 0), std::invalid_argument) << "SharedFixedPool(64, 4, 0) must throw std::invalid_argument.";

  SharedFixedPool defaults(24);
  EXPECT_EQ(defaults.blocks_per_chunk(), 1024u) << "SharedFixedPool's blocks_per_chunk defaults to 1024, as FixedPool's does.";
  EXPECT_EQ(defaults.capacity(), 1024u) << "A default SharedFixedPool starts with one chunk of 1024 blocks.";

  SharedFixedPool pool(24, 4, 2);
  EXPECT_EQ(pool.block_size(), expected_stride(24)) << "SharedFixedPool rounds the block size as FixedPool does.";
  EXPECT_EQ(pool.blocks_per_chunk(), 4u) << "blocks_per_chunk() must return the constructor's second argument.";
  EXPECT_EQ(pool.chunk_count(), 1u) << "The constructor allocates the first chunk.";
  EXPECT_EQ(pool.capacity(), 4u) << "One chunk of four blocks: capacity() must be 4.";
  EXPECT_EQ(pool.free_blocks(), 4u) << "Nothing handed out yet: all four blocks are free.";
  void* a = pool.allocate();
  void* b = pool.allocate();
  ASSERT_TRUE(a && b) << "allocate() returned nullptr.";
  EXPECT_EQ(address(a) % kAlign, 0u) << "Blocks must be aligned to alignof(std::max_align_t).";
  pool.deallocate(a);
  EXPECT_EQ(pool.allocate(), a) << "With one thread, the free list is still last in, first out.";
  EXPECT_TRUE(pool.owns(a)) << "owns() must be true for the start of a block.";
  EXPECT_FALSE(pool.owns(static_cast<char*>(a) + 1)) << "owns() must be false for an interior pointer.";
  pool.deallocate(nullptr);
  EXPECT_EQ(pool.free_blocks(), 2u) << "deallocate(nullptr) does nothing.";
  std::vector<void*> blocks{a, b};
  for (int i = 0; i < 6; ++i) blocks.push_back(pool.allocate());
  EXPECT_EQ(pool.chunk_count(), 2u) << "Eight blocks in chunks of four: two chunks.";
  EXPECT_THROW((void)pool.allocate(), std::bad_alloc) << "At max_chunks with no free block, allocate() throws std::bad_alloc.";
  EXPECT_EQ(pool.free_blocks(), 0u) << "A failed allocate() changes nothing.";
  for (void* p : blocks) pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), 8u) << "All eight blocks were given back: free_blocks() must be 8.";
}

TEST(PoolShared, NoBlockIsHandedToTwoThreads) {
  constexpr int kOps = 20000;
  constexpr std::size_t kHeld = 32;
  SharedFixedPool pool(64, 16);
  std::atomic<int> nulls{0}, clobbered{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      XorShift rng{0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1)};
      std::vector<std::pair<void*, std::uint64_t>> held;
      std::uint64_t taken = 0;
      start.arrive_and_wait();
      for (int op = 0; op < kOps; ++op) {
        const bool take = held.empty() || (held.size() < kHeld && rng.next() % 2 == 0);
        if (take) {
          void* p = pool.allocate();
          if (p == nullptr) {
            ++nulls;
            continue;
          }
          const std::uint64_t value = tag(t, ++taken);
          write_tag(p, 64, value);
          held.emplace_back(p, value);
        } else {
          const std::size_t i = rng.next() % held.size();
          auto [p, value] = held[i];
          if (!has_tag(p, 64, value)) ++clobbered;
          held[i] = held.back();
          held.pop_back();
          pool.deallocate(p);
        }
      }
      for (auto [p, value] : held) {
        if (!has_tag(p, 64, value)) ++clobbered;
        pool.deallocate(p);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(nulls.load(), 0) << "allocate() returned nullptr while " << kThreads << " threads used the pool.";
  EXPECT_EQ(clobbered.load(), 0)
      << clobbered.load() << " times, a thread found its block overwritten before it freed it: the pool handed "
         "the same block to two threads at once. Two threads popping the free list without exclusion can both "
         "read the same head.";
  EXPECT_EQ(pool.free_blocks(), pool.capacity())
      << "Every block was given back, so free_blocks() must equal capacity(); a difference means pushes or pops "
         "were lost while threads raced on the list.";
}

TEST(PoolShared, ChunkLimitHoldsUnderContention) {
  // Many short rounds: in each, the threads race to take every block of a fresh pool (and
  // ask for four times more), so the last chunks are fought over hundreds of times.
  constexpr int kRounds = 100;
  constexpr std::size_t kPerChunk = 1, kMaxChunks = 16, kCapacity = kPerChunk * kMaxChunks;
  std::optional<SharedFixedPool> pool;
  pool.emplace(64, kPerChunk, kMaxChunks);
  std::vector<std::vector<void*>> got(kThreads);
  int rounds_checked = 0, first_bad_round = -1;
  std::size_t bad_chunks = 0, bad_count = 0;
  bool bad_distinct = false, bad_owns = false;
  // Runs on one thread once all have finished a round: checks it, then sets up the next.
  auto end_of_round = [&]() noexcept {
    std::vector<void*> all;
    for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
    const std::size_t chunks = pool->chunk_count();
    const bool distinct = all_distinct(all);
    bool owned = true;
    for (void* p : all) owned = owned && pool->owns(p);
    if (first_bad_round < 0 && (chunks > kMaxChunks || all.size() != kCapacity || !distinct || !owned)) {
      first_bad_round = rounds_checked;
      bad_chunks = chunks;
      bad_count = all.size();
      bad_distinct = !distinct;
      bad_owns = !owned;
    }
    ++rounds_checked;
    if (distinct && owned)
      for (void* p : all) pool->deallocate(p);
    for (auto& g : got) g.clear();
    pool.emplace(64, kPerChunk, kMaxChunks);
  };
  std::barrier sync(kThreads, end_of_round);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (std::size_t i = 0; i < kCapacity; ++i) {  // together the threads ask for 4x the capacity
          try {
            if (void* p = pool->allocate()) got[t].push_back(p);
          } catch (const std::bad_alloc&) {
          }
        }
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(rounds_checked, kRounds) << "Every round must finish and be checked.";
  EXPECT_EQ(first_bad_round, -1) << "In round " << first_bad_round << " of " << kRounds
                                 << ", a pool with max_chunks = " << kMaxChunks << " went wrong under contention.";
  EXPECT_LE(bad_chunks, kMaxChunks)
      << "The pool grew to " << bad_chunks << " chunks with max_chunks = " << kMaxChunks
      << ". Checking the limit and adding a chunk must happen under the same lock, or two threads can both see "
         "room for one more chunk and both add it.";
  if (first_bad_round >= 0) {
    EXPECT_EQ(bad_count, kCapacity)
        << "The threads got " << bad_count << " blocks from a pool whose limit is " << kCapacity
        << " blocks. allocate() may throw std::bad_alloc only when no block is free and the limit is reached; "
           "more blocks than that means a block was handed out twice or the limit was broken.";
  }
  EXPECT_FALSE(bad_distinct) << "The same block was handed to two threads.";
  EXPECT_FALSE(bad_owns) << "A block handed out is not a block of the pool.";
}

TEST(PoolShared, ThreadsGrowThePoolTogether) {
  constexpr int kEach = 500;
  SharedFixedPool pool(32, 4);
  std::latch start(kThreads);
  std::vector<std::vector<void*>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        void* p = pool.allocate();
        if (p == nullptr) continue;
        write_tag(p, 32, tag(t, static_cast<std::uint64_t>(i)));
        got[t].push_back(p);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<void*> all;
  for (auto& g : got) all.insert(all.end(), g.begin(), g.end());
  ASSERT_EQ(all.size(), std::size_t{kThreads * kEach}) << "allocate() returned nullptr while the pool grew.";
  EXPECT_TRUE(all_distinct(all)) << "Two threads received the same block while the pool was adding chunks.";
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i)
      EXPECT_TRUE(has_tag(got[t][i], 32, tag(t, static_cast<std::uint64_t>(i))))
          << "Thread " << t << "'s block " << i << " was overwritten by another thread.";
  EXPECT_EQ(pool.chunk_count(), std::size_t{kThreads * kEach / 4})
      << "2000 blocks in chunks of 4 need exactly 500 chunks when nothing is freed: the pool adds a chunk only "
         "when its list is empty. More chunks means two threads both grew it for the same need.";
  EXPECT_EQ(pool.free_blocks(), 0u) << "Every block added was handed out.";
  for (void* p : all) pool.deallocate(p);
  EXPECT_EQ(pool.free_blocks(), pool.capacity()) << "Every block was given back.";
}

TEST(PoolShared, QueriesAreSafeWhileOthersAllocate) {
  constexpr int kOps = 20000;
  SharedFixedPool pool(64, 8, 64);
  void* const kept = pool.allocate();  // owns() of it is true throughout, of kept + 1 false
  ASSERT_NE(kept, nullptr) << "allocate() on a new pool returned nullptr.";
  std::atomic<bool> done{false};
  std::atomic<int> observers_started{0};
  std::atomic<int> broken{0};
  // Each query has a thread of its own that calls nothing else: no lock taken by another query
  // then orders its reads after the writers' changes, so a query that reads without the lock
  // is a ThreadSanitizer report every run, not only when a growth falls between two queries.
  std::vector<std::thread> observers;
  const auto observe = [&](auto query) {
    observers.emplace_back([&, query] {
      // Until the workers are done, however slowly they are scheduled: an observer that stopped
      // early could miss the growths, and with them the report of a query without the lock.
      for (int i = 0; i < 2000 || !done.load(); ++i) {
        if (!query()) ++broken;
        if (i == 0) ++observers_started;
        if (i % 256 == 255) std::this_thread::yield();  // four observers, two cores: let the workers run
      }
    });
  };
  observe([&] {
    const std::size_t free_now = pool.free_blocks();
    return free_now <= pool.capacity();  // capacity only grows, so a later read bounds it
  });
  observe([&] { return pool.capacity() >= 8 && pool.capacity() <= 64 * 8; });
  observe([&] { return pool.chunk_count() >= 1 && pool.chunk_count() <= 64; });
  observe([&] { return pool.owns(kept) && !pool.owns(static_cast<char*>(kept) + 1); });
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      // The pool grows while every query is being called.
      while (observers_started.load() < 4) std::this_thread::yield();
      XorShift rng{0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(t + 1)};
      std::vector<void*> held;
      for (int op = 0; op < kOps; ++op) {
        if (held.empty() || (held.size() < 64 && rng.next() % 2 == 0)) {
          if (void* p = pool.allocate()) held.push_back(p);
        } else {
          pool.deallocate(held.back());
          held.pop_back();
        }
      }
      for (void* p : held) pool.deallocate(p);
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  for (auto& o : observers) o.join();
  EXPECT_EQ(broken.load(), 0) << "While two threads allocated, the threads that only asked saw free_blocks() > "
                                 "capacity(), capacity() or chunk_count() outside what max_chunks = 64 of 8 blocks "
                                 "allows, or "
                                 "owns() wrong about a block held throughout: the queries must read the pool's "
                                 "state under the same exclusion as the writers.";
  pool.deallocate(kept);
  EXPECT_EQ(pool.free_blocks(), pool.capacity()) << "Every block was given back.";
}

}  // namespace stage4_shared
