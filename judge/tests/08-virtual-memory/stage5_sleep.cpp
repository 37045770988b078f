// Stage 5 — sleep and wake: sleep gives every granule back to the system and keeps every
// address, as vLLM's sleep mode does while a CUDA graph holds raw pointers into the KV cache;
// wake maps new granules at the same slots, aliases shared again, the kept sequences' contents
// copied back and zeros elsewhere.
//
// Every test starts from one scene, in a cache of four slices of four granules of four tokens:
//   slice 0: sequence 1, 6 tokens, granules a (full) and b (partly filled), written whole
//   slice 1: sequence 2, 3 tokens, granule c, written whole
//   slice 2: idle (sequence 9 released), granule d still mapped
//   slice 3: sequence 3, forked from 1: a again (an alias) and its own copy of b, written over
// so that the sequences do not lie in the lowest slices, one granule is mapped twice and one
// slice is idle with a granule.
#include "vm_under_test.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "fork_test_support.hpp"

namespace stage5_sleep {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::fill;
using alloclab::test::vm::first_changed;
using alloclab::test::vm::first_nonzero;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::kMaxTokens;
using alloclab::test::vm::kSliceGranules;
using alloclab::test::vm::slot;
using alloclab::test::vm::token_bytes;
using alloclab::test::vm::where;
using RequestId = ContiguousKVCache::RequestId;

constexpr std::array<RequestId, 3> kSequences{1, 2, 3};
// The seed of the pattern written into granule i of each sequence's slice (0: not its own).
constexpr std::uint64_t kSeedA = 1, kSeedB = 2, kSeedC = 3, kSeedCopy = 4;

struct Scene {
  PhysicalMemory memory;
  ContiguousKVCache cache;
  explicit Scene(std::size_t granules = 16) : memory(page_bytes(), granules), cache(memory, 4, kMaxTokens, token_bytes()) {
    const char* setup = "The scene's admit, fork and release must succeed (stages 3 and 4).";
    const std::size_t g = page_bytes();
    if (!cache.admit(1, 6) || !cache.admit(2, 3) || !cache.admit(9, 4)) throw std::runtime_error(setup);
    fill(cache.data(1), g, kSeedA);
    fill(cache.data(1) + g, g, kSeedB);
    fill(cache.data(2), g, kSeedC);
    fill(cache.data(9), g, 99);
    if (!cache.fork(1, 3)) throw std::runtime_error(setup);
    fill(cache.data(3) + g, g, kSeedCopy);
    cache.release(9);
    if (cache.slice_of(1) != 0 || cache.slice_of(2) != 1 || cache.slice_of(3) != 3 || cache.idle_granules() != 1)
      throw std::runtime_error("The scene expects sequences 1, 2 and 3 in slices 0, 1 and 3 and one idle granule "
                               "in slice 2 (stages 3 and 4's rules).");
  }
  // The seed of the whole granule i of r's slice as the scene wrote it.
  static std::uint64_t seed(RequestId r, std::size_t i) {
    if (r == 2) return kSeedC;
    if (i == 0) return kSeedA;
    return r == 1 ? kSeedB : kSeedCopy;
  }
  static std::size_t granules(RequestId r) { return r == 2 ? 1 : 2; }
};

// Whether every granule r needs is mapped at its slice; reading an unmapped one would crash the test.
::testing::AssertionResult mapped_where_it_was(const ContiguousKVCache& c, RequestId r) {
  for (std::size_t i = 0; i < Scene::granules(r); ++i)
    if (!c.range().mapped(slot(c.slice_of(r), i)))
      return ::testing::AssertionFailure()
             << "granule " << i << " of sequence " << r << "'s slice is not mapped after wake: the addresses a CUDA "
             << "graph recorded before sleep would fault. Wake maps a granule at every slot mapped before sleep.";
  return ::testing::AssertionSuccess();
}

TEST(VmSleep, SleepGivesBackEveryGranule) {
  Scene s;
  ASSERT_GT(s.memory.committed_bytes(), 0u);
  s.cache.sleep();
  EXPECT_TRUE(s.cache.asleep());
  EXPECT_EQ(s.memory.num_in_use(), 0u)
      << "Sleep gives back every granule, the idle slice's too: the engine sleeps to hand the whole KV memory to "
      << "another model (training, a second engine), and a granule kept is memory it cannot have.";
  EXPECT_EQ(s.memory.committed_bytes(), 0u) << "Every granule given back returns its memory to the system.";
  EXPECT_EQ(s.cache.mapped_granules(), 0u) << "Nothing stays mapped while asleep.";
  EXPECT_EQ(s.cache.idle_granules(), 0u) << "The idle slice's granule is given back too.";
  EXPECT_EQ(s.cache.num_sequences(), 3u) << "Sleep keeps every sequence: only their memory goes.";
  EXPECT_EQ(s.cache.num_tokens(1), 6u);
  EXPECT_EQ(s.cache.num_tokens(3), 6u);
}

TEST(VmSleep, AddressesSurviveSleep) {
  Scene s;
  std::vector<std::byte*> starts;
  std::vector<std::vector<std::byte*>> tokens;  // what a CUDA graph holds: raw addresses, taken once
  for (const RequestId r : kSequences) {
    starts.push_back(s.cache.data(r));
    tokens.emplace_back();
    for (std::size_t p = 0; p < s.cache.num_tokens(r); ++p) tokens.back().push_back(s.cache.data(r) + p * token_bytes());
  }
  s.cache.sleep(kSequences);
  for (std::size_t k = 0; k < kSequences.size(); ++k)
    EXPECT_EQ(s.cache.data(kSequences[k]), starts[k]) << "data(" << kSequences[k]
        << ") moved while asleep: the engine and its captured graphs hold that address across sleep.";
  ASSERT_TRUE(s.cache.wake()) << "wake must succeed when memory holds every granule slept.";
  for (std::size_t k = 0; k < kSequences.size(); ++k) {
    const RequestId r = kSequences[k];
    ASSERT_EQ(s.cache.data(r), starts[k])
        << "data(" << r << ") moved across sleep: a CUDA graph captured before sleep replays with the old "
        << "addresses, and would read and write memory that is no longer this sequence's KV.";
    ASSERT_TRUE(mapped_where_it_was(s.cache, r));
  }
  // The graph writes each token through the address it captured, and the engine reads it back.
  for (std::size_t k = 0; k < kSequences.size(); ++k) {
    const RequestId r = kSequences[k];
    for (std::size_t p = 0; p < tokens[k].size(); ++p) {
      const auto at = static_cast<std::size_t>(tokens[k][p] - s.cache.range().base()) / page_bytes();
      ASSERT_TRUE(s.cache.range().mapped(at).has_value())
          << "Token " << p << " of sequence " << r << " lies in slot " << at << ", unmapped after wake: the graph "
          << "captured before sleep would fault on its first step.";
      fill(tokens[k][p], token_bytes(), 1000 + 10 * static_cast<std::uint64_t>(r) + p);
      EXPECT_EQ(first_changed(s.cache.data(r) + p * token_bytes(), token_bytes(), 1000 + 10 * static_cast<std::uint64_t>(r) + p),
                token_bytes())
          << "Token " << p << " of sequence " << r << ", written through its address from before sleep, does not "
          << "read back through data(" << r << ") after wake.";
    }
  }
}

TEST(VmSleep, KeptSequencesAreRestoredAndTheRestReadZeros) {
  Scene s;
  const std::array<RequestId, 2> keep{2, 3};
  s.cache.sleep(keep);
  ASSERT_TRUE(s.cache.wake()) << "wake must succeed when memory holds every granule slept.";
  for (const RequestId r : kSequences) ASSERT_TRUE(mapped_where_it_was(s.cache, r));
  const std::size_t g = page_bytes();
  for (const RequestId r : keep)
    for (std::size_t i = 0; i < Scene::granules(r); ++i) {
      const std::size_t at = first_changed(s.cache.data(r) + i * g, g, Scene::seed(r, i));
      EXPECT_EQ(at, g) << "Sequence " << r << " was kept, but its " << where(i * g + at) << " differs from what "
                       << "it held before sleep: wake copies back every byte of the granules a kept sequence maps "
                       << "(the engine resumes it without recomputing its prompt).";
    }
  EXPECT_EQ(first_changed(s.cache.data(1), g, kSeedA), g)
      << "Sequence 1 was not kept, but its first granule is the one kept sequence 3 maps too: restored for 3, it "
      << "reads as before through 1's address as well.";
  const std::size_t at = first_nonzero(s.cache.data(1) + g, g);
  EXPECT_EQ(at, g) << "Sequence 1 was not kept, and its second granule is its own: after wake it is a new granule "
                   << "that reads as zeros, not " << where(g + at) << " of something else (another sequence's "
                   << "KV, or bytes of before sleep that no one asked to keep).";
}

TEST(VmSleep, AliasesAreSharedAgainAfterWake) {
  Scene s;
  const auto before = s.memory.num_in_use();
  s.cache.sleep(kSequences);
  ASSERT_TRUE(s.cache.wake()) << "wake must succeed when memory holds every granule slept.";
  ASSERT_TRUE(mapped_where_it_was(s.cache, 1));
  ASSERT_TRUE(mapped_where_it_was(s.cache, 3));
  const auto parent = s.cache.range().mapped(slot(0, 0)), child = s.cache.range().mapped(slot(3, 0));
  EXPECT_EQ(parent, child)
      << "Sequences 1 and 3 shared their first granule before sleep; after wake they must share one again. Two "
      << "copies take a granule more per alias, and a wake that needs more memory than sleep gave back can fail.";
  if (parent) {
    EXPECT_EQ(s.memory.refcount(*parent), 2u) << "The shared granule holds one reference per slice again.";
  }
  EXPECT_EQ(s.memory.num_in_use(), before - 1)
      << "Wake maps one granule per granule mapped in a held slice before sleep: the scene's four (the idle "
      << "slice's is not mapped again).";
  fill(s.cache.data(1), token_bytes(), 77);
  EXPECT_EQ(first_changed(s.cache.data(3), token_bytes(), 77), token_bytes())
      << "A write through sequence 1's first token is not seen through sequence 3's: they no longer share it.";
}

TEST(VmSleep, IdleSlicesWakeUnmapped) {
  Scene s;
  s.cache.sleep();
  ASSERT_TRUE(s.cache.wake()) << "wake must succeed when memory holds every granule slept.";
  EXPECT_EQ(s.cache.idle_granules(), 0u)
      << "The idle slice's granule held no sequence's KV: wake has nothing to map there, and mapping it takes "
      << "memory that only a next sequence might use.";
  for (std::size_t i = 0; i < kSliceGranules; ++i)
    EXPECT_EQ(s.cache.range().mapped(slot(2, i)), std::nullopt) << "Slot " << i << " of idle slice 2 is mapped.";
  EXPECT_EQ(s.cache.mapped_granules(), 5u) << "The held slices' five slots are mapped again, and no other.";
  ASSERT_TRUE(s.cache.admit(4, 8)) << "After wake the cache admits as before.";
  EXPECT_EQ(s.cache.slice_of(4), 2u) << "The only free slice.";
  EXPECT_EQ(first_nonzero(s.cache.data(4), 2 * page_bytes()), 2 * page_bytes())
      << "A sequence admitted after wake reads zeros.";
}

TEST(VmSleep, EveryCallButTheObserversThrowsWhileAsleep) {
  Scene s;
  EXPECT_THROW((void)s.cache.wake(), std::logic_error) << "wake while awake is the caller's mistake.";
  s.cache.sleep();
  const std::array<RequestId, 1> one{1};
  EXPECT_THROW(s.cache.sleep(), std::logic_error) << "sleep while asleep is the caller's mistake.";
  EXPECT_THROW(s.cache.sleep(one), std::logic_error) << "sleep while asleep is the caller's mistake.";
  EXPECT_THROW((void)s.cache.admit(5, 4), std::logic_error)
      << "admit while asleep would map a granule into memory the engine gave away; it throws.";
  EXPECT_THROW((void)s.cache.grow(1, 7), std::logic_error) << "grow while asleep throws.";
  EXPECT_THROW((void)s.cache.fork(1, 5), std::logic_error) << "fork while asleep throws.";
  EXPECT_THROW(s.cache.release(2), std::logic_error) << "release while asleep throws.";
  EXPECT_THROW((void)s.cache.trim(), std::logic_error) << "trim while asleep throws.";
  EXPECT_EQ(s.memory.num_in_use(), 0u) << "A call that threw while asleep took a granule.";
  EXPECT_EQ(s.cache.num_sequences(), 3u) << "A call that threw while asleep changed the sequences.";
  EXPECT_EQ(s.cache.num_tokens(1), 6u) << "Observers answer while asleep.";
  EXPECT_EQ(s.cache.slice_of(3), 3u) << "Observers answer while asleep.";
  EXPECT_TRUE(s.cache.asleep());
  ASSERT_TRUE(s.cache.wake());
  EXPECT_FALSE(s.cache.asleep());
}

TEST(VmSleep, WakeWithoutTheGranulesStaysAsleep) {
  Scene s(6);
  s.cache.sleep(kSequences);
  // Another user of the same physical memory (the weights of a second model) takes three granules.
  std::vector<std::size_t> taken;
  for (int k = 0; k < 3; ++k) taken.push_back(*s.memory.create());
  EXPECT_FALSE(s.cache.wake()) << "Wake needs four granules and memory has three free: it refuses.";
  EXPECT_TRUE(s.cache.asleep()) << "A refused wake leaves the cache asleep.";
  EXPECT_EQ(s.memory.num_in_use(), 3u)
      << "A refused wake keeps no granule: half a cache mapped helps nobody, and the memory is another's.";
  EXPECT_EQ(s.cache.mapped_granules(), 0u) << "A refused wake maps nothing.";
  EXPECT_THROW((void)s.cache.admit(5, 4), std::logic_error) << "Still asleep: admit throws.";
  s.memory.release(taken.back());
  ASSERT_TRUE(s.cache.wake()) << "With four granules free, wake succeeds.";
  for (const RequestId r : kSequences) {
    ASSERT_TRUE(mapped_where_it_was(s.cache, r));
    for (std::size_t i = 0; i < Scene::granules(r); ++i)
      EXPECT_EQ(first_changed(s.cache.data(r) + i * page_bytes(), page_bytes(), Scene::seed(r, i)), page_bytes())
          << "After a refused wake, the next wake must still restore every kept sequence (granule " << i << " of "
          << r << " differs).";
  }
  for (std::size_t k = 0; k + 1 < taken.size(); ++k) s.memory.release(taken[k]);
}

TEST(VmSleep, SleepAndWakeTwice) {
  Scene s;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round + 1));
    s.cache.sleep(kSequences);
    EXPECT_EQ(s.memory.num_in_use(), 0u) << "Every sleep gives back every granule.";
    ASSERT_TRUE(s.cache.wake());
    for (const RequestId r : kSequences) {
      ASSERT_TRUE(mapped_where_it_was(s.cache, r));
      for (std::size_t i = 0; i < Scene::granules(r); ++i)
        EXPECT_EQ(first_changed(s.cache.data(r) + i * page_bytes(), page_bytes(), Scene::seed(r, i)),
                  page_bytes())
            << "Granule " << i << " of kept sequence " << r << " is not restored.";
    }
    EXPECT_EQ(s.memory.num_in_use(), 4u);
  }
  ASSERT_TRUE(s.cache.grow(1, 9)) << "After wake, a sequence grows as before.";
  ASSERT_TRUE(s.cache.fork(2, 5)) << "After wake, a sequence forks as before.";
  s.cache.release(3);
  EXPECT_EQ(first_changed(s.cache.data(1), page_bytes(), kSeedA), page_bytes())
      << "Releasing sequence 3 after wake must leave the granule it shared with 1 to 1.";
}

}  // namespace stage5_sleep
