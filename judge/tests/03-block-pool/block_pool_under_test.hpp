// The learner's BlockPool and PagedKVCache as exercise 03's tests see them: classes of the same
// names and signatures, in the tests' own namespace, whose every member calls the learner's through
// one file, block_pool_under_test.cpp, the only test file that calls block_pool.hpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam they are compiled once per build tree; an edit of the
// header recompiles that small file (and header_in_a_second_unit.cpp, beside it).
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged. The seam's own heap block (the one that holds the learner's object) is
// taken outside the count of a failing heap (failing_new.hpp), so a test that fails the Nth
// allocation of a constructor still fails the learner's Nth.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace alloclab::test::block_pool {

class PagedKVCache;

/// The learner's BlockPool: each member calls the member of the same name. The pool that
/// PagedKVCache::pool() returns is one too, whose every call asks the learner's cache for its pool.
class BlockPool {
 public:
  explicit BlockPool(int num_blocks);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  [[nodiscard]] std::optional<std::vector<int>> allocate(int n);
  void retain(int b);
  void release(int b);
  [[nodiscard]] int make_writable(int b);
  [[nodiscard]] int num_free() const;
  [[nodiscard]] int num_blocks() const;
  [[nodiscard]] int refcount(int b) const;

 private:
  friend class PagedKVCache;
  struct Learners;
  explicit BlockPool(const PagedKVCache& owner);   // the pool of `owner`
  std::unique_ptr<Learners> learners_;
};

/// The learner's PagedKVCache: each member calls the member of the same name.
class PagedKVCache {
 public:
  using SeqId = int;

  PagedKVCache(int num_blocks, int block_tokens, std::size_t token_bytes);
  ~PagedKVCache();
  PagedKVCache(const PagedKVCache&) = delete;
  PagedKVCache& operator=(const PagedKVCache&) = delete;

  [[nodiscard]] SeqId create();
  [[nodiscard]] bool append(SeqId s, const void* token_kv);
  [[nodiscard]] SeqId fork(SeqId s);
  void free(SeqId s);
  [[nodiscard]] int length(SeqId s) const;
  [[nodiscard]] const void* token(SeqId s, int pos) const;
  [[nodiscard]] std::vector<int> block_table(SeqId s) const;
  /// The learner's pool() is asked on every call of the pool returned.
  [[nodiscard]] const BlockPool& pool() const;

 private:
  friend class BlockPool;
  struct Learners;
  std::unique_ptr<Learners> learners_;
  BlockPool pool_;
};

}  // namespace alloclab::test::block_pool
