// Stage 1: granules of one memfd file, and a reservation they are mapped into and out of.
#include "vm_under_test.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <memory>

#include "alloclab_test.hpp"
#include "vm_test_support.hpp"

namespace stage1_granules {

using alloclab::test::address;
using alloclab::test::vm::AddressRange;
using alloclab::test::vm::fill;
using alloclab::test::vm::holds;
using alloclab::test::vm::page_bytes;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::read_byte;
using alloclab::test::vm::taken;
using alloclab::test::vm::zeros;

// Four pages to a granule: a granule is more than one page, so a page-sized slip shows.
std::size_t granule() { return 4 * page_bytes(); }

TEST(VmGranules, RejectsGranulesThatAreNotWholePages) {
  EXPECT_THROW(PhysicalMemory(0, 4), std::invalid_argument)
      << "PhysicalMemory(0, 4) must throw std::invalid_argument: a granule of 0 bytes maps nothing.";
  EXPECT_THROW(PhysicalMemory(page_bytes() + 512, 4), std::invalid_argument)
      << "A granule of a page and a half must throw std::invalid_argument: the system maps whole pages, so a "
         "granule that ends inside a page would share that page with its neighbour.";
  EXPECT_THROW(PhysicalMemory(granule(), 0), std::invalid_argument)
      << "PhysicalMemory(g, 0) must throw std::invalid_argument: memory of no granules can hand out nothing.";
  EXPECT_THROW(PhysicalMemory(granule(), std::numeric_limits<std::size_t>::max() / 2), std::invalid_argument)
      << "More granules than a file offset can number must throw std::invalid_argument, before the size "
         "wraps round into a small file.";
  PhysicalMemory memory(granule(), 4);
  EXPECT_EQ(memory.granule_bytes(), granule()) << "granule_bytes() is the size the memory was built with.";
  EXPECT_EQ(memory.num_granules(), 4u) << "num_granules() is the count the memory was built with.";
  EXPECT_EQ(memory.num_free(), 4u) << "A new PhysicalMemory has every granule free.";
  EXPECT_EQ(memory.num_in_use(), 0u) << "A new PhysicalMemory has no granule in use.";
  EXPECT_GE(memory.fd(), 0) << "fd() is the memfd file's descriptor, which every mapping of a granule maps.";
  EXPECT_THROW(AddressRange(memory, 0), std::invalid_argument)
      << "AddressRange(memory, 0) must throw std::invalid_argument: a reservation of no slots holds nothing.";
  EXPECT_THROW(AddressRange(memory, std::numeric_limits<std::size_t>::max()), std::invalid_argument)
      << "A range whose bytes overflow a size_t must throw std::invalid_argument, before slots * granule "
         "wraps round into a small reservation.";
}

TEST(VmGranules, AcceptsTheLargestFileAnOffsetNumbers) {
  // Granules of 2^50 bytes: the largest count whose file size a file offset still holds is a few
  // thousand, so the test's memory costs a few kilobytes of counts and no page of the file.
  const std::size_t huge = std::size_t{1} << 50;
  const std::size_t most = static_cast<std::size_t>(std::numeric_limits<off_t>::max()) / huge;
  try {
    PhysicalMemory memory(huge, most);
    EXPECT_EQ(memory.num_granules(), most) << "num_granules() is the count the memory was built with.";
  } catch (const std::exception& e) {
    ADD_FAILURE() << most << " granules of 2^50 bytes make a file of " << most * huge
                  << " bytes, which a file offset numbers (at most " << std::numeric_limits<off_t>::max()
                  << "): the constructor must accept them, refusing only a count whose size would overflow; it "
                     "threw: "
                  << e.what();
  }
}

TEST(VmGranules, ARangeOverflowsOnlyPastTheLargestSize) {
  // Granules of 2^50 bytes: 2^14 slots are 2^64 bytes, one past what a size_t holds, and every
  // count the test asks for keeps the range's own bookkeeping small.
  const std::size_t huge = std::size_t{1} << 50;
  PhysicalMemory memory(huge, 1);
  const std::size_t most = std::numeric_limits<std::size_t>::max() / huge;
  EXPECT_THROW(AddressRange(memory, most + 1), std::invalid_argument)
      << most + 1 << " slots of 2^50 bytes are 2^64 bytes, which wrap round to 0 in a size_t: the constructor must "
         "throw std::invalid_argument before it reserves slots * granule bytes, or it reserves a wrapped size.";
  try {
    AddressRange range(memory, most);
    ADD_FAILURE() << "A reservation of " << most << " slots of 2^50 bytes cannot succeed on this machine.";
  } catch (const std::system_error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << most << " slots of 2^50 bytes fit a size_t, so no overflow is to be reported: it is the "
                     "system that refuses so large a reservation, with std::system_error naming mmap; it threw: "
                  << e.what();
  }
}

TEST(VmGranules, CreateHandsOutTheLowestFreeGranule) {
  PhysicalMemory memory(granule(), 3);
  for (std::size_t want = 0; want < 3; ++want) {
    const auto g = memory.create();
    ASSERT_TRUE(g.has_value()) << "create() on memory with a free granule must return one, not std::nullopt.";
    EXPECT_EQ(*g, want) << "create() hands out the lowest-numbered free granule: the used offsets of the file "
                           "stay dense.";
    EXPECT_EQ(memory.refcount(*g), 1u) << "A granule create() returns holds one reference, its creator's.";
  }
  EXPECT_FALSE(memory.create().has_value()) << "create() with every granule in use returns std::nullopt.";
  memory.release(1);
  EXPECT_EQ(memory.num_in_use(), 2u) << "The last release() of a granule makes it free.";
  EXPECT_EQ(memory.num_free(), 1u) << "num_free() counts the granules with no reference.";
  const auto again = memory.create();
  ASSERT_TRUE(again.has_value()) << "create() after a granule was released must hand it out again.";
  EXPECT_EQ(*again, 1u) << "create() hands out the lowest free granule, here the one just released.";
  EXPECT_EQ(memory.offset(2), static_cast<off_t>(2 * granule()))
      << "offset(g) is where granule g starts in the file: g * granule_bytes().";
}

TEST(VmGranules, RetainAndReleaseCountReferences) {
  PhysicalMemory memory(granule(), 2);
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
  memory.retain(*g);
  EXPECT_EQ(memory.refcount(*g), 2u) << "retain() adds one reference: a second mapping of the granule (a fork's alias).";
  memory.release(*g);
  EXPECT_EQ(memory.refcount(*g), 1u) << "release() drops one reference.";
  EXPECT_EQ(memory.num_in_use(), 1u) << "A granule with a reference left is still in use.";
  memory.release(*g);
  EXPECT_EQ(memory.refcount(*g), 0u) << "refcount() of a free granule is 0.";
  EXPECT_THROW(memory.release(*g), std::invalid_argument)
      << "release() of a free granule must throw std::invalid_argument: a count below zero would hand the "
         "granule out twice.";
  EXPECT_THROW(memory.retain(*g), std::invalid_argument)
      << "retain() of a free granule must throw std::invalid_argument: a reference to memory nobody created.";
  EXPECT_THROW(memory.retain(2), std::invalid_argument) << "retain() of a granule past the end must throw std::invalid_argument.";
  EXPECT_THROW(memory.release(2), std::invalid_argument) << "release() of a granule past the end must throw std::invalid_argument.";
  EXPECT_THROW((void)memory.refcount(2), std::invalid_argument)
      << "refcount() of a granule past the end must throw std::invalid_argument.";
  EXPECT_EQ(memory.num_in_use(), 0u) << "A call that throws changes nothing.";
}

TEST(VmGranules, AMappedGranuleIsMemoryAtItsSlot) {
  PhysicalMemory memory(granule(), 4);
  AddressRange range(memory, 4);
  ASSERT_NE(range.base(), nullptr) << "base() is the reservation's first byte: the constructor must reserve "
                                      "slots * granule bytes of address space.";
  EXPECT_EQ(range.slots(), 4u) << "slots() is the count the range was built with.";
  EXPECT_EQ(range.bytes(), 4 * granule()) << "bytes() is slots * granule_bytes.";
  EXPECT_EQ(range.address(3), range.base() + 3 * granule()) << "address(s) is base() + s * granule_bytes.";
  EXPECT_EQ(&range.memory(), &memory) << "memory() is the PhysicalMemory the range maps.";
  const auto a = memory.create(), b = memory.create();
  ASSERT_TRUE(a && b) << "create() on new memory must return a granule.";
  range.map(2, *b);
  range.map(0, *a);
  EXPECT_EQ(range.mapped(2), b) << "mapped(s) is the granule mapped at slot s.";
  EXPECT_FALSE(range.mapped(1).has_value()) << "mapped(s) of a slot never mapped is std::nullopt.";
  EXPECT_EQ(range.num_mapped(), 2u) << "num_mapped() counts the mapped slots.";
  EXPECT_EQ(range.map_calls(), 2u) << "map_calls() counts the maps made.";
  ASSERT_TRUE(range.mapped(2).has_value()) << "slot 2 must be mapped before the test writes into it.";
  fill(range.address(2), granule(), 7);
  EXPECT_TRUE(holds(range.address(2), granule(), 7)) << "A mapped slot is readable and writable, all granule_bytes of it.";
  // A second range maps the same granule: both addresses are one memory.
  AddressRange other(memory, 2);
  memory.retain(*b);
  other.map(1, *b);
  ASSERT_TRUE(other.mapped(1).has_value()) << "map() must map the granule at the slot.";
  EXPECT_TRUE(holds(other.address(1), granule(), 7))
      << "A granule mapped at two slots is one memory: a write through one address must be read through the "
         "other (MAP_SHARED of the file's offset), which is how a fork shares its parent's KV.";
  EXPECT_EQ(range.unmap(2), *b) << "unmap(s) returns the granule that slot s held.";
  EXPECT_FALSE(range.mapped(2).has_value()) << "After unmap(s), mapped(s) is std::nullopt.";
  EXPECT_EQ(range.unmap_calls(), 1u) << "unmap_calls() counts the unmaps made.";
  EXPECT_EQ(memory.refcount(*b), 2u) << "The range maps; it does not count references: unmap leaves the granule's "
                                        "references to whoever holds them.";
  memory.release(*b);
  memory.release(other.unmap(1));
  memory.release(range.unmap(0));
}

TEST(VmGranules, MapsOnlyInsideTheReservation) {
  PhysicalMemory memory(granule(), 8);
  AddressRange range(memory, 2);
  ASSERT_NE(range.base(), nullptr) << "base() must be the reservation's first byte.";
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(memory.create().has_value()) << "create() must hand out granules 0 to 5.";
  const std::uint64_t marker = 0x5eed;
  // Granule 5's bytes, written through the file, not through any mapping.
  const std::size_t n = granule();
  const auto bytes = std::make_unique<std::byte[]>(n);
  fill(bytes.get(), n, marker);
  ASSERT_EQ(::pwrite(memory.fd(), bytes.get(), n, memory.offset(5)), static_cast<ssize_t>(n))
      << "fd() must be the file that holds the granules, granule g at offset(g).";
  range.map(1, 5);
  ASSERT_TRUE(range.mapped(1).has_value()) << "map(1, 5) must map granule 5 at slot 1.";
  EXPECT_TRUE(holds(range.address(1), granule(), marker))
      << "Slot 1 must show granule 5's bytes: map(slot, g) maps the file at offset g * granule_bytes to "
         "address base() + slot * granule_bytes.";
  const auto lo = address(range.base()), hi = lo + range.bytes();
  for (const auto& span : alloclab::test::vm::mappings_of(memory.fd()))
    EXPECT_TRUE(span.begin >= lo && span.end <= hi)
        << "The file is mapped at [" << std::hex << span.begin << ", " << span.end << "), outside the reservation ["
        << lo << ", " << hi << std::dec
        << "): MAP_FIXED replaces whatever lies at its address without a word, so a slot's address must be "
           "computed inside the range (base() + slot * granule_bytes, not the granule's number).";
  memory.release(range.unmap(1));
}

TEST(VmGranules, CreatingCommitsNothingAndAReadCommitsAPage) {
  PhysicalMemory memory(granule(), 2);
  AddressRange range(memory, 2);
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
  range.map(0, *g);
  ASSERT_TRUE(range.mapped(0).has_value()) << "map(0, g) must map the granule.";
  EXPECT_EQ(memory.committed_bytes(), 0u)
      << "Creating and mapping a granule commits nothing: the system commits a page at its first access.";
  (void)read_byte(range.address(0) + page_bytes() + 1);
  EXPECT_EQ(memory.committed_bytes(), page_bytes())
      << "A read of a never-written page commits it (the file now holds a page of zeros): committed_bytes() "
         "must ask the system (fstat's st_blocks * 512), since a count kept by your code sees no read.";
  range.address(0)[3 * page_bytes()] = std::byte{1};
  EXPECT_EQ(memory.committed_bytes(), 2 * page_bytes()) << "A write to another page commits that page too.";
  memory.release(range.unmap(0));
}

TEST(VmGranules, ReleaseGivesTheMemoryBackToTheSystem) {
  PhysicalMemory memory(granule(), 2);
  AddressRange range(memory, 1);
  const auto first = memory.create(), g = memory.create();  // granule 1: its offset is not its number
  ASSERT_TRUE(first && g) << "create() on new memory must return a granule.";
  range.map(0, *g);
  ASSERT_TRUE(range.mapped(0).has_value()) << "map(0, g) must map the granule.";
  fill(range.address(0), granule(), 3);
  ASSERT_EQ(memory.committed_bytes(), granule()) << "Writing a whole granule commits all its pages.";
  memory.retain(*g);
  memory.release(*g);
  EXPECT_EQ(memory.committed_bytes(), granule()) << "A release that leaves a reference gives no memory back.";
  memory.release(range.unmap(0));
  EXPECT_EQ(memory.committed_bytes(), 0u)
      << "The last release() must give the granule's memory back to the system (punch a hole in the file): "
         "madvise(MADV_DONTNEED) drops only this process's view of a shared mapping, and the file keeps "
         "every page committed, so a server that releases its KV would never shrink.";
  const auto again = memory.create();
  ASSERT_TRUE(again.has_value()) << "create() after the release must hand the granule out again.";
  range.map(0, *again);
  ASSERT_TRUE(range.mapped(0).has_value()) << "map(0, g) must map the granule.";
  EXPECT_TRUE(zeros(range.address(0), granule()))
      << "A granule created again must read as zeros: its old bytes must be gone from the file, or one "
         "sequence's KV shows up in the next one's.";
  memory.release(range.unmap(0));
  memory.release(*first);
}

TEST(VmGranules, UnmapKeepsTheReservation) {
  PhysicalMemory memory(granule(), 2);
  std::byte* base = nullptr;
  {
    AddressRange range(memory, 4);
    base = range.base();
    ASSERT_NE(base, nullptr) << "base() must be the reservation's first byte.";
    EXPECT_TRUE(taken(base, range.bytes()))
        << "The constructor must reserve the whole range (a PROT_NONE mapping), so that no other mapping of "
           "the process can land inside it.";
    const auto g = memory.create();
    ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
    range.map(1, *g);
    ASSERT_TRUE(range.mapped(1).has_value()) << "map(1, g) must map the granule.";
    memory.release(range.unmap(1));
    EXPECT_TRUE(taken(range.address(1), granule()))
        << "After unmap(1), slot 1's addresses must still be reserved: map PROT_NONE anonymous memory over the "
           "slot again rather than munmap it, which gives the addresses back to the system, where the next "
           "mmap of anyone in the process can land and be overwritten by your next map (MAP_FIXED).";
    void* fresh = ::mmap(range.address(1), granule(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(fresh, MAP_FAILED);
    EXPECT_TRUE(address(fresh) < address(base) || address(fresh) >= address(base) + range.bytes())
        << "A new mapping asked for at slot 1's address landed there after unmap(1): the slot was given back "
           "to the system instead of kept reserved.";
    ::munmap(fresh, granule());
  }
  EXPECT_FALSE(taken(base, page_bytes()))
      << "The destructor must give the whole reservation back (munmap), or every range built leaks its "
         "address space.";
}

TEST(VmGranules, AnAccessToAnUnmappedSlotFaults) {
  ALLOCLAB_REQUIRE_ASAN();
  PhysicalMemory memory(granule(), 1);
  AddressRange range(memory, 2);
  ASSERT_NE(range.base(), nullptr) << "base() must be the reservation's first byte.";
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
  range.map(0, *g);
  ASSERT_TRUE(range.mapped(0).has_value()) << "map(0, g) must map the granule.";
  range.address(0)[0] = std::byte{9};
  memory.release(range.unmap(0));
  ASSERT_FALSE(range.mapped(0).has_value()) << "unmap(0) must unmap the slot.";
  alloclab::test::quick_death_tests();
  EXPECT_DEATH((void)read_byte(range.address(0)), "SEGV")
      << "An access to a slot after unmap must fault: the slot must be inaccessible (PROT_NONE), so that a "
         "stale pointer into freed KV crashes at once instead of reading another sequence's memory.";
  EXPECT_DEATH((void)read_byte(range.address(1)), "SEGV") << "An access to a slot never mapped must fault.";
}

TEST(VmGranules, MisuseThrowsAndChangesNothing) {
  PhysicalMemory memory(granule(), 2);
  AddressRange range(memory, 2);
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
  EXPECT_THROW(range.map(2, *g), std::out_of_range) << "map() of a slot outside the range must throw std::out_of_range.";
  EXPECT_THROW(range.map(0, 1), std::invalid_argument)
      << "map() of a granule nobody created must throw std::invalid_argument: its memory belongs to nobody.";
  EXPECT_THROW(range.map(0, 5), std::invalid_argument)
      << "map() of a granule past the memory's end must throw std::invalid_argument.";
  range.map(0, *g);
  memory.retain(*g);
  EXPECT_THROW(range.map(0, *g), std::invalid_argument)
      << "map() of a slot mapped already must throw std::invalid_argument: the granule it holds would be lost "
         "with its reference.";
  EXPECT_THROW(range.unmap(1), std::invalid_argument) << "unmap() of a slot not mapped must throw std::invalid_argument.";
  EXPECT_THROW(range.unmap(2), std::out_of_range) << "unmap() of a slot outside the range must throw std::out_of_range.";
  EXPECT_THROW((void)range.mapped(2), std::out_of_range) << "mapped() of a slot outside the range must throw std::out_of_range.";
  EXPECT_THROW((void)range.address(2), std::out_of_range)
      << "address() of a slot outside the range must throw std::out_of_range.";
  EXPECT_EQ(range.num_mapped(), 1u) << "A call that throws changes nothing: one slot is mapped.";
  EXPECT_EQ(range.map_calls(), 1u) << "A map that throws is not counted.";
  EXPECT_EQ(range.unmap_calls(), 0u) << "An unmap that throws is not counted.";
  EXPECT_EQ(range.mapped(0), g) << "A map that throws leaves the slot's granule as it was.";
  memory.release(*g);
  memory.release(range.unmap(0));
}

TEST(VmGranules, AMapTheSystemRefusesThrowsAndMapsNothing) {
  PhysicalMemory memory(granule(), 1);
  AddressRange range(memory, 1);
  const auto g = memory.create();
  ASSERT_TRUE(g.has_value()) << "create() on new memory must return a granule.";
  std::string threw = "nothing";
  {
    const alloclab::test::vm::WriteOnlyFile refusing(memory.fd());
    ASSERT_TRUE(refusing.swapped()) << "The test needs the file open write-only in place of the memory's descriptor.";
    try {
      range.map(0, *g);
    } catch (const std::system_error& e) {
      threw = e.what();
    } catch (const std::exception& e) {
      threw = std::string("an exception that is not std::system_error: ") + e.what();
    }
  }
  EXPECT_NE(threw.find("mmap"), std::string::npos)
      << "A map the system refuses (mmap returns MAP_FAILED) must throw std::system_error(errno, "
         "std::system_category(), \"mmap\"): a slot counted as mapped that is not faults at the first token "
         "written into it; it threw "
      << threw;
  EXPECT_FALSE(range.mapped(0).has_value()) << "A map that throws leaves the slot unmapped.";
  EXPECT_EQ(range.num_mapped(), 0u) << "A map that throws maps nothing.";
  EXPECT_EQ(range.map_calls(), 0u) << "A map that throws is not counted.";
  memory.release(*g);
}

TEST(VmGranules, AReservationTheSystemRefusesThrowsSystemError) {
  // 2^18 slots of 1 GiB: 2^48 bytes, twice what user space holds on x86-64; the file costs nothing
  // until a page is touched, and the range's own bookkeeping stays small.
  PhysicalMemory memory(std::size_t{1} << 30, 1);
  const std::size_t slots = std::size_t{1} << 18;
  try {
    AddressRange range(memory, slots);
    ADD_FAILURE() << "A reservation of 2^48 bytes cannot succeed on this machine (user space is 2^47 bytes), yet the "
                     "constructor returned: check what mmap returns (MAP_FAILED, not nullptr) before keeping the base.";
  } catch (const std::system_error& e) {
    EXPECT_NE(e.code().value(), 0) << "The std::system_error must carry the errno mmap set.";
    EXPECT_NE(std::string(e.what()).find("mmap"), std::string::npos)
        << "The std::system_error must name the call that failed, \"mmap\", as the contract's errors do; it says: "
        << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "A reservation the system refuses must throw std::system_error(errno, std::system_category(), "
                     "\"mmap\"), so the caller knows which call failed and why; it threw: "
                  << e.what();
  }
  EXPECT_EQ(memory.num_in_use(), 0u) << "A refused reservation takes no granule.";
}

TEST(VmGranules, DestroyingTheMemoryClosesItsFile) {
  int fd = -1;
  {
    PhysicalMemory memory(granule(), 1);
    fd = memory.fd();
    ASSERT_GE(fd, 0) << "fd() must be the memfd file's descriptor.";
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1)
      << "The destructor must close the file: its descriptor stays open otherwise, and with it every page "
         "still committed to the file.";
}

// The lowest descriptor the process has free: the one the next file opened gets.
int lowest_free_descriptor() {
  const int fd = ::dup(0);
  if (fd >= 0) ::close(fd);
  return fd;
}

TEST(VmGranules, AFileTheSystemRefusesThrowsSystemError) {
  // With the limit of descriptors at the lowest free one, the process can open no file at all.
  const int free_fd = lowest_free_descriptor();
  ASSERT_GE(free_fd, 0) << "The test needs a free descriptor to measure from.";
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  rlimit none = files;
  none.rlim_cur = static_cast<rlim_t>(free_fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  std::string threw = "nothing";
  int code = 0;
  try {
    PhysicalMemory memory(granule(), 1);
  } catch (const std::system_error& e) {
    threw = e.what();
    code = e.code().value();
  } catch (const std::exception& e) {
    threw = std::string("an exception that is not std::system_error: ") + e.what();
  }
  ::setrlimit(RLIMIT_NOFILE, &files);
  EXPECT_EQ(code, EMFILE) << "With no descriptor free, memfd_create fails (EMFILE) and the constructor must throw "
                             "std::system_error carrying that errno; it threw "
                          << threw;
  EXPECT_NE(threw.find("memfd_create"), std::string::npos)
      << "A memfd_create that fails must be reported as its own failure, std::system_error(errno, "
         "std::system_category(), \"memfd_create\"), before its -1 reaches ftruncate and the error names the "
         "wrong call; it threw "
      << threw;
}

TEST(VmGranules, AFileTooLargeForTheSystemThrowsAndClosesIt) {
  // A limit on the size of files makes ftruncate refuse the file's size (EFBIG); the signal the
  // system sends with it is ignored, as a server that checks its calls would.
  rlimit size{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &size), 0);
  rlimit small = size;
  small.rlim_cur = static_cast<rlim_t>(granule());
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  const int free_fd = lowest_free_descriptor();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string threw = "nothing";
  int code = 0;
  try {
    PhysicalMemory memory(granule(), 2);
  } catch (const std::system_error& e) {
    threw = e.what();
    code = e.code().value();
  } catch (const std::exception& e) {
    threw = std::string("an exception that is not std::system_error: ") + e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &size);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(code, EFBIG) << "A file the system refuses to size (ftruncate fails) must throw std::system_error "
                            "carrying ftruncate's errno, not hand out granules past the end of the file, whose "
                            "first access kills the process with SIGBUS; it threw "
                         << threw;
  EXPECT_NE(threw.find("ftruncate"), std::string::npos)
      << "The std::system_error must name the call that failed, \"ftruncate\"; it threw " << threw;
  EXPECT_EQ(lowest_free_descriptor(), free_fd)
      << "A constructor that throws after memfd_create must close the file first: no destructor runs for an object "
         "never built, so every failed construction would leak a descriptor.";
}

TEST(VmGranules, DescriptorZeroIsAFileLikeAnyOther) {
  // With standard input closed, descriptor 0 is the lowest free one, and the next file gets it
  // (a process started without standard input has it free already: dup fails, nothing to put back).
  const int input = ::dup(0);
  if (input >= 0) ::close(0);
  std::string threw;
  int fd = -1;
  try {
    PhysicalMemory memory(granule(), 1);
    fd = memory.fd();
  } catch (const std::exception& e) {
    threw = e.what();
  }
  if (input >= 0) {
    ::dup2(input, 0);
    ::close(input);
  }
  EXPECT_EQ(threw, "") << "memfd_create fails only when it returns -1: descriptor 0 is a file like any other, and a "
                          "process without standard input (a daemon) gets it for its first file.";
  EXPECT_EQ(fd, 0) << "With descriptor 0 free, the memory's file is descriptor 0.";
}

TEST(VmGranules, MemoryAndRangeCannotBeCopied) {
  const alloclab::test::Copyability memory = alloclab::test::vm::traits_of_the_memory();
  EXPECT_FALSE(memory.copy_constructible)
      << "PhysicalMemory must not be copy-constructible (the contract deletes its copy constructor): two copies "
         "would hand out the same granules twice and both close the one file.";
  EXPECT_FALSE(memory.copy_assignable) << "PhysicalMemory must not be copy-assignable either, for the same reason.";
  const alloclab::test::Copyability range = alloclab::test::vm::traits_of_the_range();
  EXPECT_FALSE(range.copy_constructible)
      << "AddressRange must not be copy-constructible (the contract deletes its copy constructor): two copies "
         "would unmap the one reservation twice, the second time over whatever the system put there since.";
  EXPECT_FALSE(range.copy_assignable) << "AddressRange must not be copy-assignable either, for the same reason.";
}

}  // namespace stage1_granules
