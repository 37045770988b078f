// Stage 3 — two threads: a producer allocates each step's blocks and writes a pattern into
// them, hands the step's checkpoint to a consumer through a queue, and the consumer checks
// the pattern before it reclaims the step. Run under ThreadSanitizer and AddressSanitizer.
//
// The queue carries steps from the producer to the consumer only (release and acquire on its
// count), and the producer learns nothing from the consumer except through the ring: when
// allocate() refuses, it waits by reading the consumer's progress with relaxed loads, which
// order nothing. So the only edge from the consumer's reads of a step to the producer's next
// writes of the same bytes is the ring's own tail, and ThreadSanitizer reports a ring that
// does not make one. The work is a fixed number of steps, never a time.
#include "ring_under_test.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "alloclab_test.hpp"
#include "ring_test_support.hpp"

namespace stage3_two_threads {

using alloclab::test::ring::RingBumpAllocator;
using alloclab::test::ring::Block;
using alloclab::test::ring::fill;
using alloclab::test::ring::first_changed;
using alloclab::test::XorShift;

struct Step {
  std::uint64_t checkpoint;
  std::size_t first_block, blocks;
};

struct Workload {
  std::size_t capacity;
  int steps;
  std::size_t max_blocks;      // blocks per step: 1 to max_blocks
  std::size_t min_n, max_n;    // bytes per block
  bool observer;               // a third thread reads in_use() all along
};

struct Outcome {
  std::string producer_failure;   // empty when the producer finished every step
  std::string consumer_failure;   // the first overwritten block the consumer found
  std::string observer_failure;
  std::size_t in_use_at_end;
  int steps_reclaimed;
};

Outcome run(const Workload& w) {
  RingBumpAllocator ring(w.capacity);
  std::vector<Step> steps(static_cast<std::size_t>(w.steps));
  std::vector<Block> blocks(steps.size() * w.max_blocks);
  std::atomic<int> published{0};   // steps handed over: release by the producer, acquire by the consumer
  std::atomic<int> reclaimed{0};   // steps reclaimed: read by the producer with relaxed loads only
  std::atomic<bool> producer_done{false}, consumer_done{false};
  Outcome out{};
  const std::size_t aligns[] = {1, 8, 16, 64, 256};

  std::thread consumer([&] {
    int s = 0;
    for (;;) {
      if (s < published.load(std::memory_order_acquire)) {
        const Step& step = steps[static_cast<std::size_t>(s)];
        for (std::size_t i = 0; i < step.blocks && out.consumer_failure.empty(); ++i) {
          const Block& b = blocks[step.first_block + i];
          const std::size_t at = first_changed(b.p, b.n, b.seed);
          if (at != b.n)
            out.consumer_failure = "byte " + std::to_string(at) + " of block " + std::to_string(i) + " (" +
                                   std::to_string(b.n) + " bytes) of step " + std::to_string(s);
        }
        ring.reclaim(step.checkpoint);
        if (ring.in_use() > w.capacity && out.consumer_failure.empty())
          out.consumer_failure = "in_use() = " + std::to_string(ring.in_use()) + " after a reclaim";
        reclaimed.store(++s, std::memory_order_relaxed);
        continue;
      }
      if (producer_done.load(std::memory_order_acquire) && s == published.load(std::memory_order_acquire)) break;
      std::this_thread::yield();
    }
    out.steps_reclaimed = s;
    consumer_done.store(true);
  });

  std::thread observer([&] {
    if (!w.observer) return;
    // At least 2000 reads, and on until both threads are done (or a million reads).
    for (int i = 0; i < 1'000'000 && (i < 2000 || !consumer_done.load()); ++i) {
      const std::size_t seen = ring.in_use();
      if (seen > w.capacity && out.observer_failure.empty())
        out.observer_failure = "in_use() = " + std::to_string(seen);
    }
  });

  XorShift rng{0x2545F4914F6CDD1Dull ^ w.capacity};
  std::uint64_t tags = 0;
  std::size_t next_block = 0;
  for (int s = 0; s < w.steps && out.producer_failure.empty(); ++s) {
    Step& step = steps[static_cast<std::size_t>(s)];
    step.first_block = next_block;
    step.blocks = rng.between(1, w.max_blocks);
    for (std::size_t i = 0; i < step.blocks && out.producer_failure.empty(); ++i) {
      const std::size_t n = rng.between(w.min_n, w.max_n);
      const std::size_t align = aligns[rng.next() % std::size(aligns)];
      void* p = nullptr;
      int refusals_with_nothing_to_reclaim = 0;
      while ((p = ring.allocate(n, align)) == nullptr) {
        // Every earlier step reclaimed, and still no room for a block that fits in an empty
        // ring: the ring is wrong. Allow a few retries for the tail's store to arrive.
        if (reclaimed.load(std::memory_order_relaxed) == s && ++refusals_with_nothing_to_reclaim > 1000) {
          out.producer_failure = "allocate(" + std::to_string(n) + ", " + std::to_string(align) + ") in step " +
                                 std::to_string(s) + " returned nullptr with every earlier step reclaimed (in_use() = " +
                                 std::to_string(ring.in_use()) + ")";
          break;
        }
        std::this_thread::yield();
      }
      if (p == nullptr) break;
      fill(p, n, ++tags);
      blocks[next_block++] = {static_cast<unsigned char*>(p), n, tags};
    }
    if (!out.producer_failure.empty()) break;
    step.checkpoint = ring.checkpoint();
    published.store(s + 1, std::memory_order_release);
  }
  producer_done.store(true, std::memory_order_release);
  consumer.join();
  observer.join();
  out.in_use_at_end = ring.in_use();
  return out;
}

void expect_sound(const Workload& w, const Outcome& out) {
  EXPECT_EQ(out.producer_failure, "")
      << "The producer could not finish: " << out.producer_failure << ". Once the consumer has reclaimed every "
         "checkpoint it was given, a block no larger than a quarter of the ring must fit.";
  EXPECT_EQ(out.consumer_failure, "")
      << "The consumer found " << out.consumer_failure << " overwritten before it reclaimed the step. The producer "
         "must never hand out a byte the consumer has not reclaimed: the tail it compares against must be one the "
         "consumer stored after it was done with the bytes (release in reclaim, acquire in allocate).";
  if (out.producer_failure.empty()) {
    EXPECT_EQ(out.steps_reclaimed, w.steps) << "The consumer must reclaim every step the producer handed over.";
    EXPECT_EQ(out.in_use_at_end, 0u) << "Every checkpoint was reclaimed, so in_use() must end at 0.";
  }
}

// The offsets of the bytes of a ring object that each thread's calls write, found by
// comparing the object's bytes before and after each call. A member the call does not change
// goes unseen, so the calls below move every position the contract has: the head (with and
// without a wrap, and a refusal that must look at the tail), and the tail.
struct Writers {
  std::set<std::size_t> producer, consumer;
  std::size_t object_size = 0;  // sizeof the learner's type
};

Writers bytes_each_thread_writes() {
  alloclab::test::ring::RingInPlace ring(4096);
  const std::span<const unsigned char> object = ring.bytes();
  Writers out;
  out.object_size = object.size();
  std::vector<unsigned char> before(object.size());
  auto record = [&](std::set<std::size_t>& into, auto&& call) {
    std::memcpy(before.data(), object.data(), object.size());
    call();
    for (std::size_t i = 0; i < object.size(); ++i)
      if (object[i] != before[i]) into.insert(i);
  };
  auto produce = [&](std::size_t n) {
    bool ok = false;
    record(out.producer, [&] { ok = ring.allocate(n, 64) != nullptr; });
    return ok;
  };
  auto consume = [&](std::uint64_t c) { record(out.consumer, [&] { ring.reclaim(c); }); };
  const bool first = produce(1000);
  const std::uint64_t step1 = ring.checkpoint();
  const bool second = produce(1000);
  consume(step1);
  const bool third = produce(2000);    // ends at offset 4048, 3048 bytes ahead of the tail
  const bool refused = !produce(2000);  // would wrap to offset 0 and run into the second step
  consume(ring.checkpoint());
  const bool wrapped = produce(2000);  // wraps to offset 0
  consume(ring.checkpoint());
  EXPECT_TRUE(first && second && third && refused && wrapped)
      << "On a ring of 4096 bytes: allocate(1000, 64) twice, reclaim the first step, allocate(2000, 64) must "
         "succeed, a second allocate(2000, 64) must be refused, and after reclaiming everything it must succeed.";
  return out;
}

TEST(RingTwoThreads, HeadAndTailLiveOnDifferentCacheLines) {
  const Writers w = bytes_each_thread_writes();
  ASSERT_FALSE(w.producer.empty()) << "allocate() changed no byte of the ring object: the head never moved.";
  ASSERT_FALSE(w.consumer.empty()) << "reclaim() changed no byte of the ring object: the tail never moved.";
  std::string shared;
  for (std::size_t i : w.producer)
    for (std::size_t j : w.consumer)
      if (i / 64 == j / 64 && shared.empty())
        shared = "byte " + std::to_string(i) + " (written by allocate) and byte " + std::to_string(j) +
                 " (written by reclaim) are both in bytes [" + std::to_string(i / 64 * 64) + ", " +
                 std::to_string(i / 64 * 64 + 64) + ")";
  EXPECT_EQ(shared, "")
      << "Of the ring object (" << w.object_size << " bytes, placed on a 64-byte boundary), " << shared
      << ": one 64-byte cache line holds something the producer writes and something the consumer writes. Every "
         "reclaim would then take the line away from the producer's core and every allocate would take it back, "
         "though the two threads never touch the same variable: false sharing. Give the tail a line of its own "
         "(alignas(64)), and the head and whatever else allocate() writes another.";
}

// On one thread, where every answer is known: the producer may answer "it fits" from the last
// tail it saw, and this stage is the only one judged without AddressSanitizer too, where an
// allocator is free to skip the extra look at the tail that ASan's poisoning asks for.
TEST(RingTwoThreads, TheLastTailSeenNeverOverstatesTheRoom) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(1000, 1), nullptr) << "allocate(1000, 1) on a new ring of 4096 bytes returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  ASSERT_NE(ring.allocate(3096, 1), nullptr) << "allocate(3096, 1) fills the ring exactly and must succeed.";
  EXPECT_EQ(ring.allocate(1, 1), nullptr)
      << "A full ring (nothing reclaimed yet) handed out allocate(1, 1). Whatever the producer remembers of the "
         "tail must never be ahead of the real one: start it at 0, and refresh it only from the consumer's store.";
  ring.reclaim(step1);
  EXPECT_NE(ring.allocate(1000, 1), nullptr)
      << "After reclaim(" << step1 << "), the 1000 bytes at the start of the buffer are free again: allocate(1000, "
         "1) must succeed. A refusal must look at the consumer's tail before it answers.";
  EXPECT_EQ(ring.allocate(1, 1), nullptr) << "The ring is full again: allocate(1, 1) must return nullptr.";
  EXPECT_EQ(ring.in_use(), 4096u) << "A full ring has capacity() bytes in use.";
}

TEST(RingTwoThreads, NoStepIsOverwrittenBeforeItIsReclaimed) {
  const Workload w{64 * 1024, 3000, 6, 1, 2048, false};
  expect_sound(w, run(w));
}

TEST(RingTwoThreads, LargeBlocksWrapWhileTheConsumerReads) {
  // One or two blocks of up to a quarter of the ring per step: nearly every lap skips an end.
  const Workload w{16 * 1024, 2000, 2, 1024, 4096, false};
  expect_sound(w, run(w));
}

TEST(RingTwoThreads, InUseStaysWithinTheCapacityForAnyThread) {
  const Workload w{32 * 1024, 1500, 4, 1, 4096, true};
  const Outcome out = run(w);
  expect_sound(w, out);
  EXPECT_EQ(out.observer_failure, "")
      << "A third thread saw " << out.observer_failure << " on a ring of " << w.capacity << " bytes. in_use() may be "
         "called from any thread; the head and the tail are two loads and either may move in between, so read "
         "them so that their difference held at one instant (for example, the tail, the head, then the tail "
         "again, until the tail has not moved).";
}

}  // namespace stage3_two_threads
