// Stage 4 — ASan-aware: AddressSanitizer knows which bytes of the ring are handed out.
//
// The buffer comes from mmap, so ASan knows nothing of it unless the ring tells it: every
// byte not handed out must be poisoned. What the consumer reclaims is poisoned at the latest
// by the producer's next allocate() (the producer may do it, so that only one thread ever
// writes the buffer's shadow), and the tests read the shadow only after such a call.
//
// ASan keeps one shadow byte per 8 bytes ("granule") and can only say "the first k bytes of
// this granule are live". So every block checked here starts on an 8-aligned address, and a
// poisoned byte is only expected where a granule's live bytes would not have to follow it.
#include "ring_under_test.hpp"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "ring_test_support.hpp"

namespace stage4_asan {

using alloclab::test::ring::RingBumpAllocator;
using alloclab::test::first_poisoned;
using alloclab::test::is_poisoned;
using alloclab::test::XorShift;
using alloclab::test::ring::fill;
using alloclab::test::ring::RingModel;

// The offset, from `p`, of the first byte in [p, p + n) that ASan would NOT report, or n.
std::size_t first_live(const void* p, std::size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (!is_poisoned(bytes + i)) return i;
  return n;
}

// A read the compiler may not remove: ASan checks it like any other.
unsigned char read_byte(const void* p) { return *static_cast<const volatile unsigned char*>(p); }

TEST(RingAsan, ANewBufferIsPoisoned) {
  ALLOCLAB_REQUIRE_ASAN();
  for (std::size_t capacity : {std::size_t{4096}, std::size_t{3 * 4096}}) {
    RingBumpAllocator ring(capacity);
    auto* start = static_cast<unsigned char*>(ring.allocate(1, 1));
    ASSERT_NE(start, nullptr) << "allocate(1, 1) on a new ring returned nullptr.";
    const std::size_t live = first_live(start + 1, capacity - 1);
    EXPECT_EQ(live, capacity - 1)
        << "In a new ring of " << capacity << " bytes with one byte handed out, byte " << 1 + live << " is not "
           "poisoned. mmap'd memory is not ASan's: it reports nothing there unless told. Poison the whole "
           "buffer in the constructor (ASAN_POISON_MEMORY_REGION), so that a stray read or write into bytes "
           "never handed out is reported.";
  }
}

TEST(RingAsan, AllocateUnpoisonsExactlyTheBlock) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  for (std::size_t n : {std::size_t{13}, std::size_t{1}, std::size_t{100}, std::size_t{64}, std::size_t{1021}}) {
    auto* p = static_cast<unsigned char*>(ring.allocate(n, 64));
    ASSERT_NE(p, nullptr) << "allocate(" << n << ", 64) returned nullptr.";
    EXPECT_EQ(first_poisoned(p, n), nullptr) << "allocate(" << n << ", 64) must unpoison all of the block, or the "
                                                "caller's own use of it is reported.";
    EXPECT_TRUE(is_poisoned(p + n)) << "allocate(" << n << ", 64) must leave the byte right after the block poisoned: "
                                       "unpoison [p, p + n) exactly, so a one-byte overrun is reported.";
  }
}

TEST(RingAsan, PaddingStaysPoisoned) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  auto* a = static_cast<unsigned char*>(ring.allocate(8, 8));
  auto* b = static_cast<unsigned char*>(ring.allocate(8, 256));
  ASSERT_TRUE(a && b) << "allocate(8, 8) then allocate(8, 256) on a new ring returned nullptr.";
  const std::size_t live = first_live(a + 8, 248);
  EXPECT_EQ(live, 248u) << "The 248 bytes of padding between an 8-byte block and the next 256-aligned one must stay "
                           "poisoned, but byte "
                        << 8 + live << " is live. Unpoison the block, not everything from the old head: "
                                       "padding belongs to no one.";
}

TEST(RingAsan, TheSkippedEndStaysPoisoned) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  auto* start = static_cast<unsigned char*>(ring.allocate(3000, 8));
  ASSERT_NE(start, nullptr) << "allocate(3000, 8) returned nullptr.";
  ring.reclaim(ring.checkpoint());
  auto* wrapped = static_cast<unsigned char*>(ring.allocate(2000, 8));
  ASSERT_EQ(wrapped, start) << "allocate(2000, 8) with the head at offset 3000 must start at offset 0.";
  const std::size_t live = first_live(start + 3000, 1096);
  EXPECT_EQ(live, 1096u) << "The 1096 bytes skipped at the end of the buffer (offsets 3000 to 4096) were not handed "
                            "out and must be poisoned, but offset "
                         << 3000 + live << " is live. Unpoison the block at offset 0 only.";
  EXPECT_EQ(first_poisoned(wrapped, 2000), nullptr) << "The block placed at offset 0 must be live.";
}

TEST(RingAsan, ReclaimedBytesArePoisonedByTheNextAllocate) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4 * 4096);
  auto* old = static_cast<unsigned char*>(ring.allocate(1000, 64));
  auto* old2 = static_cast<unsigned char*>(ring.allocate(520, 64));
  ASSERT_TRUE(old && old2) << "allocate(1000, 64) then allocate(520, 64) returned nullptr.";
  fill(old, 1000, 1);
  ring.reclaim(ring.checkpoint());
  ASSERT_NE(ring.allocate(64, 64), nullptr) << "allocate(64, 64) after a reclaim returned nullptr.";
  const std::size_t live = first_live(old, 1000);
  EXPECT_EQ(live, 1000u) << "A step was reclaimed and the producer has allocated since, yet byte " << live << " of "
                            "the step's first block is still live. Poison what reclaim gives back (at the latest "
                            "in the next allocate), so that a pointer kept from a finished step is reported.";
  EXPECT_EQ(first_live(old2, 520), 520u) << "Every block of the reclaimed step must be poisoned, the last one too.";
}

// Many laps, and after every allocate the whole buffer compared byte by byte with the
// contract: a byte is live exactly when it belongs to a block whose step is not reclaimed yet.
// Alignments of 8 and more keep every block at the start of a granule of its own, so that
// each byte's answer is one ASan can give. The first steps are one-byte steps reclaimed one
// at a time; then steps of random sizes wrap around the end, and reclaims lag behind.
TEST(RingAsan, EveryLapPoisonsExactlyWhatIsNotHandedOut) {
  ALLOCLAB_REQUIRE_ASAN();
  constexpr std::size_t kCapacity = 4096;
  RingBumpAllocator ring(kCapacity);
  RingModel model{kCapacity};
  XorShift rng{0x5DEECE66Dull};
  struct Live {
    std::size_t offset, n;
  };
  struct Step {
    std::uint64_t checkpoint;
    std::vector<Live> blocks;
  };
  std::deque<Step> pending;
  Step current;
  unsigned char* base = nullptr;
  const std::size_t aligns[] = {8, 16, 64, 256};
  const std::size_t sizes[] = {1, 7, 8, 13, 100, 512, 1000};

  auto reclaim_oldest = [&] {
    ring.reclaim(pending.front().checkpoint);
    model.reclaim(pending.front().checkpoint);
    pending.pop_front();
  };
  // The first byte whose shadow disagrees with the contract, described; empty when none does.
  auto first_wrong = [&]() -> std::string {
    std::vector<char> live(kCapacity, 0);
    auto mark = [&](const Step& step) {
      for (const Live& b : step.blocks) std::fill_n(live.begin() + static_cast<std::ptrdiff_t>(b.offset), b.n, 1);
    };
    for (const Step& step : pending) mark(step);
    mark(current);
    for (std::size_t i = 0; i < kCapacity; ++i)
      if (is_poisoned(base + i) == (live[i] != 0))
        return "offset " + std::to_string(i) + " is " + (live[i] ? "poisoned but belongs to a block still in use"
                                                                : "live but belongs to no block in use") +
               " (" + model.describe() + ")";
    return "";
  };

  for (int s = 0; s < 600; ++s) {
    const std::size_t count = s < 4 ? 1 : rng.between(1, 4);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t n = s < 4 ? 1 : sizes[rng.next() % std::size(sizes)];
      const std::size_t align = s < 4 ? 8 : aligns[rng.next() % std::size(aligns)];
      for (;;) {
        const std::optional<std::size_t> expected = model.allocate(n, align);
        auto* p = static_cast<unsigned char*>(ring.allocate(n, align));
        ASSERT_EQ(p != nullptr, expected.has_value())
            << "allocate(" << n << ", " << align << ") disagrees with the contract about whether it fits ("
            << model.describe() << ").";
        if (p == nullptr) {
          ASSERT_FALSE(pending.empty()) << "allocate(" << n << ", " << align << ") refused on an empty ring.";
          reclaim_oldest();
          continue;
        }
        if (base == nullptr) base = p - *expected;
        ASSERT_EQ(p, base + *expected) << "allocate(" << n << ", " << align << ") returned the wrong offset.";
        current.blocks.push_back({*expected, n});
        const std::string wrong = first_wrong();
        ASSERT_EQ(wrong, "")
            << "After allocate(" << n << ", " << align << ") in step " << s << ", " << wrong << ". Once the "
               "producer has allocated, every reclaimed position must be poisoned (they may wrap around the end "
               "of the buffer: poison up to the end, then on from offset 0), and no block still in use may be.";
        break;
      }
    }
    current.checkpoint = ring.checkpoint();
    pending.push_back(std::move(current));
    current = Step{};
    // A reclaim of one step right away for the first steps, then reclaims that lag behind.
    const std::size_t reclaims = s < 4 ? 1 : rng.between(0, 2);
    for (std::size_t r = 0; r < reclaims && !pending.empty(); ++r) reclaim_oldest();
  }
  EXPECT_GE(model.head / kCapacity, 40u) << "The run must go around the ring many times to mean anything.";
}

TEST(RingAsan, AWholeLapReclaimedAtOnceIsPoisoned) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  auto* start = static_cast<unsigned char*>(ring.allocate(100, 64));
  ASSERT_NE(start, nullptr) << "allocate(100, 64) on a new ring returned nullptr.";
  ASSERT_NE(ring.allocate(3996, 1), nullptr) << "allocate(3996, 1) fills the rest of the ring and must succeed.";
  ring.reclaim(ring.checkpoint());
  ASSERT_NE(ring.allocate(64, 64), nullptr) << "allocate(64, 64) after reclaiming the whole ring returned nullptr.";
  const std::size_t live = first_live(start + 64, 4096 - 64);
  EXPECT_EQ(live, 4096u - 64)
      << "The whole ring, a full lap, was reclaimed at once, and the producer has allocated 64 bytes at offset 0 "
         "since; offset "
      << 64 + live << " is still live. Poison everything reclaimed, also when it is a whole lap or more.";
}

TEST(RingAsan, ReclaimLeavesLaterStepsLive) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  ASSERT_NE(ring.allocate(1000, 64), nullptr) << "allocate(1000, 64) returned nullptr.";
  const std::uint64_t step1 = ring.checkpoint();
  auto* kept = static_cast<unsigned char*>(ring.allocate(1000, 64));
  ASSERT_NE(kept, nullptr) << "allocate(1000, 64) returned nullptr.";
  ring.reclaim(step1);
  auto* next = static_cast<unsigned char*>(ring.allocate(100, 64));
  ASSERT_NE(next, nullptr) << "allocate(100, 64) returned nullptr.";
  EXPECT_EQ(first_poisoned(kept, 1000), nullptr)
      << "reclaim(" << step1 << ") poisoned bytes of the step after it: poison the reclaimed positions only, the "
         "rest is still in use.";
  EXPECT_EQ(first_poisoned(next, 100), nullptr) << "The new block must be live.";
}

TEST(RingAsan, TheDestructorUnpoisonsTheBuffer) {
  ALLOCLAB_REQUIRE_ASAN();
  constexpr std::size_t kCapacity = 1 << 16;
  std::optional<RingBumpAllocator> ring(std::in_place, kCapacity);
  auto* start = static_cast<unsigned char*>(ring->allocate(64, 64));
  ASSERT_NE(start, nullptr) << "allocate(64, 64) returned nullptr.";
  // The shadow is read inside munmap, at the moment the pages are given back: some ASan
  // runtimes clear it themselves in their own munmap, and afterwards it would prove nothing.
  alloclab::test::ring::watch_unmapping(start);
  ring.reset();
  const auto calls = alloclab::test::ring::unmappings();
  alloclab::test::ring::watch_unmapping(nullptr);
  ASSERT_FALSE(calls.empty())
      << "The ring was destroyed and no munmap call gave back its buffer, so there is nothing to check here: "
         "the buffer must come from mmap and go back with munmap (RingPlacement.TheBufferIsAMappingGivenBackWithMunmap).";
  for (const auto& call : calls) {
    EXPECT_EQ(call.first_poisoned, nullptr)
        << "The destructor called munmap while byte "
        << static_cast<const unsigned char*>(call.first_poisoned) - start << " of the buffer was still poisoned. ASan's "
           "allocator never owned these pages, and not every ASan runtime clears the shadow of what is unmapped: "
           "the next mmap the kernel places at this address would start out poisoned, and code that did nothing "
           "wrong would be reported. Unpoison the whole buffer before munmap.";
  }
}

TEST(RingAsan, ReadingAReclaimedBlockIsReported) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4 * 4096);
  auto* old = static_cast<unsigned char*>(ring.allocate(256, 64));
  ASSERT_NE(old, nullptr) << "allocate(256, 64) returned nullptr.";
  fill(old, 256, 9);
  ring.reclaim(ring.checkpoint());
  ASSERT_NE(ring.allocate(64, 64), nullptr) << "allocate(64, 64) after a reclaim returned nullptr.";
  alloclab::test::quick_death_tests();
  EXPECT_DEATH(read_byte(old + 100), "use-after-poison")
      << "Reading a block whose step was reclaimed, once the producer has allocated again, must be reported by "
         "AddressSanitizer: a pointer kept from a finished step is dangling.";
}

TEST(RingAsan, ReadingPastABlockIsReported) {
  ALLOCLAB_REQUIRE_ASAN();
  RingBumpAllocator ring(4096);
  auto* p = static_cast<unsigned char*>(ring.allocate(13, 64));
  ASSERT_NE(p, nullptr) << "allocate(13, 64) returned nullptr.";
  alloclab::test::quick_death_tests();
  EXPECT_DEATH(read_byte(p + 13), "use-after-poison")
      << "Reading the byte right after a 13-byte block must be reported by AddressSanitizer.";
}

}  // namespace stage4_asan
