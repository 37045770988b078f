// Stage 3: a contiguous KV cache, a slice of one reservation per sequence, with deferred
// reclamation.
#include "vm_under_test.hpp"

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "alloclab_test.hpp"
#include "failing_new.hpp"
#include "vm_test_support.hpp"

namespace stage3_contiguous_cache {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::fill;
using alloclab::test::vm::holds;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::zeros;

// A granule of one page holds four tokens of a quarter page; a slice of 12 tokens is 3 granules.
std::size_t gran() { return page_bytes(); }
std::size_t tok() { return page_bytes() / 4; }

// Admits each {id, tokens} in turn; each must succeed.
::testing::AssertionResult admitted(ContiguousKVCache& cache, std::initializer_list<std::pair<int, std::size_t>> seqs) {
  for (const auto& [r, tokens] : seqs)
    if (!cache.admit(r, tokens))
      return ::testing::AssertionFailure() << "admit(" << r << ", " << tokens << ") must succeed: the cache has a "
                                           << "free slice and the granules it needs.";
  return ::testing::AssertionSuccess();
}

// Whether slot `i` of slice `s` is mapped.
bool mapped(const ContiguousKVCache& cache, std::size_t s, std::size_t i) {
  return cache.range().mapped(s * cache.slice_granules() + i).has_value();
}

TEST(VmContiguousCache, ASliceHoldsMaxTokensOfEverySequence) {
  PhysicalMemory memory(gran(), 8);
  EXPECT_THROW(ContiguousKVCache(memory, 0, 12, tok()), std::invalid_argument)
      << "A cache of 0 sequences must throw std::invalid_argument.";
  EXPECT_THROW(ContiguousKVCache(memory, 3, 0, tok()), std::invalid_argument)
      << "A cache of 0 tokens per sequence must throw std::invalid_argument.";
  EXPECT_THROW(ContiguousKVCache(memory, 3, 12, 0), std::invalid_argument)
      << "A cache of 0 bytes per token must throw std::invalid_argument.";
  EXPECT_THROW(ContiguousKVCache(memory, std::numeric_limits<std::size_t>::max() / 2, 12, tok()), std::invalid_argument)
      << "A reservation whose bytes overflow must throw std::invalid_argument, before the size wraps round.";
  ContiguousKVCache cache(memory, 3, 10, 1000);
  EXPECT_EQ(cache.slice_granules(), (10 * 1000 + gran() - 1) / gran())
      << "slice_granules() is ceil(max_tokens * token_bytes / granule): a slice holds max_tokens tokens.";
  EXPECT_EQ(cache.slice_bytes(), cache.slice_granules() * gran()) << "slice_bytes() is slice_granules() * granule.";
  EXPECT_EQ(cache.range().slots(), 3 * cache.slice_granules())
      << "The reservation holds max_sequences slices, one after another.";
  EXPECT_EQ(cache.max_sequences(), 3u) << "max_sequences() is the count the cache was built with.";
  EXPECT_EQ(cache.max_tokens(), 10u) << "max_tokens() is the count the cache was built with.";
  EXPECT_EQ(cache.token_bytes(), 1000u) << "token_bytes() is the size the cache was built with.";
  EXPECT_EQ(cache.num_sequences(), 0u) << "A new cache holds no sequence.";
  EXPECT_EQ(cache.mapped_granules(), 0u) << "A new cache maps nothing: the reservation costs address space only.";
  EXPECT_EQ(&cache.memory(), &memory) << "memory() is the PhysicalMemory the cache maps.";
}

TEST(VmContiguousCache, ASliceOverflowsOnlyPastTheLargestSize) {
  // Granules of 2^50 bytes keep every count below small: a slice of a few thousand granules is
  // nearly 2^64 bytes, and the memory's one granule costs nothing until touched.
  const std::size_t token = std::size_t{1} << 50;
  PhysicalMemory memory(token, 1);
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  const std::size_t wrapping = max / 2 + 1 + page_bytes() / 2;  // times 2 bytes: 2^64 + a page, a page once wrapped
  EXPECT_THROW(ContiguousKVCache(memory, 1, wrapping, 2), std::invalid_argument)
      << wrapping << " tokens of 2 bytes are 2^64 bytes and a page, which wrap round to a page in a size_t: the "
         "constructor must throw std::invalid_argument before it multiplies, or it builds a slice of one page "
         "that promises room for 2^63 tokens.";
  // A granule per token, and the most tokens whose bytes, and whose slice's slots, a size_t holds.
  try {
    ContiguousKVCache cache(memory, 1, max / token, token);
    ADD_FAILURE() << "A slice of " << max / token << " tokens of 2^50 bytes (2^64 - 2^50 bytes) cannot be reserved "
                                                     "on this machine.";
  } catch (const std::system_error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << max / token << " tokens of 2^50 bytes fit a size_t, and so do the slots of one slice of them: "
                     "no overflow is to be reported, it is the system that refuses so large a reservation, with "
                     "std::system_error naming mmap; it threw: "
                  << e.what();
  }
  // Slices whose slots number just past 2^64 all together: max_sequences * slice_granules wraps
  // round to fewer than a slice, a small reservation the system grants.
  PhysicalMemory pages(gran(), 1);
  const std::size_t sequences = 4097, granules = max / sequences + 1;
  EXPECT_THROW(ContiguousKVCache(pages, sequences, granules, gran()), std::invalid_argument)
      << sequences << " slices of " << granules << " granules are 2^64 slots and more, which wrap round to a few in a "
      << "size_t: the constructor must throw std::invalid_argument before it multiplies, or it reserves a few "
         "granules for slices that run far past the reservation's end.";
}

TEST(VmContiguousCache, AdmitMapsTheGranulesItsTokensNeed) {
  PhysicalMemory memory(gran(), 8);
  ContiguousKVCache cache(memory, 3, 12, tok());
  ASSERT_TRUE(cache.admit(1, 5)) << "admit(1, 5) on a new cache must succeed.";
  EXPECT_EQ(cache.slice_of(1), 0u) << "The first sequence takes the lowest slice.";
  EXPECT_EQ(cache.num_tokens(1), 5u) << "num_tokens() is the length admitted.";
  EXPECT_EQ(cache.mapped_granules(), 2u) << "5 tokens of a quarter granule need ceil(5/4) = 2 granules, mapped at admit.";
  ASSERT_TRUE(mapped(cache, 0, 0) && mapped(cache, 0, 1) && !mapped(cache, 0, 2))
      << "The granules a sequence needs, ceil(5 tokens * token_bytes / granule) = 2, are the first slots of its "
         "slice: slots 0 and 1 mapped, slot 2 not.";
  EXPECT_EQ(cache.data(1), cache.range().address(0)) << "data(r) is the first byte of r's slice.";
  ASSERT_TRUE(cache.admit(2, 1)) << "admit(2, 1) with a free slice must succeed.";
  EXPECT_EQ(cache.slice_of(2), 1u) << "The next sequence takes the next free slice.";
  EXPECT_EQ(cache.data(2), cache.data(1) + cache.slice_bytes()) << "Slice s starts at s * slice_bytes() into the range.";
  EXPECT_EQ(cache.num_sequences(), 2u) << "num_sequences() counts the sequences admitted.";
  EXPECT_EQ(memory.committed_bytes(), 0u) << "Mapping commits nothing.";
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  fill(cache.data(1), 5 * tok(), 1);
  EXPECT_TRUE(holds(cache.data(1), 5 * tok(), 1)) << "Token p of r is at data(r) + p * token_bytes: one contiguous array.";
  ASSERT_TRUE(cache.grow(1, 8)) << "grow(1, 8) with free memory must succeed.";
  EXPECT_EQ(cache.mapped_granules(), 3u) << "8 tokens still need 2 granules: grow maps nothing new.";
  ASSERT_TRUE(cache.grow(1, 12)) << "grow(1, 12) with free memory must succeed.";
  EXPECT_EQ(cache.mapped_granules(), 4u) << "12 tokens need 3 granules: grow maps the one that was lacking.";
  EXPECT_EQ(cache.num_tokens(1), 12u) << "grow() sets the length.";
  EXPECT_EQ(cache.data(1), cache.range().address(0)) << "grow() keeps the sequence's address: its KV never moves.";
  fill(cache.data(1) + 5 * tok(), 7 * tok(), 2);
  EXPECT_TRUE(holds(cache.data(1), 5 * tok(), 1)) << "grow() keeps the tokens written before it.";
}

TEST(VmContiguousCache, ReleaseLeavesTheSliceMappedForTheNextSequence) {
  PhysicalMemory memory(gran(), 8);
  ContiguousKVCache cache(memory, 3, 12, tok());
  ASSERT_TRUE(cache.admit(1, 9)) << "admit(1, 9) on a new cache must succeed.";
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  std::byte* const at = cache.data(1);
  fill(at, 9 * tok(), 4);
  const auto committed = memory.committed_bytes();
  cache.release(1);
  EXPECT_EQ(cache.num_sequences(), 0u) << "release() forgets the sequence.";
  EXPECT_EQ(cache.mapped_granules(), 3u)
      << "Deferred reclamation: release() leaves the slice's granules mapped, for the next sequence, since "
         "mapping and committing them again is the slow part.";
  EXPECT_EQ(cache.idle_granules(), 3u) << "idle_granules() counts the granules mapped in released slices.";
  EXPECT_EQ(memory.num_in_use(), 3u) << "An idle slice's granules stay in use.";
  EXPECT_EQ(memory.committed_bytes(), committed) << "release() gives no memory back.";
  const auto calls = cache.range().map_calls();
  ASSERT_TRUE(cache.admit(2, 5)) << "admit(2, 5) must succeed.";
  EXPECT_EQ(cache.slice_of(2), 0u) << "The idle slice with the granules the sequence needs is the one to take.";
  EXPECT_EQ(cache.range().map_calls(), calls) << "A sequence that reuses an idle slice's granules maps nothing.";
  EXPECT_EQ(memory.num_in_use(), 3u) << "and creates no granule.";
  EXPECT_EQ(cache.idle_granules(), 0u) << "A slice held again is no longer idle.";
  EXPECT_EQ(cache.data(2), at) << "The sequence's tokens start at its slice's first byte.";
}

TEST(VmContiguousCache, AReleaseTheHeapRefusesChangesNothing) {
  ASSERT_TRUE(alloclab::test::failing_new_works())
      << "This test binary cannot make operator new fail, so the test would prove nothing.";
  alloclab::test::for_each_failing_allocation([](long n) {
    PhysicalMemory memory(gran(), 8);
    ContiguousKVCache cache(memory, 3, 12, tok());
    for (const int r : {1, 2, 3})
      EXPECT_TRUE(cache.admit(r, 5)) << "admit(" << r << ", 5) with three free slices must succeed.";
    const auto outcome = alloclab::test::call_with_failing_new(n, [&] {
      for (const int r : {2, 1, 3}) cache.release(r);
    });
    if (outcome.fired && outcome.threw) {
      const std::size_t left = cache.num_sequences();
      EXPECT_EQ(cache.idle_granules() + 2 * left, 6u)
          << "A release threw std::bad_alloc when heap allocation " << n << " inside it failed, and the cache now "
          << "holds " << left << " sequence(s) but only " << cache.idle_granules() << " idle granule(s) of the 6 "
          << "mapped: a sequence was forgotten before its slice joined the idle list, so its granules can never "
             "be reclaimed or trimmed. Make room for every slice in the idle list when the cache is built.";
    } else if (!outcome.fired) {
      EXPECT_EQ(cache.idle_granules(), 6u) << "Three released sequences of 5 tokens leave 6 idle granules.";
      EXPECT_EQ(cache.trim(), 6u) << "trim() gives back every granule of every idle slice.";
    }
    return outcome.fired;
  });
}

TEST(VmContiguousCache, ANewSequenceTakesTheSliceWithTheMostOfItsSlotsMapped) {
  PhysicalMemory memory(gran(), 16);
  ContiguousKVCache cache(memory, 4, 12, tok());
  // slices 0, 1 and 2 map 1, 3 and 2 granules
  ASSERT_TRUE(admitted(cache, {{1, 4}, {2, 12}, {3, 8}}));
  ASSERT_EQ(cache.slice_of(3), 2u) << "With nothing mapped anywhere, sequences take the lowest free slice.";
  cache.release(1);
  cache.release(2);
  cache.release(3);
  const auto calls = cache.range().map_calls();
  ASSERT_TRUE(cache.admit(4, 8)) << "admit(4, 8) must succeed.";
  EXPECT_EQ(cache.slice_of(4), 1u)
      << "A sequence of 2 granules takes the free slice with the most of its 2 first slots mapped: slices 1 "
         "and 2 have both, slice 0 one; the lowest among equals is 1. A slice chosen without looking at what "
         "is mapped throws the deferred granules away.";
  ASSERT_TRUE(cache.admit(5, 4)) << "admit(5, 4) must succeed.";
  EXPECT_EQ(cache.slice_of(5), 0u)
      << "A sequence of 1 granule counts only its first slot: slices 0 and 2 both have it mapped, so the lowest, "
         "0, though slice 2 has more mapped in all.";
  ASSERT_TRUE(cache.admit(6, 1)) << "admit(6, 1) must succeed.";
  EXPECT_EQ(cache.slice_of(6), 2u) << "An idle slice with the slot mapped comes before a slice never used (3).";
  EXPECT_EQ(cache.range().map_calls(), calls) << "Each of the three sequences found its granules mapped.";
}

TEST(VmContiguousCache, PressureReclaimsIdleLongestFirst) {
  PhysicalMemory memory(gran(), 6);
  ContiguousKVCache cache(memory, 3, 12, tok());
  // slices 0, 1 and 2 map 2, 3 and 1 granules
  ASSERT_TRUE(admitted(cache, {{1, 8}, {2, 12}, {3, 4}}));
  ASSERT_EQ(memory.num_free(), 0u) << "Six granules in use fill the memory.";
  cache.release(2);  // idle longest
  cache.release(1);
  ASSERT_TRUE(cache.grow(3, 12))
      << "grow(3, 12) needs 2 granules; with none free, the idle slices hold 5 to give back: it must succeed.";
  EXPECT_FALSE(mapped(cache, 1, 2) || mapped(cache, 1, 1))
      << "Under pressure, granules come from the slice idle longest (released first: slice 1), its highest "
         "slots first (2, then 1): the slice's next sequence needs its first slots most.";
  EXPECT_TRUE(mapped(cache, 1, 0)) << "Only as many granules as are lacking go back: slice 1 keeps slot 0.";
  EXPECT_TRUE(mapped(cache, 0, 0) && mapped(cache, 0, 1))
      << "The slice idle for less time (slice 0) keeps its granules while the one idle longest has some.";
  EXPECT_EQ(cache.idle_granules(), 3u) << "Three granules are left in idle slices.";
  ASSERT_TRUE(mapped(cache, 2, 1) && mapped(cache, 2, 2)) << "grow() must map the slots the sequence needs.";
  EXPECT_TRUE(zeros(cache.data(3) + gran(), 2 * gran()))
      << "A granule a sequence lacks is created new and reads as zeros: a reclaimed granule must be released "
         "(its memory given back) before it is created again.";
}

TEST(VmContiguousCache, NeverReclaimsFromTheSliceBeingFilled) {
  PhysicalMemory memory(gran(), 5);
  ContiguousKVCache cache(memory, 3, 12, tok());
  // slices 0, 1 and 2 map 2, 1 and 2 granules
  ASSERT_TRUE(admitted(cache, {{1, 8}, {2, 4}, {3, 8}}));
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  fill(cache.data(1), 8 * tok(), 6);
  cache.release(1);  // idle longest, and the slice the next sequence takes
  cache.release(2);
  ASSERT_TRUE(cache.admit(4, 12))
      << "admit(4, 12) takes slice 0 (2 of its 3 slots mapped) and lacks one granule, which idle slice 1 can "
         "give: it must succeed.";
  EXPECT_EQ(cache.slice_of(4), 0u) << "The sequence takes the slice with the most of its slots mapped.";
  EXPECT_TRUE(mapped(cache, 0, 0) && mapped(cache, 0, 1) && mapped(cache, 0, 2))
      << "Every slot the sequence needs must be mapped: a granule reclaimed from the slice being filled leaves a "
         "hole in the very slice it was meant to fill.";
  EXPECT_FALSE(mapped(cache, 1, 0)) << "The granule comes from the other idle slice, slice 1.";
  ASSERT_TRUE(mapped(cache, 0, 0) && mapped(cache, 0, 1)) << "Slice 0's first slots must be mapped to be read.";
  EXPECT_TRUE(holds(cache.data(4), 8 * tok(), 6)) << "The slice keeps the granules it had, bytes and all.";
  cache.release(4);
  cache.release(3);
  ASSERT_TRUE(cache.admit(5, 12)) << "admit(5, 12) must succeed.";
  EXPECT_EQ(cache.slice_of(5), 0u) << "Slice 0 has all 3 slots mapped.";
  EXPECT_FALSE(cache.admit(6, 12))
      << "admit(6, 12) takes slice 2 (2 of 3 mapped), lacks one granule, and no other idle slice has any: it "
         "must return false rather than take one from the slice it fills.";
  EXPECT_EQ(cache.idle_granules(), 2u) << "A refused admit changes nothing.";
}

TEST(VmContiguousCache, TrimGivesBackEveryIdleGranule) {
  PhysicalMemory memory(gran(), 8);
  ContiguousKVCache cache(memory, 3, 12, tok());
  ASSERT_TRUE(admitted(cache, {{1, 12}, {2, 8}, {3, 4}}));
  ASSERT_NE(cache.data(1), nullptr) << "data(1) must be the slice's first byte.";
  fill(cache.data(1), 12 * tok(), 8);
  fill(cache.data(3), 4 * tok(), 9);
  cache.release(1);
  cache.release(2);
  EXPECT_EQ(cache.trim(), 5u) << "trim() gives back the 5 granules of the two idle slices and returns how many.";
  EXPECT_EQ(cache.idle_granules(), 0u) << "After trim() no idle slice holds a granule.";
  EXPECT_EQ(cache.mapped_granules(), 1u) << "trim() leaves the held sequence's granule mapped.";
  EXPECT_EQ(memory.num_in_use(), 1u) << "trim() releases what it unmaps.";
  EXPECT_EQ(memory.committed_bytes(), gran()) << "trim() gives the idle slices' memory back to the system.";
  EXPECT_TRUE(holds(cache.data(3), 4 * tok(), 9)) << "A held sequence keeps its bytes through trim().";
  EXPECT_EQ(cache.trim(), 0u) << "A second trim() has nothing to give back.";
}

TEST(VmContiguousCache, ARefusalChangesNothing) {
  PhysicalMemory memory(gran(), 4);
  ContiguousKVCache cache(memory, 2, 12, tok());
  ASSERT_TRUE(admitted(cache, {{1, 8}, {2, 4}}));
  EXPECT_FALSE(cache.admit(3, 1)) << "admit() with every slice held must return false.";
  const auto maps = cache.range().map_calls(), unmaps = cache.range().unmap_calls();
  EXPECT_FALSE(cache.grow(2, 12))
      << "grow(2, 12) needs 2 granules, with one free and none idle: it must return false.";
  EXPECT_EQ(cache.num_tokens(2), 4u) << "A refused grow keeps the length.";
  EXPECT_EQ(cache.mapped_granules(), 3u) << "A refused grow maps nothing.";
  cache.release(2);
  EXPECT_FALSE(cache.admit(3, 12))
      << "admit(3, 12) takes slice 1 and lacks 2 granules, with one free and no other idle slice: false.";
  EXPECT_EQ(cache.num_sequences(), 1u) << "A refused admit admits nothing.";
  EXPECT_EQ(cache.idle_granules(), 1u) << "A refused admit leaves the idle slice as it was.";
  EXPECT_EQ(cache.range().map_calls(), maps)
      << "A refused call maps nothing: count what can be had before mapping anything, since a granule mapped "
         "and unmapped again costs system calls and the idle slices' granules.";
  EXPECT_EQ(cache.range().unmap_calls(), unmaps) << "A refused call unmaps nothing.";
  EXPECT_EQ(memory.num_free(), 1u) << "A refused call leaves the free granule free.";
  EXPECT_THROW((void)cache.slice_of(3), std::invalid_argument) << "A refused admit does not know the id.";
  ASSERT_TRUE(cache.admit(3, 4)) << "admit(3, 4) needs one granule, which the idle slice has: it must succeed.";
}

TEST(VmContiguousCache, MisuseThrowsAndChangesNothing) {
  PhysicalMemory memory(gran(), 4);
  ContiguousKVCache cache(memory, 2, 12, tok());
  ASSERT_TRUE(cache.admit(1, 5)) << "admit(1, 5) must succeed.";
  EXPECT_THROW((void)cache.admit(1, 1), std::invalid_argument) << "admit() of an id admitted already must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.admit(2, 13), std::invalid_argument)
      << "admit() of more tokens than a slice holds must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.grow(1, 4), std::invalid_argument) << "grow() to fewer tokens must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.grow(1, 13), std::invalid_argument)
      << "grow() past max_tokens must throw std::invalid_argument: the slice ends there.";
  EXPECT_THROW((void)cache.grow(7, 6), std::invalid_argument) << "grow() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW(cache.release(7), std::invalid_argument) << "release() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.data(7), std::invalid_argument) << "data() of an unknown id must throw std::invalid_argument.";
  EXPECT_THROW((void)cache.num_tokens(7), std::invalid_argument)
      << "num_tokens() of an unknown id must throw std::invalid_argument.";
  EXPECT_EQ(cache.num_tokens(1), 5u) << "A call that throws changes nothing.";
  EXPECT_EQ(cache.num_sequences(), 1u) << "A call that throws admits nothing.";
  EXPECT_EQ(cache.mapped_granules(), 2u) << "A call that throws maps nothing.";
  cache.release(1);
  EXPECT_THROW(cache.release(1), std::invalid_argument) << "release() twice must throw std::invalid_argument.";
}

TEST(VmContiguousCache, DestroyingTheCacheGivesEveryGranuleBack) {
  PhysicalMemory memory(gran(), 8);
  {
    ContiguousKVCache cache(memory, 3, 12, tok());
    ASSERT_TRUE(cache.admit(1, 12)) << "admit(1, 12) must succeed.";
    ASSERT_TRUE(cache.admit(2, 5)) << "admit(2, 5) must succeed.";
    cache.release(1);
  }
  EXPECT_EQ(memory.num_in_use(), 0u)
      << "The destructor must unmap and release every granule, held and idle alike, or the memory stays in use.";
}

}  // namespace stage3_contiguous_cache
