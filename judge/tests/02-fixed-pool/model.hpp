// The fixed-size pool's contract as the simplest code that can be right: a stack of free slots, a
// list of the blocks handed out, and what each chunk has shown so far of where it lies. The model
// stage (stage5_model.cpp) runs every call on this and on the header under test, and compares
// what the contract lets a caller observe.
//
// The heap chooses where a chunk lies, so the model does not know a block's address until the
// pool hands the block out for the first time; until then the block is a nameless slot of its
// chunk. The contract leaves free the order in which a new chunk's blocks come out. It fixes the
// rest: a block given back is the next one handed out (last in, first out), a new chunk is added
// only when no block is free, and a chunk is one run of blocks_per_chunk blocks, one stride apart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace pool_model {

/// Every block starts on a multiple of this.
constexpr std::size_t kAlign = alignof(std::max_align_t);

/// A chunk of at least this many bytes is more than any heap hands out at once (16 TiB); the
/// stage never asks for a chunk between 1 MiB and this, so that the answer never depends on the
/// machine.
constexpr std::size_t kMoreThanAnyHeap = std::size_t{1} << 44;

/// The stride: the size raised to a pointer's, then up to the next multiple of kAlign; nullopt
/// when that multiple is past SIZE_MAX.
inline std::optional<std::size_t> stride_of(std::size_t block_size) {
  const std::size_t n = block_size < sizeof(void*) ? sizeof(void*) : block_size;
  const std::size_t short_by = n % kAlign == 0 ? 0 : kAlign - n % kAlign;
  if (n > SIZE_MAX - short_by) return std::nullopt;
  return n + short_by;
}

/// How the constructor ends for these arguments.
enum class Built {
  yes,
  invalid_argument,  // an argument is 0
  bad_alloc,         // the stride or the chunk does not fit in a std::size_t, or no heap has the chunk
  either,            // an argument is 0 and the sizes overflow: the contract names both exceptions
};

inline Built construction(std::size_t block_size, std::size_t blocks_per_chunk, std::size_t max_chunks) {
  const bool zero = block_size == 0 || blocks_per_chunk == 0 || max_chunks == 0;
  bool overflows = false, no_heap = false;
  if (block_size != 0) {
    const auto stride = stride_of(block_size);
    if (!stride) {
      overflows = true;
    } else if (blocks_per_chunk != 0) {
      overflows = blocks_per_chunk > SIZE_MAX / *stride;
      no_heap = !overflows && blocks_per_chunk * *stride >= kMoreThanAnyHeap;
    }
  }
  if (zero) return overflows ? Built::either : Built::invalid_argument;
  return overflows || no_heap ? Built::bad_alloc : Built::yes;
}

/// A free block: its address once the pool has handed it out at least once, and its chunk.
struct Slot {
  std::optional<std::uintptr_t> address;
  std::size_t chunk;
};

/// The free list and the chunks: what FixedPool and ObjectPool have in common.
class FreeList {
 public:
  FreeList(std::size_t blocks_per_chunk, std::size_t max_chunks)
      : blocks_per_chunk_(blocks_per_chunk), max_chunks_(max_chunks) {
    add_chunk();
  }

  /// Whether a request must throw std::bad_alloc: no block is free and the pool has max_chunks.
  bool at_limit() const { return free_.empty() && chunks_.size() == max_chunks_; }
  /// Whether the next request adds a chunk.
  bool must_grow() const { return free_.empty(); }

  /// Takes the block a request hands out, adding a chunk first when no block is free. Call only
  /// when !at_limit().
  Slot take() {
    if (free_.empty()) add_chunk();
    const Slot s = free_.back();
    free_.pop_back();
    return s;
  }
  /// Puts a block back on top of the list.
  void give_back(const Slot& s) { free_.push_back(s); }

  /// The block on top of the list, the next one handed out (nullopt when a request must grow).
  std::optional<Slot> top() const {
    if (free_.empty()) return std::nullopt;
    return free_.back();
  }

  std::size_t chunk_count() const { return chunks_.size(); }
  std::size_t free_blocks() const { return free_.size(); }
  std::size_t capacity() const { return chunks_.size() * blocks_per_chunk_; }
  std::size_t blocks_per_chunk() const { return blocks_per_chunk_; }
  /// Per chunk, the addresses of its blocks handed out so far.
  const std::vector<std::vector<std::uintptr_t>>& chunks() const { return chunks_; }

  /// Records that a block of chunk `chunk` lies at `address` (the first time it is handed out).
  void learn(std::size_t chunk, std::uintptr_t address) { chunks_[chunk].push_back(address); }

  /// The chunk of a block handed out before.
  std::size_t chunk_of(std::uintptr_t address) const {
    for (std::size_t c = 0; c < chunks_.size(); ++c)
      if (std::find(chunks_[c].begin(), chunks_[c].end(), address) != chunks_[c].end()) return c;
    return chunks_.size();
  }

 private:
  void add_chunk() {
    chunks_.emplace_back();
    for (std::size_t i = 0; i < blocks_per_chunk_; ++i) free_.push_back({std::nullopt, chunks_.size() - 1});
  }

  std::size_t blocks_per_chunk_, max_chunks_;
  std::vector<Slot> free_;  // the top is the back
  std::vector<std::vector<std::uintptr_t>> chunks_;
};

/// FixedPool (and SharedFixedPool, one call at a time).
class Pool {
 public:
  Pool(std::size_t block_size, std::size_t blocks_per_chunk, std::size_t max_chunks)
      : stride_(*stride_of(block_size)), list_(blocks_per_chunk, max_chunks) {}

  std::size_t stride() const { return stride_; }
  const FreeList& list() const { return list_; }

  /// Whether allocate must throw std::bad_alloc and change nothing.
  bool refuses() const { return list_.at_limit(); }
  /// The block allocate hands out, taken off the list. Call only when !refuses().
  Slot allocate() { return list_.take(); }
  /// Records where the block allocate just handed out lies, and that the caller holds it.
  void handed_out(const Slot& s, std::uintptr_t address) {
    if (!s.address) list_.learn(s.chunk, address);
    live_.push_back(address);
  }
  void deallocate(std::uintptr_t address) {
    live_.erase(std::find(live_.begin(), live_.end(), address));
    list_.give_back({address, list_.chunk_of(address)});
  }

  /// The blocks the caller holds, in the order they were handed out.
  const std::vector<std::uintptr_t>& live() const { return live_; }

  /// Whether a block handed out for the first time at `address`, from chunk `chunk`, shares a
  /// byte with a block handed out before: the block it overlaps, or nullopt.
  std::optional<std::uintptr_t> overlaps(std::uintptr_t address) const {
    for (const auto& blocks : list_.chunks())
      for (std::uintptr_t b : blocks)
        if ((address >= b && address - b < stride_) || (b > address && b - address < stride_)) return b;
    return std::nullopt;
  }

  /// Whether `address` can be one more block of chunk `chunk`: a whole number of strides from
  /// the chunk's other blocks, all of them within blocks_per_chunk strides, and not inside the
  /// span another chunk is known to cover.
  bool fits(std::size_t chunk, std::uintptr_t address) const {
    const auto& mine = list_.chunks()[chunk];
    if (!mine.empty()) {
      const auto [lo, hi] = std::minmax_element(mine.begin(), mine.end());
      const std::uintptr_t low = std::min(*lo, address), high = std::max(*hi, address);
      if ((address > *lo ? address - *lo : *lo - address) % stride_ != 0) return false;
      if (high - low > (list_.blocks_per_chunk() - 1) * stride_) return false;
    }
    for (std::size_t c = 0; c < list_.chunks().size(); ++c) {
      const auto& other = list_.chunks()[c];
      if (c == chunk || other.empty()) continue;
      const auto [lo, hi] = std::minmax_element(other.begin(), other.end());
      if (address >= *lo && address < *hi + stride_) return false;
    }
    return true;
  }

  /// What owns(address) must answer, when the model knows it: the chunks whose blocks were all
  /// handed out are known exactly; of a chunk seen in part, the span between its lowest and its
  /// highest block is surely its, and past blocks_per_chunk strides from them surely not.
  enum class Why { block, inside_a_block, outside_every_chunk, unknown };
  Why owns(std::uintptr_t address) const {
    const auto& chunks = list_.chunks();
    const std::size_t span = list_.blocks_per_chunk() * stride_;
    for (const auto& blocks : chunks) {
      if (blocks.empty()) continue;
      const auto [lo, hi] = std::minmax_element(blocks.begin(), blocks.end());
      if (address >= *lo && address < *hi + stride_)
        return (address - *lo) % stride_ == 0 ? Why::block : Why::inside_a_block;
    }
    for (const auto& blocks : chunks) {
      if (blocks.empty()) return Why::unknown;  // a chunk that has shown nothing could be anywhere
      const auto [lo, hi] = std::minmax_element(blocks.begin(), blocks.end());
      // The chunk starts at most (blocks_per_chunk - 1) strides below its highest block seen,
      // and ends at most blocks_per_chunk strides past its lowest.
      const std::uintptr_t first = *hi - std::min<std::uintptr_t>(*hi, span - stride_);
      const std::uintptr_t end = *lo + span;
      const std::uintptr_t from_lo = address > *lo ? address - *lo : *lo - address;
      if (address >= first && address < end && from_lo % stride_ == 0) return Why::unknown;
    }
    return Why::outside_every_chunk;
  }

 private:
  std::size_t stride_;
  FreeList list_;
  std::vector<std::uintptr_t> live_;
};

/// ObjectPool<T>: a free list of blocks, and the objects built in them.
class Objects {
 public:
  /// Which constructor of the stage's type built an object (Item, object_types.hpp).
  enum class Ctor { tag_lvalue, tag_rvalue, two_ints, braced_list, none };
  struct Object {
    std::uintptr_t address;
    int value, plain;
    Ctor ctor;
  };

  Objects(std::size_t objects_per_chunk, std::size_t object_size)
      : size_(object_size), list_(objects_per_chunk, SIZE_MAX) {}

  const FreeList& list() const { return list_; }
  /// The bytes of a chunk: objects_per_chunk blocks of the stride of T's size.
  std::size_t chunk_bytes() const { return list_.blocks_per_chunk() * *stride_of(size_); }

  /// A create whose constructor returned: the block taken, then the object built in it.
  Slot take() { return list_.take(); }
  void created(const Slot& s, std::uintptr_t address, int value, int plain, Ctor ctor) {
    if (!s.address) list_.learn(s.chunk, address);
    live_.push_back({address, value, plain, ctor});
  }
  /// A create whose constructor threw: the block taken goes back on top, no object was made.
  void refused() { list_.give_back(list_.take()); }

  void destroy(std::uintptr_t address) {
    live_.erase(std::find_if(live_.begin(), live_.end(), [&](const Object& o) { return o.address == address; }));
    ++destructions_;
    list_.give_back({address, list_.chunk_of(address)});
  }

  /// The objects created and not destroyed, in the order they were created.
  const std::vector<Object>& live() const { return live_; }
  /// How many destructors have run: one per destroy of an object.
  int destructions() const { return destructions_; }

  /// A block handed out for the first time must not share a byte with an object's block seen
  /// before: the one it overlaps, or nullopt.
  std::optional<std::uintptr_t> overlaps(std::uintptr_t address) const {
    for (const auto& blocks : list_.chunks())
      for (std::uintptr_t b : blocks)
        if ((address >= b && address - b < size_) || (b > address && b - address < size_)) return b;
    return std::nullopt;
  }

 private:
  std::size_t size_;
  FreeList list_;
  std::vector<Object> live_;
  int destructions_ = 0;
};

}  // namespace pool_model
