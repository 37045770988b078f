// Stage 1 — the free list: allocate, deallocate, last-in-first-out reuse, and the counts.
#include "pool_under_test.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "alloclab_test.hpp"
#include "pool_test_support.hpp"

namespace stage1_free_list {

using alloclab::test::pool::FixedPool;
using alloclab::test::address;
using namespace alloclab::test::pool;

// Stage 1 asks for blocks of 64 bytes, already a multiple of any alignment the contract
// rounds to, so nothing here depends on stage 2's rounding.
constexpr std::size_t kSize = 64;

TEST(PoolFreeList, RejectsZeroSizes) {
  EXPECT_THROW(FixedPool{0}, std::invalid_argument)
      << "FixedPool(0) must throw std::invalid_argument: a pool of 0-byte blocks has nothing to hand out, "
         "so the mistake belongs to whoever built it.";
  EXPECT_THROW(FixedPool(kSize, 0), std::invalid_argument)
      << "FixedPool(64, 0) must throw std::invalid_argument: a chunk of 0 blocks could never satisfy an "
         "allocate(), however many chunks the pool added.";
}

TEST(PoolFreeList, IsNotCopyable) {
  const auto traits = alloclab::test::pool::traits_of(alloclab::test::pool::Kind::fixed);
  EXPECT_FALSE(traits.copy_constructible)
      << "FixedPool must not be copy-constructible: two copies would own, and free, the same chunks.";
  EXPECT_FALSE(traits.copy_assignable)
      << "FixedPool must not be copy-assignable: two pools would own, and free, the same chunks.";
}

TEST(PoolFreeList, NewPoolHoldsOneFullChunk) {
  FixedPool pool(kSize, 8);
  EXPECT_EQ(pool.blocks_per_chunk(), 8u) << "blocks_per_chunk() must return the constructor's second argument.";
  EXPECT_EQ(pool.chunk_count(), 1u) << "The constructor allocates the first chunk: chunk_count() must be 1.";
  EXPECT_EQ(pool.capacity(), 8u) << "capacity() counts the blocks of all chunks: one chunk of 8 blocks is 8.";
  EXPECT_EQ(pool.free_blocks(), 8u) << "Nothing is handed out yet: all 8 blocks of the first chunk are free.";
  FixedPool defaults(kSize);
  EXPECT_EQ(defaults.blocks_per_chunk(), 1024u) << "blocks_per_chunk defaults to 1024.";
  EXPECT_EQ(defaults.free_blocks(), 1024u) << "A default pool starts with 1024 free blocks.";
}

TEST(PoolFreeList, AllocateReturnsAWritableBlock) {
  FixedPool pool(kSize, 8);
  void* p = pool.allocate();
  ASSERT_NE(p, nullptr) << "allocate() returned nullptr: it must return the start of a free block.";
  fill(p, kSize, 0xAB);  // every requested byte is the caller's to write
  EXPECT_TRUE(holds(p, kSize, 0xAB)) << "The 64 bytes of a block must keep what the caller wrote.";
  pool.deallocate(p);
}

TEST(PoolFreeList, CountsFollowEveryCall) {
  FixedPool pool(kSize, 8);
  void* a = pool.allocate();
  ASSERT_NE(a, nullptr) << "allocate() returned nullptr: a new pool of 8 blocks has a free block to give.";
  EXPECT_EQ(pool.free_blocks(), 7u) << "After one allocate() on a pool of 8 free blocks, free_blocks() must be 7.";
  void* b = pool.allocate();
  ASSERT_NE(b, nullptr) << "allocate() returned nullptr: 7 of the 8 blocks are still free.";
  EXPECT_EQ(pool.free_blocks(), 6u) << "After two allocate() calls, free_blocks() must be 6.";
  EXPECT_EQ(pool.capacity(), 8u) << "Handing blocks out does not change capacity(): it counts free and used blocks.";
  pool.deallocate(a);
  EXPECT_EQ(pool.free_blocks(), 7u) << "deallocate() puts a block back: free_blocks() must rise by one.";
  pool.deallocate(b);
  EXPECT_EQ(pool.free_blocks(), 8u) << "With every block given back, free_blocks() must equal capacity().";
  EXPECT_EQ(pool.chunk_count(), 1u) << "Two blocks out of eight never need a second chunk.";
}

TEST(PoolFreeList, ReusesTheMostRecentlyFreedBlock) {
  FixedPool pool(kSize, 8);
  void* a = pool.allocate();
  void* b = pool.allocate();
  void* c = pool.allocate();
  ASSERT_TRUE(a && b && c) << "allocate() returned nullptr.";
  pool.deallocate(b);
  EXPECT_EQ(pool.allocate(), b)
      << "The free list is a stack: the block just given to deallocate() must be the next one allocate() "
         "returns. It is the block most likely still in the CPU cache.";
  pool.deallocate(a);
  pool.deallocate(c);
  EXPECT_EQ(pool.allocate(), c) << "After deallocate(a) then deallocate(c), allocate() must return c (last in, "
                                   "first out); a list used as a queue (first in, first out) returns a first.";
  void* last = pool.allocate();
  EXPECT_EQ(last, a) << "After deallocate(a), deallocate(c) and one allocate(), a is the only freed block left, so "
                        "the next allocate() must return it. "
                     << (last == a || last == c ? ""
                                                : "It returned a block that was never freed: the link from c to a "
                                                  "was lost. deallocate() must store the old head inside the freed "
                                                  "block before the block becomes the head.");
}

TEST(PoolFreeList, ReuseOrderIsLastInFirstOut) {
  FixedPool pool(kSize, 8);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.allocate());
  ASSERT_EQ(std::count(blocks.begin(), blocks.end(), nullptr), 0) << "allocate() returned nullptr.";
  const int order[] = {3, 0, 7, 5, 1};
  for (int i : order) pool.deallocate(blocks[i]);
  for (int k = 4; k >= 0; --k) {
    EXPECT_EQ(pool.allocate(), blocks[order[k]])
        << "Blocks freed in the order 3, 0, 7, 5, 1 must come back as 1, 5, 7, 0, 3; block " << order[k]
        << " was expected here. allocate() pops what deallocate() pushed last.";
  }
}

TEST(PoolFreeList, LiveBlocksDoNotOverlap) {
  FixedPool pool(kSize, 16);
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << " of 16.";
    blocks.push_back(p);
    fill(p, kSize, i);
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(holds(blocks[i], kSize, i))
        << "Block " << i << " no longer holds what was written into it: writing another live block, or "
           "the pool's own bookkeeping, overwrote it. Live blocks must never share a byte.";
  }
  EXPECT_TRUE(all_distinct(blocks)) << "allocate() returned the same block twice while it was still in use.";
  EXPECT_GE(smallest_gap(blocks), kSize)
      << "Two live blocks start less than 64 bytes apart, so a 64-byte block overlaps its neighbour.";
  for (void* p : blocks) pool.deallocate(p);
}

TEST(PoolFreeList, DeallocateNullDoesNothing) {
  FixedPool pool(kSize, 8);
  void* a = pool.allocate();
  ASSERT_NE(a, nullptr) << "allocate() returned nullptr: a new pool of 8 blocks has a free block to give.";
  pool.deallocate(nullptr);
  EXPECT_EQ(pool.free_blocks(), 7u) << "deallocate(nullptr) must do nothing, like free(nullptr); free_blocks() changed.";
  void* b = pool.allocate();
  EXPECT_NE(b, nullptr) << "After deallocate(nullptr), allocate() must still return a real block, never the "
                           "null that was pushed onto the list.";
  pool.deallocate(b);
  pool.deallocate(a);
}

TEST(PoolFreeList, UsesEveryBlockOfTheChunkBeforeGrowing) {
  FixedPool pool(kSize, 8);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << " of 8.";
    blocks.push_back(p);
  }
  EXPECT_EQ(pool.chunk_count(), 1u)
      << "Eight blocks fit in the first chunk of eight: the pool must not add a chunk before its list is empty.";
  EXPECT_EQ(pool.free_blocks(), 0u) << "With all eight blocks handed out, free_blocks() must be 0.";
  EXPECT_TRUE(all_distinct(blocks)) << "The eight blocks of a chunk must all be different.";
  for (void* p : blocks) pool.deallocate(p);
}

TEST(PoolFreeList, FreedBlocksAreAllReusedBeforeGrowing) {
  FixedPool pool(kSize, 8);
  std::vector<void*> first;
  for (int i = 0; i < 8; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << " of 8.";
    zero(p, kSize);  // the caller owns every byte, including where the link was
    first.push_back(p);
  }
  for (void* p : first) pool.deallocate(p);
  std::vector<void*> second;
  for (int i = 0; i < 8; ++i) second.push_back(pool.allocate());
  EXPECT_EQ(pool.chunk_count(), 1u)
      << "All eight blocks were given back, so allocating eight again must not add a chunk. A second chunk "
         "means the list lost blocks: deallocate() must write the link to the old head into the freed block "
         "(whatever the caller left there), then make the block the new head.";
  EXPECT_EQ(std::set<void*>(first.begin(), first.end()), std::set<void*>(second.begin(), second.end()))
      << "The eight blocks allocated again must be exactly the eight that were freed.";
  for (void* p : second) pool.deallocate(p);
}

// Runs `body` in a child process and returns what AddressSanitizer reported there, in three lines:
// what it found, the access, and the first frame of the stack, the line that made it; empty when
// the child ran to its end. A death test would print the child's whole report before the test's
// own message, which a report of 30 lines would then hide.
template <class Body>
std::string asan_report_in_a_child(Body&& body) {
  int out[2];
  if (pipe(out) != 0) return "no pipe to a child process";
  const pid_t child = fork();
  if (child == 0) {
    close(out[0]);
    dup2(out[1], STDERR_FILENO);
    body();
    std::_Exit(0);  // no leak check: the child leaves the pool as it is
  }
  close(out[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) report.append(buffer, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::istringstream lines(report);
  std::string summary, line;
  bool found = false, access = false;
  while (std::getline(lines, line)) {
    if (line.find("ERROR: AddressSanitizer") != std::string::npos) {
      summary += line.substr(line.find("AddressSanitizer")) + "\n";
      found = true;
    } else if (found && !access) {
      summary += line + "\n";
      access = true;
    } else if (found && line.find("#0 ") != std::string::npos) {
      return summary + line;
    }
  }
  return summary.empty() ? "the child died without a report of AddressSanitizer" : summary;
}

// deallocate is O(1): it writes the link into the block it is given and moves the head, and
// touches no other free block. Here every free block but the top of the list is poisoned for
// AddressSanitizer and the last deallocate runs in a child process: a walk along the list (to
// refuse a double free, say) reads a poisoned link there, where no clock could tell a walk of 30
// blocks from none.
TEST(PoolFreeList, DeallocateTouchesNoOtherFreeBlock) {
  ALLOCLAB_REQUIRE_ASAN();
  constexpr int kBlocks = 32;
  FixedPool pool(kSize, kBlocks);
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    void* p = pool.allocate();
    ASSERT_NE(p, nullptr) << "allocate() returned nullptr for block " << i << " of " << kBlocks << ".";
    blocks.push_back(p);
  }
  for (int i = 0; i < kBlocks - 2; ++i) pool.deallocate(blocks[i]);  // the top is blocks[kBlocks - 3]
  const std::string report = asan_report_in_a_child([&] {
    for (int i = 0; i < kBlocks - 3; ++i) poison(blocks[i], kSize);
    pool.deallocate(blocks[kBlocks - 2]);
  });
  EXPECT_TRUE(report.empty())
      << "deallocate(p) read or wrote a free block other than p and the top of the list (AddressSanitizer's "
         "report, below, names your line): deallocate must be O(1), a push of p and nothing more. A walk along the "
         "free list, to refuse a double free say, reads every free block on every call, so a pool with a million "
         "free blocks pays a million reads per deallocate. A double free is undefined behaviour, as it is for "
         "free(); owns() is there for a caller who wants to check a pointer.\n"
      << report;
  pool.deallocate(blocks[kBlocks - 2]);
  pool.deallocate(blocks[kBlocks - 1]);
}

}  // namespace stage1_free_list
