// Stage 3 — reuse: reset, peak, mark and rewind.
#include "arena_under_test.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include "alloclab_test.hpp"

namespace stage3_reuse {

using alloclab::test::arena::Arena;

// The requests of one "step": mixed sizes and alignments, as a decode step's temporaries.
struct Request {
  std::size_t n, align;
};
constexpr Request kStep[] = {{100, 1}, {256, 64}, {13, 8}, {0, 16}, {1000, 128}, {7, 1}, {512, 4096}};

std::vector<void*> run_step(Arena& arena) {
  std::vector<void*> out;
  for (const Request& r : kStep) out.push_back(arena.allocate(r.n, r.align));
  return out;
}

TEST(ArenaReuse, ResetReclaimsEverything) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(4000, 1), nullptr);
  arena.reset();
  EXPECT_EQ(arena.used(), 0u) << "After reset(), nothing is in use: used() must be 0.";
  EXPECT_EQ(arena.capacity(), 4096u) << "capacity() must not change after reset(): it is the buffer's size.";
  void* p = nullptr;
  EXPECT_NO_THROW(p = arena.allocate(4096, 1))
      << "After reset(), the whole buffer must be available again: that is the point of an arena, "
         "one store reclaims a whole step's memory.";
  EXPECT_NE(p, nullptr) << "allocate(4096, 1) after reset() returned nullptr.";
}

TEST(ArenaReuse, ResetHandsOutTheSameAddresses) {
  Arena arena(1 << 16);
  const std::vector<void*> first = run_step(arena);
  const std::size_t used_by_step = arena.used();
  for (std::size_t i = 0; i < first.size(); ++i) {
    ASSERT_NE(first[i], nullptr) << "Request " << i << " of the step returned nullptr.";
  }
  for (int step = 1; step <= 3; ++step) {
    arena.reset();
    const std::vector<void*> again = run_step(arena);
    EXPECT_EQ(again, first) << "After reset(), step " << step << " made the same requests and must get "
                               "the same addresses: reset() returns the cursor to the buffer's start, "
                               "so an engine's step reuses the same (already cached, already mapped) memory.";
    EXPECT_EQ(arena.used(), used_by_step) << "The same requests after reset() must use the same number of bytes.";
  }
}

TEST(ArenaReuse, PeakIsTheHighWaterMark) {
  Arena arena(4096);
  EXPECT_EQ(arena.peak(), 0u) << "A new arena has never handed out anything: peak() must be 0.";
  ASSERT_NE(arena.allocate(1, 1), nullptr);
  ASSERT_NE(arena.allocate(100, 64), nullptr);
  EXPECT_EQ(arena.peak(), 164u) << "peak() must follow used() upwards, padding included (1 + 63 + 100).";
  const auto m = arena.mark();
  ASSERT_NE(arena.allocate(1000, 1), nullptr);
  EXPECT_EQ(arena.peak(), 1164u) << "peak() must be the largest used() seen so far.";
  arena.rewind(m);
  EXPECT_EQ(arena.used(), 164u) << "rewind(m) must bring used() back to the marker's offset, 164.";
  EXPECT_EQ(arena.peak(), 1164u) << "rewind() must not lower peak(): peak() is the high-water mark, the "
                                    "number an engine reads to size the arena for the worst step, not used().";
  ASSERT_NE(arena.allocate(10, 1), nullptr);
  EXPECT_EQ(arena.peak(), 1164u) << "An allocation that stays below the old high-water mark must not change peak().";
}

TEST(ArenaReuse, ResetKeepsPeak) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(3000, 1), nullptr);
  arena.reset();
  EXPECT_EQ(arena.peak(), 3000u) << "reset() must not lower peak(): an engine resets the arena every step "
                                    "and reads peak() afterwards to learn how large the arena must be.";
  ASSERT_NE(arena.allocate(500, 1), nullptr);
  EXPECT_EQ(arena.peak(), 3000u) << "After reset(), a smaller step must not lower peak().";
  arena.reset();
  ASSERT_NE(arena.allocate(3500, 1), nullptr);
  EXPECT_EQ(arena.peak(), 3500u) << "A larger step after reset() must raise peak().";
}

TEST(ArenaReuse, RefusedRequestDoesNotRaisePeak) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1000, 1), nullptr);
  EXPECT_THROW((void)arena.allocate(5000, 1), std::bad_alloc);
  EXPECT_EQ(arena.peak(), 1000u) << "A request that throws must not raise peak(): an engine sizes the arena "
                                    "from peak(), and a refused request used no memory.";
  EXPECT_THROW((void)arena.allocate(100, 4096), std::bad_alloc);
  EXPECT_EQ(arena.peak(), 1000u) << "A request refused for its padding must not raise peak() either.";
}

TEST(ArenaReuse, MarkRecordsUsed) {
  Arena arena(4096);
  EXPECT_EQ(arena.mark().offset, 0u) << "mark() on a new arena must record offset 0.";
  ASSERT_NE(arena.allocate(10, 1), nullptr);
  ASSERT_NE(arena.allocate(5, 32), nullptr);
  EXPECT_EQ(arena.mark().offset, arena.used()) << "mark() must record used(), padding included.";
  EXPECT_EQ(arena.mark().offset, 37u) << "After allocate(10, 1) and allocate(5, 32), mark() must record 37.";
}

TEST(ArenaReuse, RewindHandsMemoryOutAgain) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(100, 1), nullptr);
  const auto m = arena.mark();
  void* a = arena.allocate(200, 16);
  void* b = arena.allocate(300, 64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  arena.rewind(m);
  EXPECT_EQ(arena.used(), m.offset) << "rewind(m) must return used() to the offset recorded by mark().";
  EXPECT_EQ(arena.allocate(200, 16), a) << "After rewind(m), the first request made after mark() must get "
                                           "the same address again: rewind reclaims what was allocated since.";
  EXPECT_EQ(arena.allocate(300, 64), b) << "After rewind(m), the second request made after mark() must get "
                                           "the same address again.";
}

TEST(ArenaReuse, RewindKeepsWhatCameBefore) {
  Arena arena(4096);
  auto* kept = static_cast<unsigned char*>(arena.allocate(64, 1));
  ASSERT_NE(kept, nullptr);
  std::memset(kept, 0x5A, 64);
  const auto m = arena.mark();
  auto* scratch = static_cast<unsigned char*>(arena.allocate(64, 1));
  ASSERT_NE(scratch, nullptr);
  arena.rewind(m);
  auto* next = static_cast<unsigned char*>(arena.allocate(64, 1));
  ASSERT_NE(next, nullptr);
  std::memset(next, 0xA5, 64);
  EXPECT_EQ(next, scratch) << "After rewind(m), the next allocation must reuse the reclaimed memory.";
  EXPECT_EQ(kept[0], 0x5A) << "rewind() must not reclaim what was allocated before mark(): the first block "
                              "was overwritten.";
  EXPECT_EQ(kept[63], 0x5A) << "rewind() must not reclaim what was allocated before mark().";
}

TEST(ArenaReuse, NestedMarks) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(10, 1), nullptr);
  const auto outer = arena.mark();
  ASSERT_NE(arena.allocate(20, 1), nullptr);
  const auto inner = arena.mark();
  ASSERT_NE(arena.allocate(30, 1), nullptr);
  arena.rewind(inner);
  EXPECT_EQ(arena.used(), 30u) << "rewind(inner) must return to the inner mark (offset 30).";
  ASSERT_NE(arena.allocate(5, 1), nullptr);
  arena.rewind(outer);
  EXPECT_EQ(arena.used(), 10u) << "rewind(outer) must return to the outer mark (offset 10), reclaiming "
                                  "everything since, as a stack of scopes does.";
}

TEST(ArenaReuse, RewindToStartIsAReset) {
  Arena arena(1 << 16);
  const auto start = arena.mark();
  const std::vector<void*> first = run_step(arena);
  for (std::size_t i = 0; i < first.size(); ++i) {
    ASSERT_NE(first[i], nullptr) << "Request " << i << " of the step returned nullptr.";
  }
  arena.rewind(start);
  EXPECT_EQ(arena.used(), 0u) << "Rewinding to a mark taken on a new arena must reclaim everything.";
  EXPECT_EQ(run_step(arena), first) << "After rewinding to the start, the same requests must get the same addresses.";
}

TEST(ArenaReuse, AMarkerBeyondUsedIsIgnored) {
  Arena arena(4096);
  ASSERT_NE(arena.allocate(1000, 1), nullptr);
  const auto stale = arena.mark();  // offset 1000
  arena.reset();
  auto* p = static_cast<unsigned char*>(arena.allocate(100, 1));
  ASSERT_NE(p, nullptr) << "allocate(100, 1) after reset() returned nullptr.";
  arena.rewind(stale);
  EXPECT_EQ(arena.used(), 100u)
      << "rewind() to a marker taken before reset() (offset 1000), with used() at 100, must be ignored: rewind "
         "never moves used() forward. Going forward would skip 900 bytes that nobody was handed, and under "
         "AddressSanitizer poison a range of used() - offset bytes, a negative size that wraps around.";
  EXPECT_EQ(arena.allocate(1, 1), p + 100)
      << "After rewind() ignored a stale marker, the next allocation must follow the last one, at offset 100.";
  EXPECT_EQ(arena.peak(), 1000u) << "Ignoring a stale marker must not change peak().";

  arena.reset();
  ASSERT_NE(arena.allocate(2000, 1), nullptr);
  arena.rewind(stale);
  EXPECT_EQ(arena.used(), 1000u)
      << "A marker taken before reset() (offset 1000) that lies below used() (2000) is honoured like any other: "
         "rewind() must go back to offset 1000.";
}

}  // namespace stage3_reuse
