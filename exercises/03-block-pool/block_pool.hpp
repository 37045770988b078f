// AllocLab exercise 03: the refcounted copy-on-write block pool and a paged KV cache.
//
// Fill in the bodies below; keep every declaration as it is. Add private members and helper
// functions as you need them. Read chapters/03-block-pool.md first, then run
//   python3 judge/judge.py test 3
// and work through the stages in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

namespace alloclab {

/// Hands out numbered blocks `0 … num_blocks-1` and counts the references to each one.
///
/// Every member that throws changes nothing, also when it is the heap that fails (a
/// `std::bad_alloc` from memory your pool allocates): make room for what you will store before
/// you pop a block or change a count. The tests make the heap fail on purpose to check it.
class BlockPool {
 public:
  /// Stage 1. A pool whose blocks are all free.
  /// TODO: throw std::invalid_argument when num_blocks < 0 (0 is allowed: an empty pool).
  /// TODO: set up the free blocks as a stack whose first pops are 0, 1, 2, …
  explicit BlockPool([[maybe_unused]] int num_blocks) {}

  /// Stage 1. All or nothing: `n` blocks, each with a reference count of 1, taken from the
  /// top of the free stack; or std::nullopt, and no change at all, when fewer than `n` are free.
  /// TODO: n == 0 gives an empty vector; n < 0 throws std::invalid_argument.
  [[nodiscard]] std::optional<std::vector<int>> allocate([[maybe_unused]] int n) { return std::nullopt; }

  /// Stage 2. One more reference to block `b`.
  /// TODO: a free block, or a number outside the pool, throws a std::logic_error (such as
  /// std::out_of_range) and changes nothing.
  void retain([[maybe_unused]] int b) {}

  /// Stage 1. One reference fewer to block `b`; when none is left, the block goes back on
  /// top of the free stack, so it is the next one handed out.
  /// Stage 2. A free block, or a number outside the pool, throws a std::logic_error and
  /// changes nothing.
  void release([[maybe_unused]] int b) {}

  /// Stage 3. Copy-on-write, for a block about to be written by one of its owners.
  /// TODO: refcount 1: return `b` itself.
  /// TODO: shared: take the block on top of the free stack (the one allocate(1) would
  /// return) with a refcount of 1, drop one reference to `b`, and return the new block.
  /// TODO: no free block: return -1 and change nothing.
  /// TODO: a free block, or a number outside the pool, throws a std::logic_error.
  [[nodiscard]] int make_writable([[maybe_unused]] int b) { return -1; }

  /// Stage 1. How many blocks are free.
  [[nodiscard]] int num_free() const noexcept { return 0; }

  /// Stage 1. How many blocks the pool manages, free or not.
  [[nodiscard]] int num_blocks() const noexcept { return 0; }

  /// Stage 2. The number of references to block `b`: 0 when it is free.
  /// TODO: a number outside the pool throws a std::logic_error.
  [[nodiscard]] int refcount([[maybe_unused]] int b) const { return 0; }

 private:
  // TODO: your state: the reference counts and the free stack.
};

/// Stage 4. A KV cache whose sequences store their tokens in blocks of one shared buffer.
///
/// Every member that throws changes nothing, also when the heap fails inside it (a
/// `std::bad_alloc` from your tables): make room in them before you take a block or a
/// reference, because those steps cannot be undone once a later one throws.
class PagedKVCache {
 public:
  using SeqId = int;

  /// Room for `num_blocks` blocks of `block_tokens` tokens of `token_bytes` bytes each.
  /// TODO: any size <= 0 throws std::invalid_argument.
  /// TODO: a buffer size in bytes (num_blocks * block_tokens * token_bytes) that overflows
  /// std::size_t throws std::bad_alloc, as a buffer the heap cannot provide does.
  /// TODO: allocate the one buffer that holds every block.
  PagedKVCache(int num_blocks, [[maybe_unused]] int block_tokens, [[maybe_unused]] std::size_t token_bytes)
      : pool_(num_blocks) {}

  /// A new, empty sequence, with an id no live sequence has.
  [[nodiscard]] SeqId create() { return 0; }

  /// Copies `token_bytes` bytes from `token_kv` as the next token of `s`.
  /// TODO: take a new block when the last one is full, or there is none. A full block is
  /// never written again, so a full last block stays shared even when another sequence holds it.
  /// TODO: when the last block is shared and partly filled, make it writable first, and copy
  /// the tokens already in it into the new block.
  /// TODO: no free block: return false and change nothing.
  /// TODO: any call with a sequence id that does not exist throws std::invalid_argument
  /// (this holds for every member function below that takes a SeqId).
  [[nodiscard]] bool append([[maybe_unused]] SeqId s, [[maybe_unused]] const void* token_kv) { return false; }

  /// A new sequence that shares every block of `s`.
  /// TODO: each shared block gains a reference.
  [[nodiscard]] SeqId fork([[maybe_unused]] SeqId s) { return 0; }

  /// Ends sequence `s`.
  /// TODO: drop its reference to every block it holds; its id is no longer valid.
  void free([[maybe_unused]] SeqId s) {}

  /// How many tokens `s` holds.
  [[nodiscard]] int length([[maybe_unused]] SeqId s) const { return 0; }

  /// Where token `pos` of `s` is stored.
  /// TODO: a position outside [0, length) throws std::out_of_range.
  [[nodiscard]] const void* token([[maybe_unused]] SeqId s, [[maybe_unused]] int pos) const { return nullptr; }

  /// The blocks of `s`, in token order.
  [[nodiscard]] std::vector<int> block_table([[maybe_unused]] SeqId s) const { return {}; }

  /// The pool that numbers the blocks.
  [[nodiscard]] const BlockPool& pool() const noexcept { return pool_; }

 private:
  BlockPool pool_;
  // TODO: the buffer, the sizes, and one block table (and length) per live sequence.
};

}  // namespace alloclab
