// Stage 2: an expandable segment, and a best-fit allocator over it.
#include "vm_under_test.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "alloclab_test.hpp"
#include "failing_new.hpp"
#include "vm_test_support.hpp"

namespace stage2_expandable_segment {

using alloclab::test::vm::ExpandableSegment;
using alloclab::test::vm::fill;
using alloclab::test::vm::holds;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::SegmentAllocator;
using alloclab::test::vm::taken;

// Two pages to a granule: a slip of a page shows.
std::size_t g() { return 2 * page_bytes(); }

TEST(VmExpandableSegment, ReservesWholeGranulesAndMapsNothing) {
  PhysicalMemory memory(g(), 8);
  EXPECT_THROW(ExpandableSegment(memory, 0), std::invalid_argument)
      << "ExpandableSegment(memory, 0) must throw std::invalid_argument: a segment of no bytes holds nothing.";
  ExpandableSegment one_byte(memory, 1);
  EXPECT_EQ(one_byte.size(), g()) << "A segment of one byte reserves the one granule that holds it.";
  ExpandableSegment segment(memory, 3 * g() + 1);
  EXPECT_EQ(segment.size(), 4 * g()) << "size() is max_bytes rounded up to whole granules: 3 granules and a byte need 4.";
  EXPECT_EQ(segment.granule_bytes(), g()) << "granule_bytes() is the memory's granule.";
  EXPECT_NE(segment.base(), nullptr) << "base() is the reservation's first byte.";
  EXPECT_EQ(segment.mapped_bytes(), 0u) << "A new segment maps nothing: granules are mapped as blocks need them.";
  EXPECT_EQ(memory.num_in_use(), 0u) << "A new segment creates no granule.";
  EXPECT_FALSE(segment.is_mapped(0)) << "is_mapped(0) of a new segment is false.";
  EXPECT_TRUE(segment.map(segment.size(), 0)) << "map() of no bytes, even at the end, succeeds and maps nothing.";
  EXPECT_EQ(segment.mapped_bytes(), 0u) << "map() of no bytes maps nothing.";
  EXPECT_TRUE(segment.map(0, 0)) << "map(0, 0) succeeds: no bytes touch no granule.";
  EXPECT_TRUE(segment.map(g() + 1, 0)) << "map(g + 1, 0) succeeds: no bytes touch no granule.";
  EXPECT_EQ(segment.mapped_bytes(), 0u)
      << "map() of no bytes, at the start or inside a granule, maps nothing: [offset, offset + 0) touches no "
         "granule, and the last byte of an empty range (offset - 1) is not one of its bytes.";
  ASSERT_TRUE(segment.map(g() + 1, 1)) << "map(g + 1, 1) with free memory must succeed.";
  EXPECT_TRUE(segment.is_mapped(g())) << "map(g + 1, 1) touches a byte of granule 1, which must be mapped: a block of "
                                         "one byte is memory too.";
  EXPECT_EQ(segment.mapped_bytes(), g()) << "map(g + 1, 1) maps granule 1 alone.";
}

TEST(VmExpandableSegment, MapsEveryGranuleItsBytesTouchLowestFirst) {
  PhysicalMemory memory(g(), 8);
  ExpandableSegment segment(memory, 8 * g());
  ASSERT_NE(segment.base(), nullptr) << "base() must be the reservation's first byte.";
  ASSERT_TRUE(segment.map(g() - 1, 2)) << "map(g - 1, 2) with free memory must succeed.";
  EXPECT_TRUE(segment.is_mapped(0) && segment.is_mapped(g()))
      << "map(g - 1, 2) touches the last byte of granule 0 and the first of granule 1: both must be mapped, "
         "every granule a request's bytes touch.";
  EXPECT_EQ(segment.mapped_bytes(), 2 * g()) << "mapped_bytes() counts whole granules mapped.";
  EXPECT_EQ(segment.range().mapped(0), std::optional<std::size_t>(0))
      << "map() maps the lowest address first: slot 0 gets the first granule created (0).";
  EXPECT_EQ(segment.range().mapped(1), std::optional<std::size_t>(1)) << "and slot 1 the next one (1).";
  ASSERT_TRUE(segment.map(2 * g(), g() + 1)) << "map(2g, g + 1) with free memory must succeed.";
  EXPECT_TRUE(segment.is_mapped(3 * g()))
      << "map(2g, g + 1) holds one byte of granule 3: a request must be rounded up to whole granules, or the "
         "last bytes of a block lie in a granule nobody mapped.";
  EXPECT_FALSE(segment.is_mapped(4 * g())) << "map(2g, g + 1) must not map granule 4, which it does not touch.";
  ASSERT_TRUE(segment.is_mapped(3 * g())) << "granule 3 must be mapped before the test writes into it.";
  segment.base()[4 * g() - 1] = std::byte{1};
  const auto calls = segment.range().map_calls();
  ASSERT_TRUE(segment.map(0, 4 * g())) << "map() of bytes already mapped must succeed.";
  EXPECT_EQ(segment.range().map_calls(), calls) << "map() maps only the granules that are not mapped yet.";
  EXPECT_EQ(memory.num_in_use(), 4u) << "Four granules mapped hold four granules of memory.";
  EXPECT_EQ(memory.committed_bytes(), page_bytes()) << "Mapping commits nothing; the one byte written committed a page.";
}

TEST(VmExpandableSegment, MapIsAllOrNothing) {
  PhysicalMemory memory(g(), 3);
  ExpandableSegment segment(memory, 8 * g());
  ASSERT_TRUE(segment.map(0, 2 * g())) << "map(0, 2g) with 3 free granules must succeed.";
  const auto calls = segment.range().map_calls();
  EXPECT_FALSE(segment.map(g(), 3 * g()))
      << "map(g, 3g) needs granules 2 and 3, and the memory has one left: it must return false.";
  EXPECT_EQ(memory.num_free(), 1u)
      << "A map that fails halfway must unmap and release the granules it mapped: here granule 2 was mapped "
         "before the memory ran out, and nobody would ever give it back.";
  EXPECT_FALSE(segment.is_mapped(2 * g())) << "A map that returns false leaves granule 2 unmapped, as it was.";
  EXPECT_EQ(segment.mapped_bytes(), 2 * g()) << "A map that returns false leaves what was mapped before it.";
  EXPECT_TRUE(segment.is_mapped(g())) << "A failed map must not unmap a granule it did not map itself.";
  EXPECT_GE(segment.range().map_calls(), calls) << "map_calls() never goes back.";
  ASSERT_TRUE(segment.map(2 * g(), g())) << "After a failed map, the granule left must still be mappable.";
}

TEST(VmExpandableSegment, AMapTheHeapRefusesChangesNothing) {
  ASSERT_TRUE(alloclab::test::failing_new_works())
      << "This test binary cannot make operator new fail, so the test would prove nothing.";
  alloclab::test::for_each_failing_allocation([](long n) {
    PhysicalMemory memory(g(), 8);
    ExpandableSegment segment(memory, 8 * g());
    bool mapped = false;
    const auto outcome = alloclab::test::call_with_failing_new(n, [&] { mapped = segment.map(g() / 2, 3 * g()); });
    if (outcome.fired && outcome.threw) {
      EXPECT_EQ(segment.mapped_bytes(), 0u)
          << "map(g / 2, 3g) threw std::bad_alloc when heap allocation " << n << " inside it failed, and left "
          << segment.mapped_bytes() / g() << " granule(s) mapped: a call that throws must change nothing. Make "
             "room for the list of granules mapped so far before mapping the first, so that no allocation can "
             "fail between a map and its record, where the undo would miss it.";
      EXPECT_EQ(memory.num_in_use(), 0u) << "A map that throws std::bad_alloc leaves no granule in use.";
    } else if (!outcome.fired) {
      EXPECT_TRUE(mapped) << "map(g / 2, 3g) with free memory must succeed.";
      EXPECT_EQ(segment.mapped_bytes(), 4 * g()) << "map(g / 2, 3g) touches granules 0 to 3.";
    }
    return outcome.fired;
  });
}

TEST(VmExpandableSegment, AMapTheSystemRefusesChangesNothing) {
  PhysicalMemory memory(g(), 8);
  ExpandableSegment segment(memory, 8 * g());
  ASSERT_TRUE(segment.map(0, 1)) << "map(0, 1) with free memory must succeed.";
  {
    const alloclab::test::vm::WriteOnlyFile refusing(memory.fd());
    ASSERT_TRUE(refusing.swapped()) << "The test needs the file open write-only in place of the memory's descriptor.";
    EXPECT_THROW((void)segment.map(0, 3 * g()), std::system_error)
        << "map(0, 3g) whose mmap the system refuses must let the std::system_error through: a map that returns "
           "true over a granule it could not map hands out a block that faults at its first byte.";
  }
  EXPECT_EQ(segment.mapped_bytes(), g()) << "A map that throws leaves mapped only what was mapped before it.";
  EXPECT_EQ(memory.num_in_use(), 1u)
      << "A map that throws must release the granule it created for the slot it could not map, or the granule "
         "is in use for ever with nobody to give it back.";
}

TEST(VmExpandableSegment, BytesOutsideTheSegmentThrow) {
  PhysicalMemory memory(g(), 4);
  ExpandableSegment segment(memory, 2 * g());
  EXPECT_THROW((void)segment.map(2 * g() - 1, 2), std::out_of_range)
      << "map() of bytes past the segment's end must throw std::out_of_range.";
  EXPECT_THROW((void)segment.map(g(), std::numeric_limits<std::size_t>::max()), std::out_of_range)
      << "map(g, SIZE_MAX) must throw std::out_of_range, before offset + bytes wraps round.";
  EXPECT_THROW((void)segment.unmap(3 * g(), 1), std::out_of_range)
      << "unmap() of bytes past the segment's end must throw std::out_of_range.";
  EXPECT_THROW((void)segment.is_mapped(2 * g()), std::out_of_range)
      << "is_mapped() of a byte past the segment's end must throw std::out_of_range.";
  EXPECT_NO_THROW(EXPECT_FALSE(segment.is_mapped(2 * g() - 1)))
      << "is_mapped() of the segment's last byte asks about a byte inside it: it must answer (false), not throw.";
  EXPECT_EQ(memory.num_in_use(), 0u) << "A call that throws maps nothing.";
  ASSERT_TRUE(segment.map(0, 2 * g())) << "map(0, 2g) with free memory must succeed.";
  EXPECT_THROW((void)segment.unmap(g(), 2 * g()), std::out_of_range)
      << "unmap(g, 2g) of a segment of 2g runs past its end and must throw std::out_of_range.";
  EXPECT_TRUE(segment.is_mapped(g()))
      << "unmap(g, 2g) threw, so it must have unmapped nothing: check every byte lies inside the segment before "
         "the first granule is unmapped, or a caller's error costs a granule that still holds a block.";
}

TEST(VmExpandableSegment, UnmapsOnlyWholeGranules) {
  PhysicalMemory memory(g(), 4);
  ExpandableSegment segment(memory, 4 * g());
  ASSERT_TRUE(segment.map(0, 3 * g())) << "map(0, 3g) with free memory must succeed.";
  ASSERT_TRUE(segment.is_mapped(2 * g())) << "map(0, 3g) must map granules 0 to 2.";
  fill(segment.base(), 3 * g(), 5);
  EXPECT_EQ(segment.unmap(g() / 2, g()), 0u)
      << "unmap(g/2, g) holds no whole granule: it must unmap nothing, since the rest of granules 0 and 1 may "
         "hold somebody's block.";
  EXPECT_EQ(segment.unmap(g() / 2, 2 * g()), g())
      << "unmap(g/2, 2g) lies wholly over granule 1 only: it must unmap that granule and return its bytes.";
  EXPECT_FALSE(segment.is_mapped(g())) << "Granule 1 is unmapped.";
  ASSERT_TRUE(segment.is_mapped(0) && segment.is_mapped(2 * g()))
      << "Granules 0 and 2, partly outside the bytes given, must stay mapped.";
  EXPECT_TRUE(holds(segment.base(), g(), 5)) << "Granule 0 keeps its bytes.";
  EXPECT_EQ(memory.num_in_use(), 2u) << "unmap() releases the granules it unmaps: the memory has 2 in use.";
  EXPECT_EQ(memory.committed_bytes(), 2 * g()) << "A granule unmapped gives its memory back to the system.";
  EXPECT_TRUE(taken(segment.base() + g(), g())) << "An unmapped granule's addresses stay reserved.";
  EXPECT_EQ(segment.unmap(1, 3 * g() - 1), g())
      << "unmap(1, 3g - 1) lies wholly over granules 1 (unmapped already) and 2 only: it must unmap granule 2 and "
         "return its bytes. Granule 0 holds the byte before the start, so its start rounds up to granule 1.";
  EXPECT_TRUE(segment.is_mapped(0)) << "Granule 0, partly outside unmap(1, 3g - 1), must stay mapped.";
  EXPECT_EQ(segment.unmap(0, 4 * g()), g()) << "unmap(0, size()) unmaps what is still mapped and counts only that.";
  EXPECT_EQ(segment.mapped_bytes(), 0u) << "Everything is unmapped.";
}

TEST(VmExpandableSegment, DestroyingTheSegmentGivesEveryGranuleBack) {
  PhysicalMemory memory(g(), 4);
  {
    ExpandableSegment segment(memory, 4 * g());
    ASSERT_TRUE(segment.map(g(), 2 * g())) << "map(g, 2g) with free memory must succeed.";
    SegmentAllocator allocator(memory, 4 * g());
    ASSERT_NE(allocator.allocate(100), nullptr) << "allocate(100) on a new allocator must return a block.";
  }
  EXPECT_EQ(memory.num_in_use(), 0u)
      << "The destructors of the segment and the allocator must unmap and release every granule they mapped, "
         "or the memory stays in use for good.";
}

TEST(VmExpandableSegment, AllocateRoundsTo512AndMapsOnDemand) {
  PhysicalMemory memory(g(), 4);
  SegmentAllocator allocator(memory, 4 * g());
  EXPECT_THROW((void)allocator.allocate(0), std::invalid_argument) << "allocate(0) must throw std::invalid_argument.";
  EXPECT_EQ(allocator.mapped_bytes(), 0u) << "A new allocator maps nothing.";
  std::byte* a = allocator.allocate(1);
  ASSERT_NE(a, nullptr) << "allocate(1) on a new allocator must return a block.";
  EXPECT_EQ(a, allocator.segment().base()) << "The first block is the front of the segment.";
  EXPECT_EQ(allocator.allocated_bytes(), 512u) << "A request is rounded up to kAlignment (512): 1 byte takes 512.";
  EXPECT_EQ(allocator.mapped_bytes(), g()) << "allocate() maps the granule its block touches, and no more.";
  std::byte* b = allocator.allocate(513);
  ASSERT_NE(b, nullptr) << "allocate(513) must return a block.";
  EXPECT_EQ(b, a + 512) << "The second block starts where the first, rounded to 512, ends.";
  EXPECT_EQ(allocator.allocated_bytes(), 512u + 1024u) << "513 bytes take 1024.";
  EXPECT_EQ(allocator.allocate(4 * g() + 1), nullptr) << "A request larger than the segment returns nullptr.";
  std::byte* c = allocator.allocate(g());
  ASSERT_NE(c, nullptr) << "allocate(g) must return a block.";
  EXPECT_EQ(allocator.mapped_bytes(), 2 * g()) << "A block over granules 0 and 1 maps granule 1 too.";
  fill(c, g(), 11);
  EXPECT_TRUE(holds(c, g(), 11)) << "Every byte of a block is mapped memory.";
}

TEST(VmExpandableSegment, BestFitTakesTheSmallestFreeBlock) {
  PhysicalMemory memory(g(), 4);
  SegmentAllocator allocator(memory, 4 * g());
  std::byte* x[6];
  const std::size_t sizes[6] = {512, 1024, 512, 512, 512, 512};
  for (int i = 0; i < 6; ++i) {
    x[i] = allocator.allocate(sizes[i]);
    ASSERT_NE(x[i], nullptr) << "allocate(" << sizes[i] << ") must return a block.";
  }
  allocator.deallocate(x[1]);  // a hole of 1024 bytes
  allocator.deallocate(x[3]);  // a hole of 512
  std::byte* fit = allocator.allocate(512);
  EXPECT_EQ(fit, x[3])
      << "allocate(512) must take the smallest free block that holds it, the hole of 512 bytes, not the first "
         "that fits (the hole of 1024): best fit keeps the larger holes for the larger requests.";
  std::byte* big = allocator.allocate(1024);
  EXPECT_EQ(big, x[1]) << "allocate(1024) then takes the hole of 1024, which now fits best.";
  allocator.deallocate(x[2]);
  allocator.deallocate(x[4]);
  EXPECT_EQ(allocator.allocate(512), x[2]) << "Among free blocks of one size, the lowest comes first.";
  const std::size_t tail = 4 * g() - 3584;  // the free block after the six, beside block 4's 512
  EXPECT_EQ(allocator.allocate(tail + 512), nullptr)
      << "allocate() of more than the largest free block returns nullptr, though the free bytes add up to as much: "
         "a block is contiguous.";
}

TEST(VmExpandableSegment, FreedNeighboursMerge) {
  PhysicalMemory memory(g(), 2);
  for (const bool forward : {true, false}) {
    SegmentAllocator allocator(memory, 2 * g());
    std::byte* x[4];
    for (auto& p : x) {
      p = allocator.allocate(g() / 2);
      ASSERT_NE(p, nullptr) << "Four blocks of half a granule must fill a segment of two granules.";
    }
    allocator.deallocate(x[forward ? 1 : 2]);
    allocator.deallocate(x[forward ? 2 : 1]);
    EXPECT_EQ(allocator.allocate(g()), x[1])
        << "Blocks 1 and 2, freed in " << (forward ? "address" : "reverse") << " order, must merge into one free "
        << "block of a granule: a freed block merges with a free block "
        << (forward ? "right before it" : "right after it") << ", or the segment fragments though every block lies "
        << "in one range.";
  }
}

// The request-order scenario of PyTorch's fragmentation note: blocks of one size allocated and
// freed, then blocks of another. Separate segments each keep their size; one expandable segment
// serves both from the same mapped bytes.
TEST(VmExpandableSegment, RequestsOfAnyOrderShareTheSameMappedBytes) {
  const std::size_t unit = 512;
  for (const bool small_first : {true, false}) {
    PhysicalMemory memory(g(), 64);
    SegmentAllocator allocator(memory, 32 * 16 * unit);
    const std::size_t first = small_first ? 16 * unit : 32 * unit, then = small_first ? 32 * unit : 16 * unit;
    std::vector<std::byte*> blocks;
    for (std::size_t i = 0; i < (small_first ? 8u : 4u); ++i) {
      blocks.push_back(allocator.allocate(first));
      ASSERT_NE(blocks.back(), nullptr) << "allocate(" << first << ") must return a block.";
    }
    const std::size_t mapped = allocator.mapped_bytes();
    for (std::byte* p : blocks) allocator.deallocate(p);
    EXPECT_EQ(allocator.mapped_bytes(), mapped) << "deallocate() keeps the granules mapped, cached for the next request.";
    blocks.clear();
    for (std::size_t i = 0; i < (small_first ? 4u : 8u); ++i) {
      blocks.push_back(allocator.allocate(then));
      ASSERT_NE(blocks.back(), nullptr) << "allocate(" << then << ") must return a block.";
    }
    EXPECT_EQ(allocator.mapped_bytes(), mapped)
        << (small_first ? "8 blocks of 16 units freed, then 4 of 32" : "4 blocks of 32 units freed, then 8 of 16")
        << ": the freed blocks merge into one, so the second requests must take the same mapped bytes and map "
           "no more. That is what an expandable segment is for: the order of requests no longer decides which "
           "freed memory can serve which request.";
    EXPECT_EQ(memory.num_in_use() * g(), mapped) << "and the memory holds no granule more than is mapped.";
    for (std::byte* p : blocks) allocator.deallocate(p);
  }
}

TEST(VmExpandableSegment, EmptyCacheKeepsTheGranulesOfLiveBlocks) {
  PhysicalMemory memory(g(), 8);
  SegmentAllocator allocator(memory, 8 * g());
  std::byte* x[8];
  for (auto& p : x) {
    p = allocator.allocate(g());
    ASSERT_NE(p, nullptr) << "Eight blocks of a granule must fit a segment of eight.";
  }
  for (std::byte* p : x) allocator.deallocate(p);
  // Every granule is mapped now. A block of 512 bytes, then one straddling granules 0 and 1.
  std::byte* live = allocator.allocate(512);  // granule 0's front
  ASSERT_NE(live, nullptr) << "allocate(512) must return a block.";
  std::byte* straddling = allocator.allocate(g());  // [512, g + 512): granules 0 and 1
  ASSERT_NE(straddling, nullptr) << "allocate(g) must return a block.";
  allocator.deallocate(live);
  fill(straddling, g(), 21);
  const std::size_t unmapped = allocator.empty_cache();
  EXPECT_EQ(unmapped, 6 * g())
      << "empty_cache() must unmap the six granules no live block touches and return their bytes.";
  const auto base = allocator.segment().base();
  EXPECT_TRUE(allocator.segment().is_mapped(0))
      << "Granule 0 is partly free and partly the live block's: empty_cache() must keep it mapped.";
  EXPECT_TRUE(allocator.segment().is_mapped(g()))
      << "Granule 1 holds the end of a live block: empty_cache() must keep it mapped, or the block's bytes vanish.";
  EXPECT_EQ(allocator.mapped_bytes(), 2 * g()) << "Two granules stay mapped: the ones a live block pins.";
  EXPECT_EQ(memory.num_in_use(), 2u) << "empty_cache() releases the granules it unmaps.";
  ASSERT_TRUE(allocator.segment().is_mapped(0) && allocator.segment().is_mapped(g()))
      << "The live block's granules must be mapped before the test reads it.";
  EXPECT_TRUE(holds(straddling, g(), 21)) << "A live block keeps its bytes through empty_cache().";
  EXPECT_EQ(straddling, base + 512) << "The straddling block starts 512 bytes into the segment.";
  std::byte* again = allocator.allocate(4 * g());
  ASSERT_NE(again, nullptr) << "After empty_cache(), a request maps its granules again.";
  fill(again, 4 * g(), 2);
  EXPECT_TRUE(holds(straddling, g(), 21)) << "and leaves the live block alone.";
}

TEST(VmExpandableSegment, AllocateWithoutMemoryChangesNothing) {
  PhysicalMemory memory(g(), 2);
  SegmentAllocator allocator(memory, 8 * g());
  EXPECT_EQ(allocator.allocate(3 * g()), nullptr)
      << "allocate(3g) with two granules of memory must return nullptr.";
  EXPECT_EQ(allocator.allocated_bytes(), 0u) << "A refused allocate changes nothing.";
  EXPECT_EQ(allocator.mapped_bytes(), 0u) << "A refused allocate leaves no granule mapped.";
  EXPECT_EQ(memory.num_free(), 2u) << "A refused allocate leaves no granule in use.";
  EXPECT_EQ(allocator.allocate(std::numeric_limits<std::size_t>::max() - 100), nullptr)
      << "allocate(SIZE_MAX - 100) is larger than the segment and must return nullptr: rounded up to 512 before "
         "it is compared, the request wraps round to 0 bytes and takes a block of none.";
  EXPECT_EQ(allocator.allocated_bytes(), 0u) << "A refused allocate changes nothing.";
  std::byte* p = allocator.allocate(2 * g());
  EXPECT_EQ(p, allocator.segment().base())
      << "After a refusal the free block is whole: allocate(2g) must take the segment's front.";
  PhysicalMemory enough(g(), 2);
  SegmentAllocator whole(enough, 2 * g());
  EXPECT_EQ(whole.allocate(2 * g()), whole.segment().base())
      << "allocate(size()) of an empty segment must take all of it: the one free block holds exactly that many "
         "bytes.";
}

TEST(VmExpandableSegment, DeallocateRefusesWhatIsNotALiveBlock) {
  PhysicalMemory memory(g(), 2);
  SegmentAllocator allocator(memory, 2 * g());
  std::byte* a = allocator.allocate(1024);
  ASSERT_NE(a, nullptr) << "allocate(1024) must return a block.";
  EXPECT_THROW(allocator.deallocate(a + 512), std::invalid_argument)
      << "deallocate() of a pointer inside a block must throw std::invalid_argument.";
  EXPECT_THROW(allocator.deallocate(a + 2 * g()), std::invalid_argument)
      << "deallocate() of a pointer past the segment must throw std::invalid_argument.";
  EXPECT_NO_THROW(allocator.deallocate(nullptr)) << "deallocate(nullptr) does nothing, as free(nullptr) does.";
  allocator.deallocate(a);
  EXPECT_THROW(allocator.deallocate(a), std::invalid_argument)
      << "deallocate() of a block freed already must throw std::invalid_argument: a second free would hand the "
         "bytes out twice.";
  EXPECT_EQ(allocator.allocated_bytes(), 0u) << "allocated_bytes() counts live blocks only.";
}

}  // namespace stage2_expandable_segment
