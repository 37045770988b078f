// AllocLab exercise 03, reference solution: the refcounted copy-on-write block pool and a
// paged KV cache built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace alloclab {

/// Hands out numbered blocks `0 … num_blocks-1` and counts the references to each.
///
/// Policy: the free blocks form a stack. A new pool hands them out in ascending order;
/// afterwards the block freed last is the first handed out again (it is the one most likely
/// to still be warm in a cache). `allocate(n)` is all or nothing. A block in use has a
/// reference count of at least 1; `retain` and `release` move it up and down, and at zero
/// the block goes back on top of the free stack. `make_writable` is the copy-on-write step:
/// a block shared by several owners is swapped, for the one caller about to write, for a
/// private block of its own.
///
/// The pool only deals in numbers: it owns no memory for the blocks' contents, so it can
/// number pages of a GPU buffer as well as of a host buffer. It is not thread-safe, and
/// need not be: in an inference engine, one scheduler thread owns it, so a plain `int`
/// counts the references, with no atomic read-modify-write on every fork or free.
///
/// Every misuse (a free block, a number outside the pool) throws a `std::logic_error` and
/// changes nothing: a refcount that went wrong silently hands one sequence's memory to
/// another, which is far harder to find than an exception at the faulty call. Running out of
/// blocks is no misuse but an everyday event of a busy server, so it is reported by the return
/// value. Every member that throws, a `std::bad_alloc` from the heap included, changes nothing
/// (the strong guarantee).
class BlockPool {
 public:
  /// A pool of `num_blocks` free blocks; `num_blocks < 0` throws `std::invalid_argument`.
  explicit BlockPool(int num_blocks) : refcount_(checked_count(num_blocks), 0) {
    // The top of the stack is the back of the vector: push the highest number first, so
    // that a new pool hands out 0, 1, 2, …
    free_.reserve(static_cast<std::size_t>(num_blocks));
    for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
  }

  /// `n` blocks, each with a reference count of 1, taken from the top of the free stack in
  /// order; or `std::nullopt`, and no change at all, when fewer than `n` blocks are free.
  /// `n == 0` gives an empty vector; `n < 0` throws `std::invalid_argument`.
  [[nodiscard]] std::optional<std::vector<int>> allocate(int n) {
    if (n < 0) negative("BlockPool::allocate: n");
    // Decide before touching anything: a request that cannot be met in full must not take
    // some blocks and then give up, or the blocks it took are lost.
    if (static_cast<std::size_t>(n) > free_.size()) return std::nullopt;
    std::vector<int> blocks;
    blocks.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) blocks.push_back(pop_free());
    return blocks;
  }

  /// One more reference to block `b`, which must be in use.
  void retain(int b) {
    check_in_use(b, "retain");
    ++refcount_[static_cast<std::size_t>(b)];
  }

  /// One reference fewer to block `b`, which must be in use; at zero it goes back on top of
  /// the free stack.
  void release(int b) {
    check_in_use(b, "release");
    if (--refcount_[static_cast<std::size_t>(b)] == 0) free_.push_back(b);
  }

  /// Readies block `b` for a write by one of its owners. An exclusive block (count 1) is
  /// returned as it is. A shared block is replaced: the caller gets a new block with a count
  /// of 1 and gives up its reference to `b`; copying the contents is the caller's job. With
  /// no free block, returns -1 and changes nothing. `b` must be in use.
  [[nodiscard]] int make_writable(int b) {
    check_in_use(b, "make_writable");
    if (refcount_[static_cast<std::size_t>(b)] == 1) return b;
    // Take the new block first, then drop the old reference: if nothing is free, the
    // caller keeps its reference and can retry later.
    if (free_.empty()) return -1;
    const int fresh = pop_free();
    --refcount_[static_cast<std::size_t>(b)];  // was at least 2, so it stays in use
    return fresh;
  }

  [[nodiscard]] int num_free() const noexcept { return static_cast<int>(free_.size()); }
  [[nodiscard]] int num_blocks() const noexcept { return static_cast<int>(refcount_.size()); }

  /// The number of references to block `b`: 0 when it is free.
  [[nodiscard]] int refcount(int b) const {
    check_range(b, "refcount");
    return refcount_[static_cast<std::size_t>(b)];
  }

 private:
  static std::size_t checked_count(int num_blocks) {
    if (num_blocks < 0) negative("BlockPool: num_blocks");
    return static_cast<std::size_t>(num_blocks);
  }

  int pop_free() {
    const int b = free_.back();
    free_.pop_back();
    refcount_[static_cast<std::size_t>(b)] = 1;
    return b;
  }

  void check_range(int b, const char* what) const {
    if (b < 0 || b >= num_blocks()) outside_the_pool(b, what);
  }

  void check_in_use(int b, const char* what) const {
    check_range(b, what);
    if (refcount_[static_cast<std::size_t>(b)] == 0) not_in_use(b, what);
  }

  // The slow paths stay out of line, so that retain() and release() inline to a compare and
  // an increment.
  [[noreturn, gnu::noinline, gnu::cold]] static void outside_the_pool(int b, const char* what) {
    throw std::out_of_range(std::string("BlockPool::") + what + ": block " + std::to_string(b) +
                            " is outside the pool");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void not_in_use(int b, const char* what) {
    throw std::logic_error(std::string("BlockPool::") + what + ": block " + std::to_string(b) + " is free");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void negative(const char* what) {
    throw std::invalid_argument(std::string(what) + " must not be negative");
  }

  std::vector<int> refcount_;  // indexed by block number; 0 means free
  std::vector<int> free_;      // the free stack; its top is the back
};

/// A KV cache paged like virtual memory: each sequence's tokens live in fixed-size blocks
/// of one shared buffer, found through the sequence's block table.
///
/// Policy: token `pos` of a sequence lives in block `table[pos / block_tokens]`, at slot
/// `pos % block_tokens`. A sequence takes a new block only when its last one is full, so it
/// wastes at most one partly filled block. `fork` shares every block of the parent by
/// reference; the two sequences part ways only when one of them writes into a shared, partly
/// filled last block, and then only that block is copied (copy-on-write). Full blocks are
/// never written again, so they stay shared for as long as both sequences live.
///
/// Every member that throws changes nothing, even when the heap refuses an allocation in the
/// middle of it: each one makes room in its bookkeeping before it takes a block or a
/// reference, so the step that cannot be undone comes last.
class PagedKVCache {
 public:
  using SeqId = int;

  /// Room for `num_blocks` blocks of `block_tokens` tokens of `token_bytes` bytes each, in
  /// one buffer. Any size `<= 0` throws `std::invalid_argument`; a buffer the heap cannot
  /// provide throws `std::bad_alloc`, and so does one whose size in bytes overflows.
  PagedKVCache(int num_blocks, int block_tokens, std::size_t token_bytes)
      : pool_(checked_positive(num_blocks, "num_blocks")),
        block_tokens_(checked_positive(block_tokens, "block_tokens")),
        token_bytes_(checked_token_bytes(token_bytes)),
        block_bytes_(checked_product(static_cast<std::size_t>(block_tokens), token_bytes)),
        buffer_(checked_product(static_cast<std::size_t>(num_blocks), block_bytes_)) {}

  /// A new, empty sequence. Ids are never reused, so a stale id is always refused.
  [[nodiscard]] SeqId create() {
    seqs_.emplace(next_id_, Sequence{});  // may throw: the id is spent only once it is used
    return next_id_++;
  }

  /// Copies `token_bytes` bytes from `token_kv` as the next token of `s`. Returns false, and
  /// changes nothing, when a block is needed and none is free. A shared last block is copied
  /// first when it is partly filled; a full one is left shared, since it is never written again.
  [[nodiscard]] bool append(SeqId s, const void* token_kv) {
    Sequence& seq = lookup(s, "append");
    const int slot = seq.length % block_tokens_;
    if (slot == 0) {
      // The last block is full, or there is none: the token starts a new block. A full
      // block, shared or not, is never written again, so it needs no copy.
      // Room in the table first: once the block is taken, nothing may throw, or it is lost.
      reserve_one_more(seq.table);
      auto fresh = pool_.allocate(1);
      if (!fresh) return false;
      seq.table.push_back(fresh->front());
    } else {
      const int last = seq.table.back();
      if (pool_.refcount(last) > 1) {
        // Copy-on-write: another sequence still reads the tokens in `last`, so this one
        // gets a private copy of the slots already filled, then writes into the copy.
        const int mine = pool_.make_writable(last);
        if (mine < 0) return false;
        std::memcpy(block_data(mine), block_data(last), static_cast<std::size_t>(slot) * token_bytes_);
        seq.table.back() = mine;
      }
    }
    std::memcpy(slot_data(seq.table.back(), slot), token_kv, token_bytes_);
    ++seq.length;
    return true;
  }

  /// A new sequence that shares every block of `s`, for parallel sampling and beam search.
  [[nodiscard]] SeqId fork(SeqId s) {
    // The child starts as a copy of the parent's table and length. It is inserted before its
    // blocks gain an owner: an insertion that throws must not leave references nobody holds.
    const auto child = seqs_.emplace(next_id_, lookup(s, "fork")).first;
    for (int b : child->second.table) pool_.retain(b);  // blocks in a table are in use: no throw
    return next_id_++;
  }

  /// Ends sequence `s`: drops its reference to each of its blocks.
  void free(SeqId s) {
    Sequence& seq = lookup(s, "free");
    for (int b : seq.table) pool_.release(b);
    seqs_.erase(s);
  }

  [[nodiscard]] int length(SeqId s) const { return lookup(s, "length").length; }

  /// The stored bytes of token `pos` of `s`; `pos` outside `[0, length)` throws
  /// `std::out_of_range`.
  [[nodiscard]] const void* token(SeqId s, int pos) const {
    const Sequence& seq = lookup(s, "token");
    if (pos < 0 || pos >= seq.length) position_outside(pos, seq.length);
    return slot_data(seq.table[static_cast<std::size_t>(pos / block_tokens_)], pos % block_tokens_);
  }

  /// The blocks of `s`, in token order.
  [[nodiscard]] std::vector<int> block_table(SeqId s) const { return lookup(s, "block_table").table; }

  [[nodiscard]] const BlockPool& pool() const noexcept { return pool_; }

 private:
  struct Sequence {
    std::vector<int> table;
    int length = 0;
  };

  static int checked_positive(int value, const char* name) {
    if (value <= 0) not_positive(name);
    return value;
  }
  static std::size_t checked_token_bytes(std::size_t value) {
    if (value == 0) not_positive("token_bytes");
    return value;
  }
  // The product, or std::bad_alloc when it would wrap or exceed the largest buffer a vector
  // holds (which would throw std::length_error, against the kit's error policy in
  // docs/authoring.md: a size that cannot be had is exhaustion, std::bad_alloc). `b` is never
  // 0: every size is checked positive before.
  static std::size_t checked_product(std::size_t a, std::size_t b) {
    constexpr std::size_t kLargest = PTRDIFF_MAX;
    if (a > kLargest / b) buffer_too_large();
    return a * b;
  }

  // Grows the capacity geometrically, so that a push_back after it cannot throw and a long
  // sequence still reallocates its table only O(log n) times.
  static void reserve_one_more(std::vector<int>& v) {
    if (v.size() == v.capacity()) v.reserve(v.empty() ? 4 : 2 * v.size());
  }

  const Sequence& lookup(SeqId s, const char* what) const {
    auto it = seqs_.find(s);
    if (it == seqs_.end()) no_sequence(s, what);
    return it->second;
  }
  Sequence& lookup(SeqId s, const char* what) {
    return const_cast<Sequence&>(static_cast<const PagedKVCache&>(*this).lookup(s, what));
  }

  // The slow paths stay out of line, so that the members inline to their fast paths.
  [[noreturn, gnu::noinline, gnu::cold]] static void not_positive(const char* name) {
    throw std::invalid_argument(std::string("PagedKVCache: ") + name + " must be positive");
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void no_sequence(SeqId s, const char* what) {
    throw std::invalid_argument(std::string("PagedKVCache::") + what + ": no sequence " + std::to_string(s));
  }
  [[noreturn, gnu::noinline, gnu::cold]] static void buffer_too_large() { throw std::bad_alloc(); }
  [[noreturn, gnu::noinline, gnu::cold]] static void position_outside(int pos, int length) {
    throw std::out_of_range("PagedKVCache::token: position " + std::to_string(pos) + " is outside [0, " +
                            std::to_string(length) + ")");
  }

  std::byte* block_data(int b) { return buffer_.data() + static_cast<std::size_t>(b) * block_bytes_; }
  std::byte* slot_data(int b, int slot) { return block_data(b) + static_cast<std::size_t>(slot) * token_bytes_; }
  const std::byte* slot_data(int b, int slot) const {
    return buffer_.data() + static_cast<std::size_t>(b) * block_bytes_ + static_cast<std::size_t>(slot) * token_bytes_;
  }

  BlockPool pool_;
  int block_tokens_;
  std::size_t token_bytes_;
  std::size_t block_bytes_;
  std::vector<std::byte> buffer_;  // block b holds bytes [b * block_bytes_, (b + 1) * block_bytes_)
  std::unordered_map<SeqId, Sequence> seqs_;
  SeqId next_id_ = 0;
};

}  // namespace alloclab
