// Stage 6 — pages mapped ahead: a thread keeps between `low` and `high` pages mapped, committed
// and ready, so that acquire on the hot path is a pop from a list, as kvcached's reserve pool
// does. Run under ThreadSanitizer. No test waits for a time to pass: each waits for settle(), or
// for a hook it controls, and the one bounded wait (5 s) is a deadlock detector.
//
// Physical memory is not shared between threads: a test reads it only once the reserve has
// settled (the thread idle) or is destroyed.
#include "vm_under_test.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "alloclab_test.hpp"
#include "fork_test_support.hpp"

namespace stage6_page_reserve {

using alloclab::test::vm::PageReserve;
using alloclab::test::vm::PhysicalMemory;
using alloclab::test::vm::fill;
using alloclab::test::vm::first_changed;
using alloclab::test::vm::page_bytes;

// The pages `acquire` hands out, `count` of them, each expected.
std::vector<std::size_t> acquire(PageReserve& r, std::size_t count) {
  std::vector<std::size_t> pages;
  for (std::size_t k = 0; k < count; ++k) {
    const auto p = r.acquire();
    EXPECT_TRUE(p.has_value()) << "acquire must succeed while a page is unused and memory has a granule.";
    if (p) pages.push_back(*p);
  }
  return pages;
}

TEST(VmPageReserve, TheThreadMapsAheadUpToHigh) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  EXPECT_EQ(r.ready(), 4u) << "Started with nothing mapped, the thread maps pages until `high` (4) are ready.";
  EXPECT_EQ(r.in_use(), 0u);
  EXPECT_EQ(r.slow_maps(), 0u) << "Nobody called acquire: nothing was mapped on the hot path.";
  EXPECT_EQ(memory.num_in_use(), 4u) << "Each ready page holds a granule of its own.";
  EXPECT_EQ(memory.committed_bytes(), 4 * page_bytes())
      << "A ready page is touched ahead, so that its memory is committed: otherwise the first write on the hot "
      << "path pays the page faults, which cost more than the map itself.";
}

TEST(VmPageReserve, TheThreadRefillsOnceFewerThanLowAreReady) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  const auto held = acquire(r, 2);
  r.settle();
  EXPECT_EQ(r.slow_maps(), 0u) << "Four pages were ready, yet acquire mapped pages itself instead of taking them.";
  EXPECT_EQ(r.ready(), 2u)
      << "Two pages ready is not fewer than `low` (2): the thread waits. Refilling after every acquire makes the "
      << "thread map (and compete for the cores and the address space's lock) on every step.";
  EXPECT_EQ(memory.num_in_use(), 4u);
  const auto third = acquire(r, 1);
  r.settle();
  EXPECT_EQ(r.ready(), 4u) << "One page ready is fewer than `low`: the thread refills up to `high`, 4.";
  EXPECT_EQ(r.in_use(), 3u);
  EXPECT_EQ(r.slow_maps(), 0u) << "Every acquire found a page ready.";
  EXPECT_EQ(memory.num_in_use(), 7u);
}

TEST(VmPageReserve, TheThreadUnmapsDownToHighAfterGiveBacks) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  const auto held = acquire(r, 3);
  r.settle();
  ASSERT_EQ(r.ready(), 4u) << "The thread refills to `high` once fewer than `low` are ready.";
  for (const std::size_t p : held) r.give_back(p);
  r.settle();
  EXPECT_EQ(r.ready(), 4u)
      << "Seven pages were ready after three give-backs: the thread unmaps down to `high` (4), so that memory a "
      << "burst took goes back to the system instead of staying mapped for good.";
  EXPECT_EQ(r.in_use(), 0u);
  EXPECT_EQ(memory.num_in_use(), 4u) << "Pages unmapped give their granules back.";
  EXPECT_EQ(memory.committed_bytes(), 4 * page_bytes()) << "Granules given back return their memory.";
}

TEST(VmPageReserve, AcquireTakesAReadyPageWithoutMapping) {
  PhysicalMemory memory(page_bytes(), 16);
  std::mutex m;
  std::vector<std::thread::id> mappers;
  PageReserve r(memory, 8, 1, 4, [&](std::size_t) {
    std::lock_guard lock(m);
    mappers.push_back(std::this_thread::get_id());
  });
  r.settle();
  const auto page = r.acquire();
  ASSERT_TRUE(page.has_value()) << "Four pages are ready: acquire must return one.";
  r.settle();
  EXPECT_EQ(r.slow_maps(), 0u) << "A page was ready, yet acquire mapped one itself.";
  std::lock_guard lock(m);
  for (const auto id : mappers)
    EXPECT_NE(id, std::this_thread::get_id())
        << "before_map ran on the thread that called acquire while pages were ready: acquire maps instead of "
        << "popping a ready page, and the step on the hot path waits for mmap and the page faults, the very "
        << "cost the reserve exists to hide.";
  EXPECT_EQ(mappers.size(), 4u) << "The thread mapped the four pages ahead, and nothing more (3 ready >= low).";
}

TEST(VmPageReserve, PagesAreDistinctAndWritable) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  const auto pages = acquire(r, 8);
  ASSERT_EQ(pages.size(), 8u);
  EXPECT_EQ(std::set<std::size_t>(pages.begin(), pages.end()).size(), 8u)
      << "acquire handed one page to two callers: two sequences would write their KV over each other's.";
  EXPECT_EQ(r.acquire(), std::nullopt) << "Every page is in use: acquire returns std::nullopt.";
  for (const std::size_t p : pages) fill(r.address(p), r.page_bytes(), 500 + p);
  for (const std::size_t p : pages)
    EXPECT_EQ(first_changed(r.address(p), r.page_bytes(), 500 + p), r.page_bytes())
        << "Page " << p << " does not read back what was written into it: two pages share memory.";
  EXPECT_EQ(r.in_use(), 8u);
  for (const std::size_t p : pages) r.give_back(p);
  EXPECT_EQ(r.in_use(), 0u);
}

TEST(VmPageReserve, AcquireMapsItselfWhenNoneIsReady) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 4, 0, 1);  // low 0: the thread maps one page at the start and never refills
  r.settle();
  const auto first = r.acquire();
  ASSERT_TRUE(first.has_value()) << "One page is ready: acquire must return it.";
  EXPECT_EQ(r.slow_maps(), 0u);
  const auto second = r.acquire();
  ASSERT_TRUE(second.has_value())
      << "No page is ready, but three are unused and memory has granules: acquire maps one itself (the slow path) "
      << "rather than fail a step the engine could have served.";
  EXPECT_NE(*second, *first) << "The slow path maps an unused page, not one in use.";
  EXPECT_EQ(r.slow_maps(), 1u) << "slow_maps counts the pages acquire mapped itself.";
  fill(r.address(*second), r.page_bytes(), 9);
  EXPECT_EQ(first_changed(r.address(*second), r.page_bytes(), 9), r.page_bytes())
      << "The slow path's page is writable.";
  r.settle();
  EXPECT_EQ(r.in_use(), 2u);
}

TEST(VmPageReserve, AcquireFailsWhenMemoryIsExhausted) {
  PhysicalMemory memory(page_bytes(), 3);
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  EXPECT_EQ(r.ready(), 3u) << "Memory holds three granules: the thread maps three pages and stops (settle returns).";
  const auto pages = acquire(r, 3);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(r.acquire(), std::nullopt)
      << "No page is ready and memory has no granule: acquire returns std::nullopt, and the engine preempts.";
  EXPECT_EQ(r.in_use(), 3u) << "A failed acquire changes nothing.";
  EXPECT_EQ(r.slow_maps(), 0u) << "A failed map is not a page mapped.";
  r.settle();
  r.give_back(pages[0]);
  r.settle();  // a page given back lets the thread try to map again, and settle waits for that try
  EXPECT_EQ(r.ready(), 1u) << "The page given back is ready; memory still has no granule for another.";
  const auto again = r.acquire();
  EXPECT_TRUE(again.has_value()) << "A page given back is ready again.";
  r.settle();
  EXPECT_EQ(memory.num_in_use(), 3u);
}

TEST(VmPageReserve, AGiveBackLetsTheThreadTryAgainAfterMemoryRanOut) {
  PhysicalMemory memory(page_bytes(), 4);
  const auto a = memory.create(), b = memory.create();  // someone else's: 2 granules left
  ASSERT_TRUE(a && b) << "create() on new memory must return a granule.";
  // Three pages: the one the thread failed to map is the only one left to map afterwards.
  PageReserve r(memory, 3, 2, 3);
  r.settle();
  ASSERT_EQ(r.ready(), 2u) << "With 2 granules free the thread maps 2 pages of the 3 it aims for, then stops.";
  memory.release(*a);
  memory.release(*b);
  const auto page = r.acquire();
  ASSERT_TRUE(page.has_value()) << "acquire with pages ready must return one.";
  r.give_back(*page);
  r.settle();
  EXPECT_EQ(r.ready(), 3u)
      << "Memory ran out, then granules came free and a page was given back: the give-back must clear the "
         "exhaustion, so that the thread tries again and maps up to high (3), and the page whose map failed must "
         "be unmapped again, free to be tried; left exhausted, or with that page marked busy, the reserve stays "
         "short of pages for good.";
}

TEST(VmPageReserve, APageMappedAheadIsCommittedWholeAndReadsZeros) {
  // Four system pages to a reserve page: touching only the first, or past the end, shows.
  const std::size_t granule = 4 * page_bytes();
  PhysicalMemory memory(granule, 8);
  PageReserve r(memory, 4, 1, 2);
  r.settle();
  ASSERT_EQ(r.ready(), 2u) << "The thread maps ahead up to high (2).";
  EXPECT_EQ(memory.committed_bytes(), 2 * granule)
      << "Every system page of a page mapped ahead must be committed (touched once), or the first write on the hot "
         "path takes the fault that mapping ahead exists to take off it.";
  const auto page = r.acquire();
  ASSERT_TRUE(page.has_value()) << "acquire with pages ready must return one.";
  EXPECT_TRUE(alloclab::test::vm::zeros(r.address(*page), granule))
      << "A page never used before must read as zeros: touching its system pages commits them and must leave "
         "the zeros a new granule holds, not bytes of its own.";
  r.give_back(*page);
}

TEST(VmPageReserve, TheThreadMapsOutsideTheLock) {
  PhysicalMemory memory(page_bytes(), 16);
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false, done = false, timed_out = false;
    std::size_t maps = 0;
  } gate;
  // While the thread is about to map its second page (the first is ready by then), the hook
  // waits for this test to acquire and give back a page. A thread that maps holding the lock
  // acquire needs makes that wait a deadlock, which the bound breaks. Which pages the thread maps
  // first the contract leaves free: the hook counts maps, not page numbers.
  PageReserve r(memory, 8, 1, 4, [&gate](std::size_t) {
    std::unique_lock lock(gate.m);
    if (++gate.maps != 2 || gate.entered) return;
    gate.entered = true;
    gate.cv.notify_all();
    gate.timed_out = !gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.done; });
  });
  {
    std::unique_lock lock(gate.m);
    ASSERT_TRUE(gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.entered; }))
        << "Within 5 s the thread never came to map a second page: it maps pages up to `high` (4).";
  }
  const auto page = r.acquire();
  ASSERT_TRUE(page.has_value()) << "The first page mapped is ready: acquire must return it.";
  r.give_back(*page);
  bool timed_out = false;
  {
    std::lock_guard lock(gate.m);
    gate.done = true;
    timed_out = gate.timed_out;
  }
  gate.cv.notify_all();
  r.settle();
  {
    std::lock_guard lock(gate.m);
    timed_out = timed_out || gate.timed_out;
  }
  EXPECT_FALSE(timed_out)
      << "acquire and give_back could not finish in 5 s while the thread was about to map its second page: the thread "
      << "maps while holding the lock the hot path needs (before_map runs right before the map, with no lock "
      << "held). A map and its page faults take microseconds to milliseconds; every step of the engine would wait "
      << "for them, which is what mapping ahead exists to avoid.";
}

TEST(VmPageReserve, AReadyPageIsTakenWhileTheLastIsBeingMapped) {
  PhysicalMemory memory(page_bytes(), 4);
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false, done = false, timed_out = false;
    std::optional<std::size_t> first;
  } gate;
  // Two pages: while the thread is about to map the second, the first is ready and no page is
  // unmapped. The hook holds the second busy until this test has acquired a page, or 5 s have
  // passed. Which of the two the thread maps first the contract leaves free: the hook notes it.
  PageReserve r(memory, 2, 1, 2, [&gate](std::size_t page) {
    std::unique_lock lock(gate.m);
    if (!gate.first) gate.first = page;
    if (page == *gate.first || gate.entered) return;
    gate.entered = true;
    gate.cv.notify_all();
    gate.timed_out = !gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.done; });
  });
  {
    std::unique_lock lock(gate.m);
    ASSERT_TRUE(gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.entered; }))
        << "Within 5 s the thread never came to map its second page: it maps pages up to `high` (2).";
  }
  const auto page = r.acquire();
  bool timed_out = false;
  std::size_t ready_page = 0;
  {
    std::lock_guard lock(gate.m);
    gate.done = true;
    timed_out = gate.timed_out;
    ready_page = *gate.first;
  }
  gate.cv.notify_all();
  ASSERT_TRUE(page.has_value()) << "Page " << ready_page << " is ready: acquire must return it.";
  EXPECT_EQ(*page, ready_page) << "The ready page is page " << ready_page << ", the first the thread mapped.";
  EXPECT_FALSE(timed_out)
      << "acquire waited for the page the thread was about to map, although another was ready: a caller waits "
         "for a busy page only when no page is ready and none is unmapped, since a ready page is there to be "
         "taken at once, without waiting for the slowest map of all.";
  r.give_back(*page);
  r.settle();
}

TEST(VmPageReserve, ASlowAcquireRefillsOnlyBelowLow) {
  {
    PhysicalMemory memory(page_bytes(), 8);
    PageReserve r(memory, 8, 0, 2);
    r.settle();
    const auto taken = acquire(r, 3);  // 2 ready, then one the caller maps itself
    r.settle();
    EXPECT_EQ(r.ready(), 0u)
        << "With low 0 the thread never refills: no count of ready pages is below 0. An acquire that maps its own "
           "page must not set the thread refilling, or a reserve asked to map nothing more maps up to high again.";
    for (const std::size_t page : taken) r.give_back(page);
  }
  PhysicalMemory memory(page_bytes(), 8);
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool entered = false, done = false;
    std::size_t maps = 0;
  } gate;
  // The thread's first refill (its third map, after the two it maps at start) waits until this
  // test has acquired a page on the slow path.
  PageReserve r(memory, 8, 1, 2, [&gate](std::size_t) {
    std::unique_lock lock(gate.m);
    if (++gate.maps != 3 || gate.entered) return;
    gate.entered = true;
    gate.cv.notify_all();
    gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.done; });
  });
  r.settle();
  auto taken = acquire(r, 2);  // the ready list is empty now, below low: the thread refills
  {
    std::unique_lock lock(gate.m);
    ASSERT_TRUE(gate.cv.wait_for(lock, std::chrono::seconds(5), [&gate] { return gate.entered; }))
        << "Within 5 s of the ready list falling below low (1), the thread never came to map a third page.";
  }
  const auto slow = r.acquire();
  {
    std::lock_guard lock(gate.m);
    gate.done = true;
  }
  gate.cv.notify_all();
  ASSERT_TRUE(slow.has_value()) << "acquire with pages unmapped and memory free must map one itself.";
  taken.push_back(*slow);
  r.settle();
  EXPECT_EQ(r.ready(), 2u)
      << "An acquire that mapped its own page while the thread was refilling (fewer than low ready) must leave "
         "the refill on: the thread refills up to high (2), not stop after the page it was mapping.";
  for (const std::size_t page : taken) r.give_back(page);
}

TEST(VmPageReserve, TwoThreadsAcquireAndGiveBackWhileTheReserveRefills) {
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 1, 3);
  std::array<std::atomic<int>, 8> owner{};
  for (auto& o : owner) o.store(-1);
  std::array<std::string, 2> failure;
  auto work = [&](int me) {
    for (int step = 0; step < 200 && failure[static_cast<std::size_t>(me)].empty(); ++step) {
      std::array<std::optional<std::size_t>, 2> held{r.acquire(), r.acquire()};
      for (const auto& p : held) {
        if (!p) {
          failure[static_cast<std::size_t>(me)] = "acquire returned std::nullopt with at most 4 of 8 pages in use";
          continue;
        }
        if (*p >= owner.size() || owner[*p].exchange(me) != -1) {
          failure[static_cast<std::size_t>(me)] = "page " + std::to_string(*p) + " was handed to both threads at once";
          continue;
        }
        fill(r.address(*p), r.page_bytes(), static_cast<std::uint64_t>(me * 1000 + step));
      }
      for (const auto& p : held) {
        if (!p || *p >= owner.size() || owner[*p].load() != me) continue;
        if (first_changed(r.address(*p), r.page_bytes(), static_cast<std::uint64_t>(me * 1000 + step)) != r.page_bytes())
          failure[static_cast<std::size_t>(me)] = "page " + std::to_string(*p) + " changed while this thread held it";
        owner[*p].store(-1);
        r.give_back(*p);
      }
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  for (const auto& f : failure)
    EXPECT_EQ(f, "")
        << "Two threads acquiring and giving back pages while the reserve maps and unmaps: each page must belong to "
        << "one caller at a time, or two sequences' KV overlap.";
  r.settle();
  EXPECT_EQ(r.in_use(), 0u) << "Every page was given back.";
  EXPECT_GE(r.ready(), 1u) << "Settled, the reserve keeps at least `low` pages ready.";
  EXPECT_LE(r.ready(), 3u) << "Settled, the reserve keeps at most `high` pages ready.";
  EXPECT_EQ(memory.num_in_use(), r.ready()) << "Only the ready pages hold granules: the others were given back.";
}

TEST(VmPageReserve, ObserversAnswerWhileOthersWork) {
  // ThreadSanitizer reports an observer that reads the counts without the lock while another
  // caller acquires (a ready page, then one it maps itself) and gives back, and the thread unmaps
  // what is above high. Each observer is polled alone, so no locked call orders the reads.
  PhysicalMemory memory(page_bytes(), 16);
  PageReserve r(memory, 8, 0, 1);
  r.settle();
  const auto watch = [&r](auto observe) {
    std::atomic<bool> watching{false}, done{false};
    std::thread caller([&] {
      while (!watching) std::this_thread::yield();
      for (int i = 0; i < 100; ++i) {
        const auto first = r.acquire(), second = r.acquire();
        if (first) r.give_back(*first);
        if (second) r.give_back(*second);
      }
      done = true;
    });
    std::size_t most = observe();
    watching = true;
    while (!done) most = std::max(most, observe());
    caller.join();
    r.settle();
    return most;
  };
  EXPECT_LE(watch([&r] { return r.ready(); }), 8u) << "No more pages are ready than the reserve has.";
  EXPECT_LE(watch([&r] { return r.in_use(); }), 2u) << "One caller holding two pages has at most two in use.";
  EXPECT_LE(watch([&r] { return r.slow_maps(); }), 600u) << "Three rounds of 100 pairs of acquires map at most 600 pages themselves.";
  EXPECT_GE(r.slow_maps(), 1u) << "A caller that takes two pages while one is ready maps the second itself.";
  EXPECT_EQ(r.in_use(), 0u) << "Every page acquired was given back.";
}

TEST(VmPageReserve, TheDestructorJoinsTheThreadAndGivesBackEveryPage) {
  PhysicalMemory memory(page_bytes(), 16);
  {
    PageReserve r(memory, 8, 2, 4);
    r.settle();
    const auto pages = acquire(r, 3);
    ASSERT_EQ(pages.size(), 3u);
    r.give_back(pages[0]);  // the other two are still in use when the reserve goes
  }
  EXPECT_EQ(memory.num_in_use(), 0u)
      << "The destructor gives back every granule, the pages still in use included: the memory outlives the "
      << "reserve, and a granule kept by no one is lost for the engine's whole run.";
  EXPECT_EQ(memory.committed_bytes(), 0u);
  {
    std::mutex m;
    std::condition_variable cv;
    bool mapping = false;
    PageReserve r(memory, 8, 2, 8, [&](std::size_t) {
      std::lock_guard lock(m);
      mapping = true;
      cv.notify_all();
    });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return mapping; });
  }  // destroyed while the thread maps
  EXPECT_EQ(memory.num_in_use(), 0u)
      << "A reserve destroyed while its thread maps must join it, then give back every page it mapped.";
}

TEST(VmPageReserve, MarksAndPagesAreChecked) {
  PhysicalMemory memory(page_bytes(), 16);
  EXPECT_THROW(PageReserve(memory, 8, 5, 4), std::invalid_argument) << "low above high is the caller's mistake.";
  EXPECT_THROW(PageReserve(memory, 8, 0, 0), std::invalid_argument) << "high 0 maps nothing ahead: a mistake.";
  EXPECT_THROW(PageReserve(memory, 8, 2, 9), std::invalid_argument) << "high above the pages cannot be reached.";
  {
    PageReserve equal_marks(memory, 4, 2, 2);
    equal_marks.settle();
    EXPECT_EQ(equal_marks.ready(), 2u) << "low == high is a valid pair of marks: the thread keeps exactly high ready.";
  }
  {
    PageReserve every_page(memory, 4, 1, 4);
    every_page.settle();
    EXPECT_EQ(every_page.ready(), 4u) << "high == pages is a valid mark: the thread maps every page ahead.";
  }
  PageReserve r(memory, 8, 2, 4);
  r.settle();
  EXPECT_THROW(r.give_back(0), std::invalid_argument) << "Giving back a page not in use is the caller's mistake.";
  EXPECT_THROW(r.give_back(8), std::invalid_argument) << "Page 8 of 8 does not exist.";
  EXPECT_EQ(r.ready(), 4u) << "A give_back that throws changes nothing.";
  const auto page = r.acquire();
  ASSERT_TRUE(page.has_value()) << "acquire with pages ready must return one.";
  r.give_back(*page);
  EXPECT_THROW(r.give_back(*page), std::invalid_argument)
      << "A page given back twice must throw std::invalid_argument the second time: a page given back is ready, "
         "no longer in use, and listing it twice hands it to two callers.";
  r.settle();
  EXPECT_EQ(r.ready(), 4u) << "The page given back once is ready again; the second give_back changed nothing.";
}

}  // namespace stage6_page_reserve
