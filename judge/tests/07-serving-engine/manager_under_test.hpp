// The learner's KVCacheManager as exercise 07's tests see it: a class of the same names and
// signatures, in the tests' own namespace, whose every member calls the learner's through one
// file, manager_under_test.cpp, the only test file that includes kv_cache_manager.hpp.
//
// Why: the test files are most of what a judge compiles, and none of them changes when the
// learner's header does. Behind this seam they are compiled once per build tree; an edit of the
// header recompiles that small file, as the engine's stage recompiles only
// judge/engine/paged_manager.cpp. Exercise 07's interface can sit behind a seam because it has
// no templates, as 01's (but for alloc_array), 03's, 06's and 02's pools have; the tests of 02's
// ObjectPool<T>, 04 and 05 instantiate the learner's templates and cannot.
//
// Nothing here judges: every member forwards the call, its arguments and its outcome (value or
// exception) unchanged, and what a test asserts about the learner's type itself (that it cannot
// be copied) is read in manager_under_test.cpp, where the type is complete.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "copyability.hpp"

namespace alloclab::test::kv {

/// The learner's BlockCopy: copy block `src` into block `dst`.
struct BlockCopy {
  int src, dst;
  bool operator==(const BlockCopy&) const = default;
};

/// The learner's PrefixCacheStats, field for field.
struct PrefixCacheStats {
  std::size_t queried_tokens;
  std::size_t hit_tokens;
  std::size_t evictions;
  std::size_t copies;
};

/// What the learner's `BlockCopy{a} == BlockCopy{b}` answers, or nullopt when the learner's
/// BlockCopy has no operator==.
[[nodiscard]] std::optional<bool> learners_copies_equal(BlockCopy a, BlockCopy b);

/// Whether the learner's manager can be copied, read in manager_under_test.cpp.
[[nodiscard]] Copyability traits_of_the_manager();

class KVCacheManager;

/// What `pool()` of the learner's manager answers: its BlockPool's counts, asked on every call.
class PoolView {
 public:
  [[nodiscard]] int num_blocks() const;
  [[nodiscard]] int num_free() const;
  [[nodiscard]] int refcount(int block) const;

 private:
  friend class KVCacheManager;
  explicit PoolView(const KVCacheManager& owner) : owner_(owner) {}
  const KVCacheManager& owner_;
};

/// The learner's KVCacheManager: each member calls the member of the same name.
class KVCacheManager {
 public:
  using RequestId = int;

  /// Calls the learner's constructor with two arguments, so that its default for
  /// `prefix_caching` is the one used.
  KVCacheManager(int num_blocks, int block_tokens);
  KVCacheManager(int num_blocks, int block_tokens, bool prefix_caching);
  ~KVCacheManager();
  KVCacheManager(const KVCacheManager&) = delete;
  KVCacheManager& operator=(const KVCacheManager&) = delete;

  [[nodiscard]] std::optional<int> admit(RequestId r, std::span<const int> prompt);
  /// The learner's append_token appends to a vector of its own BlockCopy, which holds what
  /// `copies` held, with its capacity, so that it allocates exactly when it would have here.
  [[nodiscard]] bool append_token(RequestId r, int token, std::vector<BlockCopy>& copies);
  void fork(RequestId parent, RequestId child);
  void release(RequestId r);
  [[nodiscard]] std::span<const int> block_table(RequestId r) const;
  [[nodiscard]] int num_tokens(RequestId r) const;
  [[nodiscard]] int slot(RequestId r, int position) const;
  [[nodiscard]] int num_free_blocks() const;
  [[nodiscard]] int num_cached_blocks() const;
  [[nodiscard]] PrefixCacheStats stats() const;
  [[nodiscard]] const PoolView& pool() const { return pool_; }

 private:
  friend class PoolView;
  struct Learners;  // the learner's manager, defined in manager_under_test.cpp
  std::unique_ptr<Learners> learners_;
  PoolView pool_{*this};
};

}  // namespace alloclab::test::kv
