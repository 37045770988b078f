// Helpers shared by the stages of exercise 04: sizes, a readable picture of a snapshot, and
// the invariants every snapshot must keep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "caching_under_test.hpp"
#include "test_device.hpp"

namespace alloclab::test {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

using Allocator = caching::CachingAllocator<TestDevice>;

/// "small segment of 2097152: [0+512 allocated] [512+2096640 free]" per segment, for failure
/// messages (a pending block shows as "pending").
inline std::string show(const std::vector<caching::SegmentInfo>& segments) {
  if (segments.empty()) return "\n  no segment at all";
  std::string s;
  for (const auto& seg : segments) {
    s += std::string(seg.small_pool ? "\n  small" : "\n  large") + " segment of " + std::to_string(seg.size) + ":";
    for (const auto& b : seg.blocks)
      s += " [" + std::to_string(b.offset) + "+" + std::to_string(b.size) + (b.allocated ? " allocated]" : b.pending ? " pending]" : " free]");
  }
  return s;
}

inline std::string show(const caching::CacheStats& s) {
  return "{allocated " + std::to_string(s.allocated_bytes) + ", reserved " + std::to_string(s.reserved_bytes) +
         ", peak allocated " + std::to_string(s.peak_allocated_bytes) + ", peak reserved " +
         std::to_string(s.peak_reserved_bytes) + ", device mallocs " + std::to_string(s.device_mallocs) +
         ", device frees " + std::to_string(s.device_frees) + ", cache hits " + std::to_string(s.cache_hits) +
         ", oom retries " + std::to_string(s.oom_retries) + "}";
}

inline bool same(const caching::CacheStats& a, const caching::CacheStats& b) {
  return a.allocated_bytes == b.allocated_bytes && a.reserved_bytes == b.reserved_bytes &&
         a.peak_allocated_bytes == b.peak_allocated_bytes && a.peak_reserved_bytes == b.peak_reserved_bytes &&
         a.device_mallocs == b.device_mallocs && a.device_frees == b.device_frees && a.cache_hits == b.cache_hits &&
         a.oom_retries == b.oom_retries;
}

inline bool same(const std::vector<caching::SegmentInfo>& a, const std::vector<caching::SegmentInfo>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].base != b[i].base || a[i].size != b[i].size || a[i].small_pool != b[i].small_pool ||
        a[i].blocks.size() != b[i].blocks.size())
      return false;
    for (std::size_t j = 0; j < a[i].blocks.size(); ++j) {
      const auto &x = a[i].blocks[j], &y = b[i].blocks[j];
      if (x.offset != y.offset || x.size != y.size || x.allocated != y.allocated || x.pending != y.pending)
        return false;
    }
  }
  return true;
}

/// The block that starts at `p`, or nullptr.
inline const caching::BlockInfo* block_at(const std::vector<caching::SegmentInfo>& segments, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const auto& seg : segments)
    for (const auto& b : seg.blocks)
      if (seg.base + b.offset == a) return &b;
  return nullptr;
}

/// The first way the snapshot breaks the rules every allocator state keeps, or "". The
/// blocks of each segment tile it (in order, no gap, no overlap), sizes are multiples of 512,
/// no two free blocks sit side by side (they would have merged; a pending block is not free),
/// no block is both allocated and pending, segments come in address order without
/// overlapping, and the sums match the stats and the device.
inline std::string broken_invariant(const std::vector<caching::SegmentInfo>& segments,
                                    const caching::CacheStats& stats, const TestDevice& device) {
  std::size_t reserved = 0, allocated = 0;
  std::uintptr_t end_of_previous = 0;
  for (const auto& seg : segments) {
    const std::string where = "the segment at address " + std::to_string(seg.base) + ": ";
    if (seg.base < end_of_previous)
      return where + "segments must be listed by base address, without overlapping the one before";
    end_of_previous = seg.base + seg.size;
    if (device.size_of(reinterpret_cast<void*>(seg.base)) != seg.size)
      return where + "its base and size must be those of a live device allocation (the device says " +
             std::to_string(device.size_of(reinterpret_cast<void*>(seg.base))) + " bytes)";
    if (seg.small_pool && seg.size != 2 * MiB) return where + "a small pool segment is 2 MiB";
    std::size_t offset = 0;
    bool previous_free = false;
    for (const auto& b : seg.blocks) {
      if (b.offset != offset)
        return where + "its blocks must tile it: a block starts at " + std::to_string(b.offset) + " where " +
               std::to_string(offset) + " was expected";
      if (b.size == 0 || b.size % 512 != 0) return where + "every block's size is a positive multiple of 512";
      if (b.allocated && b.pending) return where + "a pending block is freed: it is not allocated too";
      const bool free = !b.allocated && !b.pending;
      if (free && previous_free) return where + "two free blocks side by side should have merged";
      if (b.allocated && seg.small_pool && b.size > 1 * MiB) return where + "a small pool block is at most 1 MiB";
      previous_free = free;
      offset += b.size;
      if (b.allocated) allocated += b.size;
    }
    if (offset != seg.size)
      return where + "its blocks add up to " + std::to_string(offset) + " bytes, not the segment's " +
             std::to_string(seg.size);
    reserved += seg.size;
  }
  if (allocated != stats.allocated_bytes)
    return "allocated_bytes is " + std::to_string(stats.allocated_bytes) + " but the allocated blocks add up to " +
           std::to_string(allocated);
  if (reserved != stats.reserved_bytes)
    return "reserved_bytes is " + std::to_string(stats.reserved_bytes) + " but the segments add up to " +
           std::to_string(reserved);
  if (reserved != device.in_use() || segments.size() != device.live_allocations())
    return "the segments must be exactly the device's live allocations (" + std::to_string(device.live_allocations()) +
           " of " + std::to_string(device.in_use()) + " bytes)";
  if (stats.peak_allocated_bytes < stats.allocated_bytes || stats.peak_reserved_bytes < stats.reserved_bytes)
    return "a peak is below the current value";
  if (stats.device_mallocs != device.mallocs() || stats.device_frees != device.frees())
    return "device_mallocs and device_frees must count the device's successful calls (" +
           std::to_string(device.mallocs()) + " and " + std::to_string(device.frees()) + ")";
  if (device.bad_frees() != 0) return "the device was given a pointer it never handed out";
  return "";
}

}  // namespace alloclab::test
