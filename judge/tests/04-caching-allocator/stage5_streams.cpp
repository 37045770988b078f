// Stage 5 — streams: a segment serves only its own stream; a block used on other streams
// (record_stream) waits at its free for one event per such stream, and stays pending — not
// allocated, still reserved, in no pool, never merged — until every event is done; allocate
// frees the pending blocks that are ready, and empty_cache (with the retry after a refusal)
// synchronizes first and frees them all.
//
// The TestDevice runs no stream by itself: an event stays incomplete until the test calls
// device.complete(stream) (that stream has run everything queued on it so far) or until
// someone calls device.synchronize().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "caching_test_support.hpp"
#include "failing_new.hpp"
#include "test_device.hpp"

namespace stage5_streams {

using alloclab::test::caching::BlockInfo;
using alloclab::test::caching::OutOfMemoryError;
using alloclab::test::address;
using alloclab::test::Allocator;
using alloclab::test::block_at;
using alloclab::test::call_with_failing_new;
using alloclab::test::failing_new_works;
using alloclab::test::for_each_failing_allocation;
using alloclab::test::InstantDevice;
using alloclab::test::KiB;
using alloclab::test::MiB;
using alloclab::test::news_in_use;
using alloclab::test::show;
using alloclab::test::TestDevice;

// The blocks of the only segment, as (size, state) pairs: 'a' allocated, 'p' pending, 'f' free.
using Layout = std::vector<std::pair<std::size_t, char>>;
Layout layout_of(const Allocator& alloc) {
  Layout out;
  const auto segments = alloc.snapshot();
  if (segments.size() == 1)
    for (const BlockInfo& b : segments[0].blocks) out.emplace_back(b.size, b.allocated ? 'a' : b.pending ? 'p' : 'f');
  return out;
}

// The sum of the sizes of the blocks the snapshot shows pending.
std::size_t pending_in(const std::vector<alloclab::test::caching::SegmentInfo>& segments) {
  std::size_t n = 0;
  for (const auto& seg : segments)
    for (const auto& b : seg.blocks) n += b.pending ? b.size : 0;
  return n;
}

TEST(CachingStreams, ASegmentServesOnlyItsOwnStream) {
  TestDevice device(128 * MiB);
  Allocator alloc(device);
  void* side = alloc.allocate(4 * KiB, 1);
  ASSERT_NE(side, nullptr) << "allocate(4 KiB, stream 1) returned nullptr.";
  alloc.deallocate(side);  // a free 2 MiB segment of stream 1
  void* main = alloc.allocate(4 * KiB, 0);
  ASSERT_NE(main, nullptr) << "allocate(4 KiB, stream 0) returned nullptr.";
  EXPECT_NE(main, side)
      << "A free block of stream 1's segment must not serve a request of stream 0: work queued on stream 1 "
         "may still use that memory, and nothing orders stream 0's next kernel after it. On a GPU that is a "
         "silent corruption.";
  EXPECT_EQ(device.mallocs(), 2u) << "The request of stream 0 needs a segment of its own.";
  void* again = alloc.allocate(4 * KiB, 1);
  EXPECT_EQ(again, side) << "Stream 1's free block serves stream 1's next request: its work runs in order.";
  alloc.deallocate(main);
  void* low = alloc.allocate(8 * KiB, 2);
  ASSERT_NE(low, nullptr) << "allocate(8 KiB, stream 2) returned nullptr.";
  EXPECT_EQ(device.mallocs(), 3u)
      << "Stream 0's segment is wholly free, but a request of stream 2 still needs a segment of its own: a "
         "lookup must never take the first block of the next stream in the pool's order.";
  void* large1 = alloc.allocate(3 * MiB, 1);
  ASSERT_NE(large1, nullptr) << "allocate(3 MiB, stream 1) returned nullptr.";
  alloc.deallocate(large1);
  void* large0 = alloc.allocate(3 * MiB, 0);
  ASSERT_NE(large0, nullptr) << "allocate(3 MiB, stream 0) returned nullptr.";
  EXPECT_EQ(device.mallocs(), 5u) << "The large pool keys its blocks by stream too: stream 0 gets its own "
                                     "20 MiB segment beside stream 1's free one.";
  EXPECT_EQ(alloclab::test::broken_invariant(alloc.snapshot(), alloc.stats(), device), "");
}

TEST(CachingStreams, BestFitWithinTheStream) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  // Stream 0: a segment with a free 16 KiB hole, then a free 4 KiB hole.
  void* a = alloc.allocate(16 * KiB, 0);
  void* b = alloc.allocate(4 * KiB, 0);
  void* c = alloc.allocate(4 * KiB, 0);
  void* d = alloc.allocate(4 * KiB, 0);
  void* e = alloc.allocate(4 * KiB, 0);
  // Stream 1: a segment with a free 4 KiB hole at its start.
  void* x = alloc.allocate(4 * KiB, 1);
  void* y = alloc.allocate(4 * KiB, 1);
  ASSERT_TRUE(a && b && c && d && e && x && y) << "Seven small requests on a roomy device must succeed.";
  alloc.deallocate(a);
  alloc.deallocate(d);
  alloc.deallocate(x);
  void* got = alloc.allocate(4 * KiB, 0);
  EXPECT_EQ(got, d) << "Within its stream a request takes the smallest free block that fits: stream 0's 4 KiB "
                       "hole, not its 16 KiB one, and never stream 1's 4 KiB block:" << show(alloc.snapshot());
  void* big = alloc.allocate(12 * KiB, 0);
  EXPECT_EQ(big, a) << "The next stream 0 request of 12 KiB takes the 16 KiB hole, the best fit left in stream 0.";
  void* side = alloc.allocate(2 * KiB, 1);
  EXPECT_EQ(side, x) << "Stream 1's best fit for 2 KiB is its own 4 KiB hole.";
  EXPECT_EQ(device.mallocs(), 2u) << "Every request after the first of each stream was a cache hit.";
  (void)b, (void)c, (void)e, (void)y;
}

TEST(CachingStreams, ABlockInfoOfThreeFieldsIsNotPending) {
  EXPECT_FALSE(alloclab::test::caching::pending_of_a_block_info_of_three_fields())
      << "BlockInfo's pending defaults to false: code written before streams, which builds a BlockInfo "
         "from offset, size and allocated only, must describe a block that waits for nothing.";
}

TEST(CachingStreams, AllocateWithoutAStreamIsStreamZero) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB);
  ASSERT_NE(a, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.deallocate(a);
  void* b = alloc.allocate(4 * KiB, 0);
  EXPECT_EQ(b, a) << "allocate(n) is allocate(n, 0): its free block serves stream 0's next request.";
  EXPECT_EQ(device.mallocs(), 1u) << "One segment serves both requests.";
  ASSERT_NE(b, nullptr) << "allocate(4 KiB, 0) returned nullptr.";
  alloc.record_stream(b, 0);
  alloc.deallocate(b);
  EXPECT_EQ(device.events_recorded(), 0u)
      << "A block of allocate(n) belongs to stream 0, so record_stream(p, 0) records its own stream: no event.";
  EXPECT_EQ(alloc.pending_bytes(), 0u) << "Nothing is pending: " << show(alloc.snapshot());
}

TEST(CachingStreams, RecordingTheOwnStreamIsANoOp) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 2);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB, stream 2) returned nullptr.";
  alloc.record_stream(p, 2);
  alloc.record_stream(p, 2);
  alloc.deallocate(p);
  EXPECT_EQ(device.events_recorded(), 0u)
      << "Recording the block's own stream changes nothing: that stream's work runs in order, so freeing on "
         "it needs no event. An event there only delays the reuse.";
  EXPECT_EQ(alloc.pending_bytes(), 0u) << "The block is free at once, not pending.";
  EXPECT_EQ(layout_of(alloc), (Layout{{2 * MiB, 'f'}}))
      << "The freed block merged back into its segment:" << show(alloc.snapshot());
  EXPECT_EQ(alloc.allocate(4 * KiB, 2), p) << "And stream 2's next request reuses it.";
}

TEST(CachingStreams, OneEventPerOtherStreamHoweverOftenRecorded) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(8 * KiB, 0);
  ASSERT_NE(p, nullptr) << "allocate(8 KiB) returned nullptr.";
  for (int s : {1, 1, 2, 1, 0, 2}) alloc.record_stream(p, s);
  EXPECT_EQ(device.events_recorded(), 0u)
      << "record_stream records no event: the event must be recorded at the free, so that it covers all the "
         "work queued on the stream until then, not only the work queued before record_stream.";
  alloc.deallocate(p);
  EXPECT_EQ(device.events_recorded(), 2u)
      << "The free records exactly one event per other stream (1 and 2), however often each was recorded: one "
         "event already covers all the stream's work, and more only cost queries.";
  EXPECT_EQ(device.events_recorded_on(1), 1u) << "One event on stream 1.";
  EXPECT_EQ(device.events_recorded_on(2), 1u) << "One event on stream 2.";
  EXPECT_EQ(device.events_recorded_on(0), 0u) << "None on stream 0, the block's own.";
}

TEST(CachingStreams, APendingBlockIsNotAllocatedButStaysReserved) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  void* q = alloc.allocate(8 * KiB, 0);
  ASSERT_TRUE(p && q) << "Two small requests must succeed.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.allocated_bytes, 8 * KiB)
      << "A pending block is freed: allocated_bytes drops by its size at deallocate, as PyTorch's does. "
         "Counting it makes allocated lie about what live tensors hold: " << show(stats);
  EXPECT_EQ(stats.reserved_bytes, 2 * MiB) << "Its segment stays reserved: " << show(stats);
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "pending_bytes() counts the pending block's size.";
  EXPECT_EQ(layout_of(alloc), (Layout{{4 * KiB, 'p'}, {8 * KiB, 'a'}, {2 * MiB - 12 * KiB, 'f'}}))
      << "snapshot() shows the block with pending = true and allocated = false:" << show(alloc.snapshot());
  EXPECT_EQ(alloclab::test::broken_invariant(alloc.snapshot(), alloc.stats(), device), "");
}

TEST(CachingStreams, APendingBlockIsNeitherReusedNorMerged) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB, 0);
  void* p = alloc.allocate(4 * KiB, 0);
  void* c = alloc.allocate(4 * KiB, 0);
  ASSERT_TRUE(a && p && c) << "Three small requests must succeed.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  alloc.deallocate(a);
  alloc.deallocate(c);
  EXPECT_EQ(layout_of(alloc), (Layout{{4 * KiB, 'f'}, {4 * KiB, 'p'}, {2 * MiB - 8 * KiB, 'f'}}))
      << "Freeing the neighbours of a pending block must not merge them with it: merged, its memory would be "
         "handed out inside a larger free block while stream 1 may still read it:" << show(alloc.snapshot());
  void* r = alloc.allocate(4 * KiB, 0);
  EXPECT_EQ(r, a) << "A 4 KiB request takes the free 4 KiB block before the pending one.";
  void* s = alloc.allocate(4 * KiB, 0);
  EXPECT_NE(s, p) << "The pending block is in no pool: it must not serve a request, however well it fits, "
                     "until stream 1 has passed its free.";
  EXPECT_EQ(s, c) << "The request takes the start of the free rest instead.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "The block is still pending.";
}

TEST(CachingStreams, AllocateFreesThePendingBlocksWhoseEventsAreDone) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  void* q = alloc.allocate(4 * KiB, 0);
  ASSERT_TRUE(p && q) << "Two small requests must succeed.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  alloc.deallocate(q);
  void* early = alloc.allocate(512, 0);
  ASSERT_NE(early, nullptr) << "allocate(512) returned nullptr.";
  EXPECT_NE(early, p) << "Stream 1 has not run yet: the block stays pending.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "Its event is not done, so it is still pending.";
  alloc.deallocate(early);
  device.complete(1);  // stream 1 has run everything queued before the free
  void* r = alloc.allocate(4 * KiB, 0);
  EXPECT_EQ(r, p) << "Once its event is done, the next allocate first frees the pending block, merged with the "
                     "free block after it, and best fit then takes it, the lowest address:" << show(alloc.snapshot());
  EXPECT_EQ(alloc.pending_bytes(), 0u) << "Nothing is pending any more.";
  alloc.deallocate(r);
  EXPECT_EQ(layout_of(alloc), (Layout{{2 * MiB, 'f'}}))
      << "The freed block merged with its neighbours: the segment is one free block again:" << show(alloc.snapshot());
  EXPECT_EQ(device.events_recorded(), 1u)
      << "Handed out again, the block carries none of its old streams: its free recorded no event.";
}

TEST(CachingStreams, AnAllocateOfAnyStreamFreesReadyBlocks) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  device.complete(1);
  void* other = alloc.allocate(4 * KiB, 3);
  ASSERT_NE(other, nullptr) << "allocate(4 KiB, stream 3) returned nullptr.";
  EXPECT_EQ(alloc.pending_bytes(), 0u)
      << "Every allocate of at least one byte first frees the pending blocks whose events are done, whatever "
         "its own stream: otherwise a stream that stopped allocating would keep its memory pending forever.";
  const auto segments = alloc.snapshot();
  const BlockInfo* freed = block_at(segments, p);
  ASSERT_NE(freed, nullptr) << show(segments);
  EXPECT_TRUE(!freed->allocated && !freed->pending && freed->size == 2 * MiB)
      << "The freed block merged with the rest of its segment:" << show(segments);
}

TEST(CachingStreams, APendingBlockWaitsForAllItsEvents) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.record_stream(p, 1);
  alloc.record_stream(p, 2);
  alloc.deallocate(p);
  device.complete(1);
  void* a = alloc.allocate(4 * KiB, 0);
  EXPECT_NE(a, p) << "Stream 1 is done but stream 2 may still read the block: it must stay pending until every "
                     "event is done.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << show(alloc.snapshot());
  alloc.deallocate(a);
  device.complete(2);
  void* b = alloc.allocate(4 * KiB, 0);
  EXPECT_EQ(b, p) << "With both events done, the block is freed and reused:" << show(alloc.snapshot());
  EXPECT_EQ(alloc.pending_bytes(), 0u);
}

TEST(CachingStreams, TheEventIsRecordedAtTheFreeNotAtRecordStream) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.record_stream(p, 1);
  device.complete(1);  // stream 1 ran what was queued so far; more work on p may be queued after this
  alloc.deallocate(p);
  void* q = alloc.allocate(4 * KiB, 0);
  EXPECT_NE(q, p) << "The event must be recorded at the free: it then covers all the work stream 1 queued "
                     "until the free. An event recorded at record_stream completes too early, and the block "
                     "is reused while later work of stream 1 may still read it.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << show(alloc.snapshot());
}

TEST(CachingStreams, EmptyCacheSynchronizesAndFreesPendingBlocks) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);       // alone in its small segment
  void* kept = alloc.allocate(2 * MiB, 0);    // a large segment: a block that stays allocated,
  void* big = alloc.allocate(3 * MiB, 0);     // then one pending below, then the free rest
  ASSERT_TRUE(p && big && kept) << "Three requests on a roomy device must succeed.";
  alloc.record_stream(p, 1);
  alloc.record_stream(big, 2);
  alloc.deallocate(p);
  alloc.deallocate(big);
  ASSERT_EQ(alloc.pending_bytes(), 4 * KiB + 3 * MiB) << "Both blocks are pending.";
  alloc.empty_cache();
  EXPECT_EQ(device.synchronize_calls(), 1u)
      << "empty_cache must first wait for every event (device.synchronize()): the memory is about to leave "
         "the cache, and a stream may still be reading it.";
  EXPECT_EQ(alloc.pending_bytes(), 0u) << "After the wait, every pending block is freed.";
  EXPECT_EQ(device.live_allocations(), 1u)
      << "The small segment, wholly free once its pending block is freed, goes back to the device; the large "
         "one keeps its allocated block:" << show(alloc.snapshot());
  const auto segments = alloc.snapshot();
  ASSERT_EQ(segments.size(), 1u) << show(segments);
  ASSERT_EQ(segments[0].blocks.size(), 2u)
      << "The freed pending block merged with its free neighbour in the large segment:" << show(segments);
  EXPECT_TRUE(segments[0].blocks[0].allocated && !segments[0].blocks[1].allocated &&
              !segments[0].blocks[1].pending && segments[0].blocks[1].size == 18 * MiB)
      << show(segments);
  EXPECT_EQ(alloclab::test::broken_invariant(segments, alloc.stats(), device), "");
  alloc.deallocate(kept);
  alloc.empty_cache();
  EXPECT_EQ(device.synchronize_calls(), 1u)
      << "With nothing pending, empty_cache has nothing to wait for and must not synchronize: a device "
         "synchronization stalls every stream.";
  EXPECT_EQ(device.live_allocations(), 0u) << "Every segment is wholly free and returned.";
}

TEST(CachingStreams, TheRetryAfterARefusalSynchronizesFirst) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(3 * MiB, 0);  // a 20 MiB segment
  ASSERT_NE(p, nullptr) << "allocate(3 MiB) returned nullptr.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  device.set_limit(21 * MiB);  // a 2 MiB segment fits only once the pending 20 MiB segment is returned
  void* q = nullptr;
  EXPECT_NO_THROW(q = alloc.allocate(4 * KiB, 0))
      << "When the device refuses, the allocator empties its cache before it asks again, and emptying the cache "
         "first waits for every event and frees the pending blocks: the 20 MiB segment, whose only block was "
         "pending, is then wholly free and goes back. Memory waiting for a side stream must not cause an out "
         "of memory.";
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(device.synchronize_calls(), 1u) << "The retry path synchronizes once.";
  EXPECT_EQ(alloc.pending_bytes(), 0u);
  const auto stats = alloc.stats();
  EXPECT_EQ(stats.oom_retries, 1u) << show(stats);
  EXPECT_EQ(stats.reserved_bytes, 2 * MiB) << "Only the new small segment is reserved: " << show(stats);
  EXPECT_EQ(stats.device_frees, 1u) << show(stats);
}

// Every misuse of record_stream throws std::invalid_argument and changes nothing.
void expect_refused(Allocator& alloc, const TestDevice& device, void* p, const char* what) {
  const auto segments = alloc.snapshot();
  const auto stats = alloc.stats();
  const std::size_t pending = alloc.pending_bytes();
  EXPECT_THROW(alloc.record_stream(p, 1), std::invalid_argument)
      << "record_stream of " << what << " must throw std::invalid_argument: there is no live block to "
      << "protect, and a use recorded on the wrong block would delay or corrupt another tensor's memory.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments))
      << "A refused record_stream of " << what << " must change nothing:" << show(alloc.snapshot());
  EXPECT_TRUE(alloclab::test::same(alloc.stats(), stats)) << "A refused record_stream changes no statistic.";
  EXPECT_EQ(alloc.pending_bytes(), pending) << "A refused record_stream changes no pending block.";
  EXPECT_EQ(device.events_recorded(), 0u) << "A refused record_stream records no event.";
}

TEST(CachingStreams, RecordStreamRefusesWhatIsNotALiveBlock) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* a = alloc.allocate(4 * KiB, 0);
  void* b = alloc.allocate(4 * KiB, 0);
  void* c = alloc.allocate(4 * KiB, 0);
  void* pend = alloc.allocate(4 * KiB, 0);
  ASSERT_TRUE(a && b && c && pend) << "Four small requests must succeed.";
  int local = 0;
  expect_refused(alloc, device, nullptr, "nullptr");
  expect_refused(alloc, device, &local, "a pointer this allocator never handed out");
  expect_refused(alloc, device, static_cast<char*>(a) + 512, "a pointer into the middle of an allocated block");
  alloc.deallocate(b);
  expect_refused(alloc, device, b, "a block already freed");
  alloc.record_stream(pend, 2);
  alloc.deallocate(pend);
  ASSERT_EQ(device.events_recorded(), 1u) << "The free of a block used on stream 2 records one event.";
  const auto segments = alloc.snapshot();
  EXPECT_THROW(alloc.record_stream(pend, 1), std::invalid_argument)
      << "record_stream of a pending block must throw: it is freed, whatever waits for its events.";
  EXPECT_THROW(alloc.deallocate(pend), std::invalid_argument)
      << "deallocate of a pending block is a double free: it must throw std::invalid_argument.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments)) << "Both refusals change nothing:"
                                                                << show(alloc.snapshot());
  EXPECT_EQ(device.events_recorded(), 1u) << "Neither refusal records an event.";
  alloc.deallocate(a);
  EXPECT_EQ(device.events_recorded(), 1u)
      << "The refused record_stream of an interior pointer of a must not have recorded a use on a: its free "
         "records no event.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "Only the block used on stream 2 is pending.";
  (void)c;
}

TEST(CachingStreams, AllocateZeroChangesNothing) {
  TestDevice device(64 * MiB);
  Allocator alloc(device);
  void* p = alloc.allocate(4 * KiB, 0);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  device.complete(1);  // the block is ready to be freed
  const auto segments = alloc.snapshot();
  const std::size_t queries = device.event_queries();
  EXPECT_EQ(alloc.allocate(0, 0), nullptr) << "allocate(0, stream) returns nullptr.";
  EXPECT_EQ(alloc.allocate(0, 1), nullptr) << "allocate(0, stream) returns nullptr.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB)
      << "allocate(0) changes nothing, not even the pending blocks: only a request of at least one byte frees "
         "the ready ones.";
  EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), segments)) << show(alloc.snapshot());
  EXPECT_EQ(device.event_queries(), queries) << "allocate(0) asks the device nothing.";
}

TEST(CachingStreams, ADeviceWithoutStreamsCompletesEveryEventAtOnce) {
  InstantDevice device(64 * MiB);
  alloclab::test::caching::CachingAllocator<InstantDevice> alloc(device);
  void* p = alloc.allocate(4 * KiB);
  ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
  alloc.record_stream(p, 1);
  alloc.deallocate(p);
  EXPECT_EQ(device.recorded, 1u) << "The free records one event, on stream 1.";
  EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "Until the next allocate, the block is pending.";
  void* q = alloc.allocate(4 * KiB);
  EXPECT_EQ(q, p) << "On a device whose events are done at once, the next allocate frees the block and reuses it.";
  EXPECT_EQ(alloc.pending_bytes(), 0u);
  EXPECT_EQ(device.synchronized, 0u) << "Nothing needed a synchronization.";
}

TEST(CachingStreams, TheDestructorSynchronizesBeforeReturningPendingMemory) {
  TestDevice device(64 * MiB);
  {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    void* q = alloc.allocate(3 * MiB, 1);
    ASSERT_TRUE(p && q) << "Two requests must succeed.";
    alloc.record_stream(p, 1);
    alloc.deallocate(p);
  }
  EXPECT_EQ(device.live_allocations(), 0u) << "The destructor returns every segment, pending blocks or not.";
  EXPECT_EQ(device.synchronize_calls(), 1u)
      << "A pending block may still be read by another stream: the destructor waits for every event before "
         "its memory goes back to the device.";
  EXPECT_EQ(device.bad_frees(), 0u);
}

TEST(CachingStreams, TheDestructorSynchronizesOnlyWhenBlocksArePending) {
  TestDevice device(64 * MiB);
  {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    void* q = alloc.allocate(4 * KiB, 0);
    ASSERT_TRUE(p && q) << "Two small requests must succeed.";
    alloc.record_stream(p, 1);
    alloc.deallocate(p);
    alloc.empty_cache();  // waits, and frees the pending block
    ASSERT_EQ(device.synchronize_calls(), 1u) << "empty_cache with a pending block synchronizes once.";
    ASSERT_EQ(alloc.pending_bytes(), 0u) << "After empty_cache nothing is pending.";
  }
  EXPECT_EQ(device.synchronize_calls(), 1u)
      << "With nothing pending the destructor has nothing to wait for, and must not synchronize, as empty_cache "
         "does not: a device synchronization stalls every stream, here only to give memory back that no stream "
         "uses.";
  {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    ASSERT_NE(p, nullptr) << "allocate(4 KiB) returned nullptr.";
    alloc.record_stream(p, 1);
    alloc.deallocate(p);
    device.complete(1);  // its event is done, but no allocate has freed it yet
    ASSERT_EQ(alloc.pending_bytes(), 4 * KiB) << "The block stays pending until an allocate or empty_cache frees it.";
  }
  EXPECT_EQ(device.synchronize_calls(), 2u)
      << "A block stays pending until an allocate or empty_cache frees it, even once its events are done: the "
         "destructor synchronizes once when pending_bytes() > 0, and asks no event whether it may skip the wait.";
  EXPECT_EQ(device.live_allocations(), 0u) << "Both destructors return every segment.";
}

// The pending blocks an allocate frees first are its own housekeeping, not part of the request:
// they stay freed when the request then fails on the heap. Only a failure while a ready block is
// being freed leaves that block pending.
TEST(CachingStreams, ReadyBlocksFreedBeforeAHeapFailureStayFreed) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  TestDevice device(64 * MiB);  // as empty again after each round
  const int failures = for_each_failing_allocation([&](long n) {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    void* q = alloc.allocate(4 * KiB, 0);
    if (p == nullptr || q == nullptr) {
      ADD_FAILURE() << "Two small requests must succeed.";
      return false;
    }
    alloc.record_stream(p, 1);
    alloc.deallocate(p);
    device.complete(1);  // p is ready: the next allocate frees it first
    const auto before = alloc.snapshot();
    const auto stats = alloc.stats();
    const std::size_t malloc_calls = device.malloc_calls();
    const long in_use = news_in_use();
    void* r = nullptr;
    const auto outcome = call_with_failing_new(n, [&] { r = alloc.allocate(3 * MiB, 0); });
    const long kept = news_in_use() - in_use;
    if (!outcome.fired) return false;
    const std::string call = "allocate(3 MiB), with a ready pending block and heap allocation " + std::to_string(n) +
                             " inside it refused,";
    if (!outcome.threw) {
      EXPECT_TRUE(r != nullptr && alloc.pending_bytes() == 0u)
          << call << " succeeded: it must then have freed the ready block first and served the request:"
          << show(alloc.snapshot());
      return !HasFailure();
    }
    const auto after = alloc.snapshot();
    const bool asked_the_device = device.malloc_calls() != malloc_calls;
    if (alloc.pending_bytes() == 4 * KiB) {
      EXPECT_FALSE(asked_the_device)
          << call << " threw std::bad_alloc after it had asked the device, and the ready block is pending again: "
          << "allocate frees the ready pending blocks before anything else, and that freeing stays done when the "
          << "request then fails. Undoing it waits again for events that are done, and the memory stays out of "
          << "every pool until the next allocate.";
      EXPECT_TRUE(alloclab::test::same(after, before) && kept == 0)
          << call << " threw std::bad_alloc while it freed the ready block (it is still pending): that block must "
          << "stay exactly as it was, and every heap block the call took must be given back (" << kept
          << " kept):" << show(after);
    } else {
      const auto* freed = block_at(after, p);
      EXPECT_TRUE(alloc.pending_bytes() == 0u && freed != nullptr && !freed->allocated && !freed->pending &&
                  freed->size == 4 * KiB && after.size() == 1u)
          << call << " threw std::bad_alloc: the ready block it freed first stays free (4 KiB, beside the live "
          << "one), pending_bytes() agrees with the snapshot, and nothing else changed: no segment was added. "
          << "A pending block taken off the pending list before its merge is lost for good when the merge "
          << "fails:" << show(after) << "\n  pending_bytes() = " << alloc.pending_bytes();
      const auto now = alloc.stats();
      EXPECT_TRUE(now.allocated_bytes == stats.allocated_bytes && now.reserved_bytes == stats.reserved_bytes &&
                  now.device_mallocs == stats.device_mallocs && now.cache_hits == stats.cache_hits &&
                  now.peak_reserved_bytes == stats.peak_reserved_bytes)
          << call << " threw std::bad_alloc: apart from the ready block freed first, the stats stay as they were: "
          << show(now);
    }
    void* again = alloc.allocate(3 * MiB, 0);
    EXPECT_TRUE(again != nullptr && alloc.pending_bytes() == 0u)
        << "After " << call << " threw, the same request must succeed and leave nothing pending:"
        << show(alloc.snapshot());
    return !HasFailure();
  });
  if (!HasFailure()) {
    EXPECT_GT(failures, 0) << "allocate(3 MiB) on a new segment must need the heap at least once.";
  }
}

// record_stream, and the free that makes a block pending, take heap memory too (the block's list
// of streams, the list of pending blocks): when the heap refuses, they change nothing, record no
// event and keep no heap memory.
TEST(CachingStreams, RecordStreamAndAPendingFreeChangeNothingWhenTheHeapFails) {
  ASSERT_TRUE(failing_new_works()) << "This test binary cannot make operator new fail, so the test would prove nothing.";
  TestDevice device(64 * MiB);
  // The test device keeps its events in a vector and its streams in a map, both on the heap:
  // events recorded now give them room (80 events leave the vector room for 48 more), so that a
  // refused allocation lands in the allocator, never in the device's noexcept record_event.
  for (int i = 0; i < 40; ++i) (void)device.record_event(1), (void)device.record_event(2);
  for_each_failing_allocation([&](long n) {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    if (p == nullptr) {
      ADD_FAILURE() << "allocate(4 KiB) returned nullptr.";
      return false;
    }
    const auto before = alloc.snapshot();
    const std::size_t events = device.events_recorded();
    const long in_use = news_in_use();
    const auto outcome = call_with_failing_new(n, [&] { alloc.record_stream(p, 1); });
    const long kept = news_in_use() - in_use;
    if (!outcome.fired) return false;
    if (outcome.threw) {
      EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), before) && kept == 0)
          << "record_stream(p, 1) threw std::bad_alloc when heap allocation " << n << " inside it failed: it must "
          << "change nothing and keep no heap memory (" << kept << " block(s) kept).";
      alloc.deallocate(p);
      EXPECT_TRUE(device.events_recorded() == events && alloc.pending_bytes() == 0u)
          << "record_stream(p, 1) threw std::bad_alloc, so stream 1 was not recorded: p's free must free it at "
          << "once, with no event.";
    }
    return !HasFailure();
  });
  const int failures = for_each_failing_allocation([&](long n) {
    Allocator alloc(device);
    void* p = alloc.allocate(4 * KiB, 0);
    void* q = alloc.allocate(4 * KiB, 0);
    if (p == nullptr || q == nullptr) {
      ADD_FAILURE() << "Two small requests must succeed.";
      return false;
    }
    alloc.record_stream(p, 1);
    alloc.record_stream(p, 2);
    const auto before = alloc.snapshot();
    const auto stats = alloc.stats();
    const std::size_t events = device.events_recorded();
    const std::size_t on_1 = device.events_recorded_on(1), on_2 = device.events_recorded_on(2);
    const long in_use = news_in_use();
    const auto outcome = call_with_failing_new(n, [&] { alloc.deallocate(p); });
    const long kept = news_in_use() - in_use;
    if (!outcome.fired) return false;
    if (!outcome.threw) return alloc.pending_bytes() == 4 * KiB;
    EXPECT_TRUE(alloclab::test::same(alloc.snapshot(), before) && alloclab::test::same(alloc.stats(), stats) &&
                alloc.pending_bytes() == 0u && kept == 0)
        << "The free of a block used on streams 1 and 2 threw std::bad_alloc when heap allocation " << n
        << " inside it failed: the block must still be allocated, nothing pending, the stats as they were, and "
        << "no heap memory kept (" << kept << " block(s)):" << show(alloc.snapshot());
    EXPECT_EQ(device.events_recorded(), events)
        << "The failed free must record no event: make room for the pending block first, then record the events. "
           "An event recorded before the step that fails is lost, and the block's list of streams may already "
           "hold event ids when the free is tried again.";
    alloc.deallocate(p);
    EXPECT_TRUE(device.events_recorded_on(1) == on_1 + 1 && device.events_recorded_on(2) == on_2 + 1)
        << "Freed again after the failure, the block records one event on stream 1 and one on stream 2.";
    EXPECT_EQ(alloc.pending_bytes(), 4 * KiB) << "And it is pending.";
    return !HasFailure();
  });
  if (!HasFailure()) {
    EXPECT_GT(failures, 0) << "The free of a block used on other streams makes it pending, which needs the heap.";
  }
}

// A long random run on three streams: requests, frees, record_stream, streams that run, and
// empty_cache, on a device small enough to refuse. A model keeps which blocks must be pending
// and where each request must land; after every step the snapshot keeps every invariant.
TEST(CachingStreams, ARandomRunOnThreeStreamsKeepsEveryInvariant) {
  TestDevice device(80 * MiB);
  Allocator alloc(device);
  constexpr int kStreams = 3;
  struct Live {
    void* p;
    std::size_t n;
    int stream;
    std::set<int> uses;
    unsigned char tag;
  };
  struct Pending {
    std::size_t size;
    std::map<int, std::size_t> epoch_at_free;  // per used stream: its epoch when the block was freed
  };
  std::vector<Live> live;
  std::map<std::uintptr_t, Pending> pending;        // by address
  std::map<std::uintptr_t, int> segment_stream;     // by segment base
  std::size_t epoch[kStreams] = {};                 // bumped each time a stream runs everything queued
  std::mt19937_64 rng(5);
  auto ready = [&epoch](const Pending& pb) {
    return std::all_of(pb.epoch_at_free.begin(), pb.epoch_at_free.end(),
                       [&epoch](const auto& e) { return epoch[e.first] > e.second; });
  };
  auto size_for = [&rng]() -> std::size_t {
    switch (rng() % 8) {
      case 0: return 1 + rng() % (4 * MiB);
      case 1: return 10 * MiB + rng() % (6 * MiB);
      case 2: return 256 * KiB + rng() % (768 * KiB);
      default: return 1 + rng() % (16 * KiB);
    }
  };
  for (int step = 0; step < 1200; ++step) {
    const auto before = alloc.snapshot();
    const unsigned action = static_cast<unsigned>(rng() % 100);
    std::string what;
    if (action < 40 || live.empty()) {
      const std::size_t n = size_for();
      const int stream = static_cast<int>(rng() % kStreams);
      const std::size_t size = Allocator::round_size(n);
      const bool small = size <= MiB;
      // The model: first the ready pending blocks become free and merge with free neighbours,
      // then the best fit among the free blocks of the request's stream and pool.
      std::uintptr_t best = 0;
      std::size_t best_size = SIZE_MAX;
      for (const auto& seg : before) {
        if (seg.small_pool != small || segment_stream.at(seg.base) != stream) continue;
        std::uintptr_t run_start = 0;
        std::size_t run = 0;
        auto close_run = [&] {
          if (run >= size && (run < best_size || (run == best_size && run_start < best))) {
            best = run_start;
            best_size = run;
          }
          run = 0;
        };
        for (const auto& b : seg.blocks) {
          const std::uintptr_t at = seg.base + b.offset;
          const bool free = !b.allocated && (!b.pending || ready(pending.at(at)));
          if (!free) {
            close_run();
            continue;
          }
          if (run == 0) run_start = at;
          run += b.size;
        }
        close_run();
      }
      for (auto it = pending.begin(); it != pending.end();) it = ready(it->second) ? pending.erase(it) : std::next(it);
      const std::size_t mallocs = device.mallocs(), syncs = device.synchronize_calls();
      what = "allocate(" + std::to_string(n) + ", stream " + std::to_string(stream) + ")";
      void* p = nullptr;
      try {
        p = alloc.allocate(n, stream);
        ASSERT_NE(p, nullptr) << "Step " << step << ": " << what << " returned nullptr.";
      } catch (const OutOfMemoryError&) {
        ASSERT_EQ(best, 0u) << "Step " << step << ": " << what << " threw although a free block of its stream, "
                            << best_size << " bytes, fits it:" << show(before);
      }
      if (device.synchronize_calls() != syncs) {  // the retry after a refusal waited for every event
        for (int s = 0; s < kStreams; ++s) ++epoch[s];
        pending.clear();
      }
      if (p != nullptr) {
        if (best != 0) {
          ASSERT_EQ(address(p), best) << "Step " << step << ": " << what << " must take the smallest free block "
                                      << "of its stream and pool that fits (after the ready pending blocks were "
                                      << "freed and merged), at " << best << ":" << show(before);
        } else {
          ASSERT_GT(device.mallocs(), mallocs) << "Step " << step << ": " << what << " fits no free block of its "
                                               << "stream, so it needs a new segment:" << show(before);
        }
        if (device.mallocs() != mallocs) segment_stream[address(p)] = stream;  // a new segment starts at p
        const auto tag = static_cast<unsigned char>(step);
        static_cast<unsigned char*>(p)[0] = tag;
        static_cast<unsigned char*>(p)[n - 1] = tag;
        live.push_back({p, n, stream, {}, tag});
      }
    } else if (action < 55) {
      Live& l = live[rng() % live.size()];
      const int s = static_cast<int>(rng() % kStreams);
      what = "record_stream(stream " + std::to_string(s) + ")";
      alloc.record_stream(l.p, s);
      if (s != l.stream) l.uses.insert(s);
    } else if (action < 85) {
      const std::size_t i = rng() % live.size();
      const Live gone = live[i];
      what = "deallocate of a block of " + std::to_string(gone.n) + " bytes used on " +
             std::to_string(gone.uses.size()) + " other streams";
      const auto* bytes = static_cast<const unsigned char*>(gone.p);
      ASSERT_TRUE(bytes[0] == gone.tag && bytes[gone.n - 1] == gone.tag)
          << "Step " << step << ": a live block's first or last byte was overwritten: two live blocks overlap.";
      const std::size_t events = device.events_recorded();
      const auto* block = block_at(before, gone.p);
      ASSERT_NE(block, nullptr) << "Step " << step << ": a live block is missing from the snapshot.";
      alloc.deallocate(gone.p);
      ASSERT_EQ(device.events_recorded() - events, gone.uses.size())
          << "Step " << step << ": the free of a block used on " << gone.uses.size() << " other streams records "
          << "one event on each.";
      if (!gone.uses.empty()) {
        Pending pb{block->size, {}};
        for (int s : gone.uses) pb.epoch_at_free[s] = epoch[s];
        pending[address(gone.p)] = pb;
      }
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (action < 97) {
      const int s = static_cast<int>(rng() % kStreams);
      what = "stream " + std::to_string(s) + " runs";
      device.complete(s);
      ++epoch[s];
    } else {
      what = "empty_cache()";
      const std::size_t syncs = device.synchronize_calls();
      alloc.empty_cache();
      ASSERT_EQ(device.synchronize_calls() - syncs, pending.empty() ? 0u : 1u)
          << "Step " << step << ": empty_cache synchronizes once when blocks are pending, never otherwise.";
      for (int s = 0; s < kStreams; ++s) ++epoch[s];
      pending.clear();
    }
    const auto segments = alloc.snapshot();
    const auto stats = alloc.stats();
    const std::string broken = alloclab::test::broken_invariant(segments, stats, device);
    ASSERT_EQ(broken, "") << "Step " << step << ", after " << what << ": " << broken << show(segments);
    for (auto it = segment_stream.begin(); it != segment_stream.end();)
      it = block_at(segments, reinterpret_cast<void*>(it->first)) ? std::next(it) : segment_stream.erase(it);
    ASSERT_EQ(segment_stream.size(), segments.size()) << "Step " << step << ": the model lost a segment.";
    std::size_t model_pending = 0;
    for (const auto& [at, pb] : pending) {
      const auto* b = block_at(segments, reinterpret_cast<void*>(at));
      ASSERT_TRUE(b != nullptr && b->pending && !b->allocated && b->size == pb.size)
          << "Step " << step << ", after " << what << ": a block freed while used on another stream must stay "
          << "pending, whole, until every one of its events is done:" << show(segments);
      model_pending += pb.size;
    }
    ASSERT_EQ(pending_in(segments), model_pending)
        << "Step " << step << ", after " << what << ": the snapshot shows pending blocks that should be free, "
        << "or the reverse:" << show(segments);
    ASSERT_EQ(alloc.pending_bytes(), model_pending)
        << "Step " << step << ", after " << what << ": pending_bytes() is the size of the pending blocks.";
    for (const Live& l : live) {
      const auto* b = block_at(segments, l.p);
      ASSERT_TRUE(b != nullptr && b->allocated && b->size >= Allocator::round_size(l.n))
          << "Step " << step << ", after " << what << ": every live allocation must be an allocated block of at "
          << "least its rounded size:" << show(segments);
    }
    for (const auto& seg : segments) {
      for (const Live& l : live) {
        if (address(l.p) >= seg.base && address(l.p) < seg.base + seg.size) {
          ASSERT_EQ(segment_stream.at(seg.base), l.stream)
              << "Step " << step << ": a block lies in a segment of another stream than its request's.";
        }
      }
    }
  }
  for (const Live& l : live) alloc.deallocate(l.p);
  alloc.empty_cache();
  EXPECT_EQ(device.live_allocations(), 0u) << "After every block is freed, empty_cache returns every segment.";
  EXPECT_EQ(alloc.pending_bytes(), 0u);
  EXPECT_EQ(device.bad_event_queries(), 0u) << "The allocator asked about an event the device never recorded.";
}

}  // namespace stage5_streams
