// Stage 2 — laps: reclaim, the wrap to offset 0, the skipped tail, refusal when full, and many
// laps checked call by call against a plain model of the contract. One thread.
#include "ring_under_test.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "ring_test_support.hpp"

namespace stage2_laps {

using alloclab::test::ring::RingBumpAllocator;
using alloclab::test::ring::expect_bad_alignments_refused;
using alloclab::test::ring::Block;
using alloclab::test::ring::fill;
using alloclab::test::ring::first_changed;
using alloclab::test::ring::RingModel;
using alloclab::test::XorShift;

TEST(RingLaps, ReclaimMakesRoomAgain) {
  RingBumpAllocator ring(4096);
  auto* first = static_cast<unsigned char*>(ring.allocate(4096, 1));
  ASSERT_NE(first, nullptr) << "allocate(4096, 1) on a new ring of 4096 bytes returned nullptr.";
  const std::uint64_t c = ring.checkpoint();
  EXPECT_EQ(c, 4096u) << "After allocate(4096, 1), checkpoint() is 4096.";
  ring.reclaim(c);
  EXPECT_EQ(ring.in_use(), 0u) << "reclaim(checkpoint()) after the only step makes every byte available: in_use() "
                                  "must be 0.";
  auto* again = static_cast<unsigned char*>(ring.allocate(100, 1));
  EXPECT_EQ(again, first) << "After a full lap is reclaimed, allocate(100, 1) at position 4096 goes to offset "
                             "4096 % 4096 = 0, the buffer's start.";
  EXPECT_EQ(ring.checkpoint(), 4196u) << "Positions keep counting: the head is at 4096 + 100, never reset to 100.";
}

TEST(RingLaps, ReclaimStopsAtItsCheckpoint) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(1000, 1), nullptr) << "allocate(1000, 1) returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  auto* second = static_cast<unsigned char*>(ring.allocate(1000, 1));
  ASSERT_NE(second, nullptr) << "allocate(1000, 1) returned nullptr.";
  fill(second, 1000, 2);
  const std::uint64_t step2 = ring.checkpoint();
  ring.reclaim(step1);
  // ASSERT: a ring that reclaimed too much has poisoned the second step, which the test reads below.
  ASSERT_EQ(ring.in_use(), step2 - step1)
      << "reclaim(" << step1 << ") must give back the bytes before position " << step1 << " and nothing more: "
      << "the second step (up to " << step2 << ") is still in use, so in_use() must be " << step2 - step1
      << ". Reclaiming up to the head instead, as a consumer that reclaims checkpoint() read at reclaim time "
         "does, gives the whole ring back at once, and the producer then overwrites a step the device is "
         "still reading.";
  // 3096 bytes are free from offset 2000 to the end and then up to offset 1000; 3000 at
  // offset 2000 would run past the end, so they would go to offset 0 and cover the second step.
  EXPECT_EQ(ring.allocate(3000, 1), nullptr)
      << "With the second step still in use at offsets [1000, 2000), allocate(3000, 1) must return nullptr: it "
         "does not fit before the end, and at offset 0 it would cover the second step.";
  EXPECT_EQ(first_changed(second, 1000, 2), 1000u) << "The second step's bytes were overwritten before it was reclaimed.";
}

TEST(RingLaps, AFullRingIsNotAnEmptyOne) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(1024, 1), nullptr) << "allocate(1024, 1) returned nullptr.";
  ring.reclaim(ring.checkpoint());
  // The head and the tail are both at position 1024. Fill the ring exactly: the head ends
  // a whole lap ahead of the tail, at the same offset.
  auto* a = static_cast<unsigned char*>(ring.allocate(3072, 1));
  auto* b = static_cast<unsigned char*>(ring.allocate(1024, 1));
  ASSERT_TRUE(a && b) << "allocate(3072, 1) then allocate(1024, 1) fill an empty ring of 4096 bytes exactly, and "
                         "must both succeed.";
  fill(a, 3072, 3);
  fill(b, 1024, 4);
  EXPECT_EQ(ring.in_use(), 4096u)
      << "The ring is full: in_use() must be 4096. The head and the tail are at the same offset (1024), and "
         "offsets alone cannot tell full from empty; positions that only grow can: 5120 - 1024 = 4096.";
  EXPECT_EQ(ring.allocate(1, 1), nullptr) << "A full ring must refuse allocate(1, 1), even though its head and tail "
                                             "offsets are equal, as in an empty ring.";
  EXPECT_EQ(first_changed(a, 3072, 3), 3072u) << "Bytes of a full ring were handed out a second time.";
  EXPECT_EQ(first_changed(b, 1024, 4), 1024u) << "Bytes of a full ring were handed out a second time.";
}

TEST(RingLaps, AnAllocationThatWouldCrossTheEndStartsAtOffsetZero) {
  RingBumpAllocator ring(4096);
  auto* start = static_cast<unsigned char*>(ring.allocate(3000, 1));
  ASSERT_NE(start, nullptr) << "allocate(3000, 1) returned nullptr.";
  ring.reclaim(ring.checkpoint());
  auto* p = static_cast<unsigned char*>(ring.allocate(2000, 1));
  ASSERT_NE(p, nullptr) << "allocate(2000, 1) on an empty ring whose head is at offset 3000 must succeed at "
                           "offset 0.";
  EXPECT_EQ(p, start) << "2000 bytes at offset 3000 would run past the end of a 4096-byte buffer: the block must "
                         "start at offset 0 instead. A block is always contiguous; one that wraps would be two.";
  EXPECT_EQ(ring.checkpoint(), 3000u + 1096u + 2000u)
      << "The head moves past the 1096 skipped bytes at the end and then the 2000 of the block: 6096.";
  EXPECT_EQ(ring.in_use(), 1096u + 2000u)
      << "The 1096 bytes skipped at the end count as in use until the checkpoint after them is reclaimed: "
         "in_use() must be 3096.";
}

TEST(RingLaps, AStartAlignedPastTheEndWrapsToo) {
  RingBumpAllocator ring(4096);
  void* const start = ring.allocate(65, 1);
  ring.reclaim(ring.checkpoint());
  EXPECT_NE(start, nullptr) << "allocate(65, 1) on a new ring returned nullptr.";
  EXPECT_EQ(ring.allocate(1, 4096), start)
      << "From offset 65, aligned up to 4096, the block would start at offset 4096, the end of the buffer: on this "
         "empty ring it must start at offset 0 instead. Whether a block fits before the end is decided after the "
         "padding, from where the block would really start, not from the head's offset.";
  EXPECT_EQ(ring.checkpoint(), 65u + 4031u + 1u)
      << "The head moves past the 4031 bytes skipped at the end and then the 1 of the block: 4097.";
}

TEST(RingLaps, TheSkippedTailIsReclaimedWithTheCheckpointAfterIt) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(3000, 1), nullptr) << "allocate(3000, 1) returned nullptr.";
  ring.reclaim(ring.checkpoint());
  ASSERT_NE(ring.allocate(2000, 1), nullptr) << "allocate(2000, 1) after a reclaim returned nullptr.";
  const std::uint64_t c = ring.checkpoint();
  EXPECT_EQ(ring.allocate(1001, 1), nullptr)
      << "With 3096 bytes in use (1096 skipped at the end, 2000 at the start), a 1001-byte request cannot fit: "
         "the skipped bytes are not free until their checkpoint is reclaimed.";
  ring.reclaim(c);
  EXPECT_EQ(ring.in_use(), 0u) << "reclaim(" << c << ") gives back the skipped bytes and the block after them.";
  EXPECT_NE(ring.allocate(2096, 1), nullptr)
      << "After everything is reclaimed, 2096 bytes fit exactly between the head's offset (2000) and the end.";
}

TEST(RingLaps, NeverOverwritesALiveStepAfterAWrap) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(3000, 1), nullptr) << "allocate(3000, 1) returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  auto* live = static_cast<unsigned char*>(ring.allocate(1000, 1));  // offsets [3000, 4000)
  ASSERT_NE(live, nullptr) << "allocate(1000, 1) returned nullptr.";
  fill(live, 1000, 5);
  ring.reclaim(step1);
  ASSERT_EQ(ring.in_use(), 1000u) << "reclaim(" << step1 << ") must give back the first step and nothing more: the "
                                     "second step, at offsets [3000, 4000), is still in use.";
  auto* wrapped = static_cast<unsigned char*>(ring.allocate(2000, 1));  // skips [4000, 4096), goes to [0, 2000)
  ASSERT_NE(wrapped, nullptr) << "allocate(2000, 1) must succeed at offset 0: the first step was reclaimed.";
  // The bytes in use now wrap: [3000, 4096) and [0, 2000). The next block would go to
  // offset 2000 and end at 3500, inside the live step.
  void* over = ring.allocate(1500, 1);
  EXPECT_EQ(over, nullptr)
      << "With the bytes in use wrapping around the end (offsets [3000, 4096) and [0, 2000)), allocate(1500, 1) "
         "at offset 2000 would overwrite the live step at [3000, 4000) and must return nullptr. An overlap test "
         "on offsets that assumes the live bytes are one interval [tail, head) misses exactly this case; the "
         "test on positions, new head - tail <= capacity, cannot.";
  EXPECT_EQ(first_changed(live, 1000, 5), 1000u) << "The live step's bytes were overwritten.";
  EXPECT_NE(ring.allocate(1000, 1), nullptr) << "allocate(1000, 1) fits exactly in [2000, 3000) and must succeed.";
}

TEST(RingLaps, ARefusalChangesNothing) {
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(1000, 1), nullptr) << "allocate(1000, 1) returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  ASSERT_NE(ring.allocate(2500, 1), nullptr) << "allocate(2500, 1) returned nullptr.";
  ring.reclaim(step1);
  // Head at offset 3500; 700 bytes would cross the end, and at offset 0 they would reach
  // into the live block at [1000, 3500).
  EXPECT_EQ(ring.allocate(1100, 1), nullptr) << "allocate(1100, 1) must be refused: the block would go to offset 0 "
                                                "and run into the live bytes at [1000, 3500).";
  EXPECT_EQ(ring.checkpoint(), 3500u) << "A refused allocate must not move the head, not even past the skipped end.";
  EXPECT_EQ(ring.in_use(), 2500u) << "A refused allocate must not change in_use().";
  auto* p = static_cast<unsigned char*>(ring.allocate(596, 1));
  ASSERT_NE(p, nullptr) << "allocate(596, 1) fits exactly at the end of the buffer and must succeed.";
  EXPECT_EQ(ring.checkpoint(), 4096u) << "The 596 bytes go right after the head, at offset 3500.";
}

TEST(RingLaps, RefusesBadAlignmentsWhereAWrapWouldFit) {
  RingBumpAllocator ring(2 * 4096);
  ASSERT_NE(ring.allocate(4096, 1), nullptr) << "allocate(4096, 1) on a new ring of 8192 bytes returned nullptr.";
  ring.reclaim(ring.checkpoint());
  expect_bad_alignments_refused(ring, 4096, "after half a lap allocated and reclaimed, where a block that a wild "
                                            "padding sends to offset 0 would fit");
}

TEST(RingLaps, ReclaimIgnoresStaleAndFutureCheckpoints) {
  RingBumpAllocator ring(4096);
  ring.reclaim(0);
  ring.reclaim(10);
  EXPECT_EQ(ring.in_use(), 0u) << "reclaim(0) and then reclaim(10) on a new ring, whose head is at 0, must change "
                                  "nothing: 10 is after the head, nothing there was handed out, and a tail ahead of "
                                  "the head makes in_use() wrap around.";
  ASSERT_NE(ring.allocate(100, 1), nullptr) << "allocate(100, 1) returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  ASSERT_NE(ring.allocate(200, 1), nullptr) << "allocate(200, 1) returned nullptr.";
  const std::uint64_t step2 = ring.checkpoint();
  ring.reclaim(step2 + 1);
  ring.reclaim(UINT64_MAX);
  EXPECT_EQ(ring.in_use(), 300u) << "reclaim(c) with c after the head must be ignored: nothing there was handed out, "
                                    "and a tail ahead of the head would make in_use() wrap around.";
  ring.reclaim(step2);
  EXPECT_EQ(ring.in_use(), 0u) << "reclaim(" << step2 << ") reclaims everything.";
  ring.reclaim(step1);
  EXPECT_EQ(ring.in_use(), 0u) << "reclaim(c) with c before the last reclaimed position must be ignored: the tail "
                                  "never moves back, or bytes already handed out again would count twice.";
  ASSERT_NE(ring.allocate(4096 - 300, 1), nullptr) << "After everything is reclaimed, the rest of the lap fits.";
  EXPECT_EQ(ring.in_use(), 4096u - 300u) << "in_use() counts from the last reclaimed position, " << step2 << ".";
}

// One call of the random sequence, for failure messages.
std::string call(std::size_t n, std::size_t align) {
  return "allocate(" + std::to_string(n) + ", " + std::to_string(align) + ")";
}

// Steps of 1 to 6 allocations of random sizes and alignments, some invalid, each step's
// checkpoint queued and reclaimed later in order, stale and future checkpoints thrown in.
// Every call is compared with the model: the same pointer or the same refusal, the same
// head and in_use(). Every block's pattern is checked before its step is reclaimed.
void run_laps(std::size_t capacity, std::uint64_t seed, int steps) {
  RingBumpAllocator ring(capacity);
  ASSERT_EQ(ring.capacity(), capacity) << "capacity() must be the constructor's argument, a multiple of 4096.";
  RingModel model{capacity};
  XorShift rng{seed};
  struct Step {
    std::uint64_t checkpoint;
    std::vector<Block> blocks;
  };
  std::deque<Step> pending;
  unsigned char* base = nullptr;
  std::uint64_t tags = 0;
  const std::size_t aligns[] = {1, 1, 2, 8, 16, 64, 64, 256, 4096, 0, 3, 8192};

  auto reclaim_oldest = [&]() -> bool {
    if (pending.empty()) return false;
    const Step& step = pending.front();
    for (std::size_t i = 0; i < step.blocks.size(); ++i) {
      const Block& b = step.blocks[i];
      const std::size_t at = first_changed(b.p, b.n, b.seed);
      if (at != b.n) {
        ADD_FAILURE() << "Byte " << at << " of a " << b.n << "-byte block was overwritten before its step was "
                      << "reclaimed (checkpoint " << step.checkpoint << "; " << model.describe()
                      << "). The ring handed out bytes that were still in use.";
        return false;
      }
    }
    ring.reclaim(step.checkpoint);
    model.reclaim(step.checkpoint);
    pending.pop_front();
    return true;
  };

  for (int s = 0; s < steps; ++s) {
    Step step;
    const std::size_t count = rng.between(1, 6);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t n = rng.next() % 8 == 0 ? rng.between(0, capacity + 1) : rng.between(1, 700);
      const std::size_t align = aligns[rng.next() % std::size(aligns)];
      const bool valid = n != 0 && n <= capacity && align != 0 && (align & (align - 1)) == 0 && align <= 4096;
      for (;;) {
        const std::uint64_t head_before = model.head;
        const std::optional<std::size_t> expected = model.allocate(n, align);
        auto* p = static_cast<unsigned char*>(ring.allocate(n, align));
        if (base == nullptr && expected && p != nullptr) base = p - *expected;
        if (expected.has_value() != (p != nullptr)) {
          FAIL() << call(n, align) << " returned " << (p ? "a block" : "nullptr") << " where the contract says "
                 << (expected ? "it fits" : "it must be refused") << " (before the call: head " << head_before
                 << ", tail " << model.tail << ", capacity " << capacity << "; step " << s << " of the run). "
                 << (expected ? "Refusing what fits wastes the ring." : "Handing it out overwrites live bytes or breaks the contract.");
        }
        if (p != nullptr) {
          ASSERT_EQ(p, base + *expected) << call(n, align) << " returned offset " << (p - base) << " where the contract "
                                         << "puts it at offset " << *expected << " (before the call: head " << head_before
                                         << " at offset " << head_before % capacity << ", tail " << model.tail
                                         << "). The block goes at the head's offset aligned up, or at offset 0 when it "
                                            "would cross the end.";
          ASSERT_EQ(ring.checkpoint(), model.head) << "After " << call(n, align) << " the head must be at " << model.head
                                                   << ", skipped end and padding included.";
          fill(p, n, ++tags);
          step.blocks.push_back({p, n, tags});
          break;
        }
        ASSERT_EQ(ring.checkpoint(), model.head) << "A refused " << call(n, align) << " must not move the head.";
        // No room: the consumer reclaims the oldest step and the producer tries again, as
        // an engine's would; a request that can never fit is simply dropped.
        if (!valid || !reclaim_oldest()) break;
        ASSERT_EQ(ring.in_use(), model.in_use()) << "After reclaim, in_use() must be " << model.in_use() << " ("
                                                 << model.describe() << ").";
      }
    }
    step.checkpoint = ring.checkpoint();
    pending.push_back(std::move(step));
    switch (rng.next() % 8) {
      case 0: ring.reclaim(model.tail); break;                 // stale: ignored
      case 1: ring.reclaim(model.head + rng.between(1, 64)); break;  // future: ignored
      case 2: case 3: case 4: reclaim_oldest(); break;
      default: break;
    }
    if (testing::Test::HasFailure()) return;
    ASSERT_EQ(ring.in_use(), model.in_use()) << "in_use() must be the head minus the last reclaimed position ("
                                             << model.describe() << ").";
  }
  EXPECT_GE(model.head / capacity, 40u) << "The run must go around the ring many times to mean anything.";
}

TEST(RingLaps, ManyLapsMatchTheModel) {
  run_laps(4096, 0x9E3779B97F4A7C15ull, 6000);
  if (testing::Test::HasFailure()) return;
  run_laps(3 * 4096, 0xD1B54A32D192ED03ull, 12000);
}

}  // namespace stage2_laps
