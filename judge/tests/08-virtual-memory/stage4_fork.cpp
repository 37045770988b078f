// Stage 4 — forks share granules: a child's slice maps its parent's full granules (one granule
// at two addresses) and a copy of the partly filled one, and releasing either side leaves the
// other's KV as it was. Each test builds a cache whose slices hold 16 tokens in four granules of
// four tokens, so that a sequence of 6 tokens has one full granule and one partly filled.
#include "vm_under_test.hpp"

#include <cstddef>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab_test.hpp"
#include "fork_test_support.hpp"

namespace stage4_fork {

using alloclab::test::vm::ContiguousKVCache;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::fill;
using alloclab::test::vm::first_changed;
using alloclab::test::vm::first_nonzero;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::kMaxTokens;
using alloclab::test::vm::slot;
using alloclab::test::vm::token_bytes;
using alloclab::test::vm::where;

constexpr const char* kAdmitFails = "admit must succeed while slices and granules are free (stage 3).";
constexpr const char* kForkFails = "fork must succeed while a slice is free and memory holds the granules it needs.";

// Expects `n` references to granule g. A granule mapped in more slices than it has references
// makes the cache's destructor give back a reference nobody holds, which throws from a destructor
// and aborts the run before this message is read: the missing references are taken here.
void expect_references(PhysicalMemory& memory, std::size_t g, std::size_t n, const char* why) {
  const std::size_t refs = memory.refcount(g);
  EXPECT_EQ(refs, n) << why;
  for (std::size_t k = refs; k > 0 && k < n; ++k) memory.retain(g);
}

// The granule mapped at granule i of r's slice.
std::optional<std::size_t> granule_at(const ContiguousKVCache& c, ContiguousKVCache::RequestId r, std::size_t i) {
  return c.range().mapped(slot(c.slice_of(r), i));
}

TEST(VmFork, FullGranulesAreMappedInBothSlices) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 8)) << kAdmitFails;
  fill(cache.data(1), 8 * token_bytes(), 1);
  ASSERT_TRUE(cache.fork(1, 2)) << kForkFails;
  ASSERT_NE(cache.slice_of(2), cache.slice_of(1))
      << "The child gets a slice of its own: its KV has an address of its own.";
  EXPECT_EQ(cache.num_tokens(2), 8u) << "The child starts with its parent's tokens.";
  for (std::size_t i = 0; i < 2; ++i) {
    const auto parent = granule_at(cache, 1, i), child = granule_at(cache, 2, i);
    ASSERT_TRUE(child.has_value()) << "Granule " << i
        << " of the child's slice is unmapped after fork: the child could not read the KV of the prompt it shares with "
        << "its parent.";
    EXPECT_EQ(child, parent) << "Granule " << i
        << " of the parent is full: the child's slice maps that same granule (an alias), so that a fork of a long "
        << "prompt costs no memory and no copy.";
    if (parent) {
      expect_references(memory, *parent, 2,
                        "A granule mapped in two slices holds one reference per slice, so that releasing one side "
                        "does not give back memory the other still reads.");
    }
  }
  EXPECT_EQ(first_changed(cache.data(2), 8 * token_bytes(), 1), 8 * token_bytes())
      << "The child reads its parent's KV at its own address.";
  fill(cache.data(1), token_bytes(), 7);
  EXPECT_EQ(first_changed(cache.data(2), token_bytes(), 7), token_bytes())
      << "A write through the parent's address is not seen through the child's: the two slices do not map one "
      << "granule, so the child's KV is a copy that cost memory a fork should not.";
  ASSERT_TRUE(cache.fork(2, 3)) << kForkFails;
  if (const auto g = granule_at(cache, 1, 0)) {
    expect_references(memory, *g, 3, "A fork of a fork maps the same granule a third time, with a third reference.");
  }
  if (const auto g = granule_at(cache, 1, 1)) expect_references(memory, *g, 3, "The same for the second granule.");
}

TEST(VmFork, AWholeNumberOfGranulesTakesNoNewGranule) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 8)) << kAdmitFails;
  ASSERT_TRUE(cache.fork(1, 2)) << kForkFails;
  EXPECT_EQ(cache.memory().num_in_use(), 2u)
      << "A parent of 8 tokens fills exactly two granules: the child maps both as aliases and needs no granule of "
      << "its own until it grows; a fork that takes memory here wastes a granule per sample of a beam.";
  EXPECT_EQ(cache.mapped_granules(), 4u) << "Two slots mapped in each of the two slices.";
  EXPECT_EQ(cache.range().mapped(slot(cache.slice_of(2), 2)), std::nullopt)
      << "The child maps only the granules its tokens need.";
  ASSERT_TRUE(cache.grow(2, 9)) << "grow must succeed while granules are free.";
  EXPECT_EQ(cache.memory().num_in_use(), 3u) << "The child's ninth token needs one granule of its own.";
  EXPECT_EQ(granule_at(cache, 2, 0), granule_at(cache, 1, 0)) << "Growing keeps the aliases.";
}

TEST(VmFork, ThePartlyFilledGranuleIsCopiedWhole) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;
  // The parent's two granules, the bytes past its sixth token included.
  const std::size_t bytes = 2 * page_bytes();
  fill(cache.data(1), bytes, 11);
  ASSERT_TRUE(cache.fork(1, 2)) << kForkFails;
  const auto parent = granule_at(cache, 1, 1), child = granule_at(cache, 2, 1);
  ASSERT_TRUE(child.has_value()) << "The child's slice must map its second granule: its tokens 5 and 6 lie there.";
  EXPECT_NE(child, parent)
      << "The parent's second granule holds 6 - 4 = 2 tokens: both sides will write their seventh token into it. "
      << "Mapped in both slices, each side's next token overwrites the other's: the child gets a copy instead.";
  EXPECT_EQ(cache.memory().refcount(*child), 1u) << "The copy is the child's alone.";
  if (parent) {
    EXPECT_EQ(cache.memory().refcount(*parent), 1u) << "The parent's partly filled granule stays its own.";
  }
  EXPECT_EQ(granule_at(cache, 2, 0), granule_at(cache, 1, 0)) << "The full first granule is still an alias.";
  const std::size_t at = first_changed(cache.data(2), bytes, 11);
  EXPECT_EQ(at, bytes) << "The child's " << where(at) << " differs from the parent's: the copy is of the whole "
                       << "granule, the bytes past the last token included (the contract's rule; a GPU copies "
                       << "whole pages, and the KV written later must find the same bytes either side).";
  const std::vector<unsigned char> before(reinterpret_cast<unsigned char*>(cache.data(2)) + 6 * token_bytes(),
                                          reinterpret_cast<unsigned char*>(cache.data(2)) + 7 * token_bytes());
  fill(cache.data(1) + 6 * token_bytes(), token_bytes(), 21);
  EXPECT_EQ(std::memcmp(cache.data(2) + 6 * token_bytes(), before.data(), before.size()), 0)
      << "The parent's seventh token, written after the fork, shows through the child's address: the child "
      << "would attend to KV that is not its own.";
  fill(cache.data(2) + 6 * token_bytes(), token_bytes(), 22);
  EXPECT_EQ(first_changed(cache.data(1) + 6 * token_bytes(), token_bytes(), 21), token_bytes())
      << "The child's seventh token overwrote the parent's: the partly filled granule is not the child's own.";
}

TEST(VmFork, TheChildTakesTheSliceWithItsCopySlotMapped) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;   // slice 0, granules 0 and 1
  ASSERT_TRUE(cache.admit(2, 1)) << kAdmitFails;   // slice 1, granule 0
  ASSERT_TRUE(cache.fork(1, 3)) << kForkFails;     // slice 2: an alias at 0, a copy at 1
  ASSERT_EQ(cache.slice_of(3), 2u)
      << "With slices 1 to 3 free and none mapped where the child copies its partly filled granule, the lowest free "
      << "slice, 2, is the child's.";
  cache.release(3);  // slice 2 idle: its alias unmapped, its copy kept
  cache.release(2);  // slice 1 idle: granule 0 kept
  ASSERT_EQ(cache.range().mapped(slot(2, 0)), std::nullopt)
      << "Released, sequence 3's slice still maps the granule it shared with sequence 1: the next sequence to take "
      << "the idle slice would write its KV over sequence 1's. Release unmaps a granule another slice still maps.";
  const std::size_t kept = *cache.range().mapped(slot(2, 1));
  const std::size_t in_use = cache.memory().num_in_use();
  ASSERT_TRUE(cache.fork(1, 4)) << kForkFails;
  EXPECT_EQ(cache.slice_of(4), 2u)
      << "The child fills only its partly filled granule's slot (1) with a granule of its own: slice 2 has it "
      << "mapped, slice 1 has only slot 0, which an alias replaces anyway. Choosing by every slot the child "
      << "needs, as admit does, wastes the one granule that could be reused.";
  EXPECT_EQ(cache.range().mapped(slot(2, 1)), kept)
      << "The idle slice's granule at the copy's slot is reused: a new one would cost a zero-fill, and the idle one "
      << "would be given back unused.";
  EXPECT_EQ(cache.memory().num_in_use(), in_use)
      << "Reusing the idle granule takes no new one: memory is what bounds the batch.";
}

TEST(VmFork, AGranuleWhereAnAliasGoesIsReleased) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 8)) << kAdmitFails;  // slice 0
  ASSERT_TRUE(cache.admit(2, 8)) << kAdmitFails;  // slice 1
  const std::size_t under0 = *cache.range().mapped(slot(1, 0)), under1 = *cache.range().mapped(slot(1, 1));
  fill(cache.data(1), 2 * page_bytes(), 4);
  fill(cache.data(2), 2 * page_bytes(), 5);
  cache.release(2);  // slice 1 idle with two private granules
  ASSERT_TRUE(cache.fork(1, 3)) << kForkFails;
  ASSERT_EQ(cache.slice_of(3), 1u)
      << "The child fills no slot of its own, so every free slice ties and the lowest, 1, is the child's.";
  EXPECT_EQ(granule_at(cache, 3, 0), granule_at(cache, 1, 0)) << "The child maps the parent's full granules.";
  EXPECT_EQ(cache.memory().refcount(under0), 0u)
      << "The idle slice's granule at slot 0, replaced by an alias, is no longer mapped anywhere: it must be "
      << "released, or its memory is lost for good.";
  EXPECT_EQ(cache.memory().refcount(under1), 0u) << "The same for the granule at slot 1.";
  EXPECT_EQ(cache.memory().num_in_use(), 2u) << "Only the parent's two granules remain in use.";
  EXPECT_EQ(cache.memory().committed_bytes(), 2 * page_bytes())
      << "Released granules give their memory back to the system.";
}

TEST(VmFork, ReleasingEitherSideKeepsTheOthersKV) {
  for (const int released : {1, 2}) {
    SCOPED_TRACE(released == 1 ? "the parent released first" : "the child released first");
    const int kept = 3 - released;
    PhysicalMemory memory(page_bytes(), 16);
    ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
    ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;
    fill(cache.data(1), 6 * token_bytes(), 31);
    ASSERT_TRUE(cache.fork(1, 2)) << kForkFails;
    ASSERT_TRUE(cache.grow(kept, 7)) << "grow within a mapped granule needs nothing.";
    fill(cache.data(kept) + 6 * token_bytes(), token_bytes(), 32);
    const std::size_t slice = cache.slice_of(released);
    const std::size_t alias = *granule_at(cache, 1, 0);
    cache.release(released);
    EXPECT_EQ(cache.range().mapped(slot(slice, 0)), std::nullopt)
        << "The released slice still maps the granule the other sequence reads: the next sequence to take this "
        << "idle slice would write its KV over the other's.";
    EXPECT_TRUE(cache.range().mapped(slot(slice, 1)).has_value())
        << "The released slice's private granule stays mapped for its next sequence (deferred reclamation).";
    EXPECT_EQ(cache.memory().refcount(alias), 1u) << "The shared granule is now the kept sequence's alone.";
    EXPECT_EQ(cache.idle_granules(), 1u) << "The idle slice keeps one granule, its private one.";
    EXPECT_EQ(first_changed(cache.data(kept), 6 * token_bytes(), 31), 6 * token_bytes())
        << "Releasing one side changed the other's first six tokens.";
    // The next two sequences take the idle slice and a free one, and write their whole KV.
    ASSERT_TRUE(cache.admit(3, 8)) << kAdmitFails;
    ASSERT_TRUE(cache.admit(4, 8)) << kAdmitFails;
    fill(cache.data(3), 8 * token_bytes(), 33);
    fill(cache.data(4), 8 * token_bytes(), 34);
    const std::size_t at = first_changed(cache.data(kept), 6 * token_bytes(), 31);
    EXPECT_EQ(at, 6 * token_bytes()) << "The kept sequence's " << where(at)
        << " was overwritten by a sequence admitted after the release: its KV was still mapped in the idle slice.";
    EXPECT_EQ(first_changed(cache.data(kept) + 6 * token_bytes(), token_bytes(), 32), token_bytes())
        << "The kept sequence's seventh token was overwritten.";
  }
}

TEST(VmFork, NoSliceOrNoGranuleChangesNothing) {
  {
    PhysicalMemory memory(page_bytes(), 16);
    ContiguousKVCache cache(memory, 2, kMaxTokens, token_bytes());
    ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;
    ASSERT_TRUE(cache.admit(2, 6)) << kAdmitFails;
    EXPECT_FALSE(cache.fork(1, 3))
        << "Every slice is held: fork has nowhere to put the child, and says so, for the engine to retry it later.";
    EXPECT_EQ(cache.num_sequences(), 2u)
        << "A refused fork admits nothing: a half-made child is a sequence the engine never scheduled.";
    EXPECT_THROW((void)cache.num_tokens(3), std::invalid_argument) << "A refused fork leaves the child unknown.";
    EXPECT_EQ(cache.memory().refcount(*granule_at(cache, 1, 0)), 1u)
        << "A refused fork takes no reference: one taken and never given back pins the granule for good.";
    EXPECT_EQ(cache.memory().num_in_use(), 4u) << "A refused fork takes no granule.";
  }
  {
    PhysicalMemory memory(page_bytes(), 3);
    ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
    ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;
    ASSERT_TRUE(cache.admit(2, 4)) << kAdmitFails;
    EXPECT_FALSE(cache.fork(1, 3))
        << "Every granule is in use and no slice is idle: the child's copy of the partly filled granule cannot be "
        << "had.";
    EXPECT_EQ(cache.num_sequences(), 2u) << "A refused fork admits nothing.";
    EXPECT_THROW((void)cache.num_tokens(3), std::invalid_argument) << "A refused fork leaves the child unknown.";
    EXPECT_EQ(cache.memory().refcount(*granule_at(cache, 1, 0)), 1u)
        << "A refused fork takes no reference: a reference taken and never given back pins the granule forever.";
    EXPECT_EQ(cache.mapped_granules(), 3u) << "A refused fork maps nothing.";
    cache.release(2);
    EXPECT_TRUE(cache.fork(1, 3)) << "With one granule in an idle slice, the child's copy can be had.";
    EXPECT_EQ(cache.memory().num_in_use(), 3u);
  }
}

TEST(VmFork, ForkChecksItsIds) {
  PhysicalMemory memory(page_bytes(), 16);
  ContiguousKVCache cache(memory, 4, kMaxTokens, token_bytes());
  ASSERT_TRUE(cache.admit(1, 6)) << kAdmitFails;
  ASSERT_TRUE(cache.admit(2, 3)) << kAdmitFails;
  EXPECT_THROW((void)cache.fork(9, 3), std::invalid_argument) << "fork of an unknown parent is the caller's mistake.";
  EXPECT_THROW((void)cache.fork(1, 2), std::invalid_argument) << "fork into an admitted id is the caller's mistake.";
  EXPECT_THROW((void)cache.fork(1, 1), std::invalid_argument) << "A request cannot be its own child.";
  EXPECT_EQ(cache.num_sequences(), 2u) << "A fork that throws admits nothing.";
  EXPECT_EQ(cache.num_tokens(2), 3u) << "A fork that throws leaves the sequence it named as it was.";
  EXPECT_EQ(cache.memory().num_in_use(), 3u) << "A fork that throws takes no granule.";
  EXPECT_EQ(cache.memory().refcount(*granule_at(cache, 1, 0)), 1u) << "A fork that throws takes no reference.";
}

}  // namespace stage4_fork
