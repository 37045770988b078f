// The test file that calls the learner's header: each member of the tests' KVCacheManager
// (manager_under_test.hpp) calls the learner's member of the same name, and converts what crosses
// between the two sets of types field by field. An edit of the header recompiles this file, and
// no test.
#include "kv_cache_manager.hpp"

#include <concepts>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "failing_new.hpp"
#include "manager_under_test.hpp"

namespace alloclab::test::kv {

// The tests read a block table through the returned view after the call: a table returned by
// value would be gone by then.
static_assert(std::is_same_v<decltype(std::declval<const alloclab::KVCacheManager&>().block_table(0)),
                             std::span<const int>>,
              "block_table must return std::span<const int>, a view of the request's own table, as the skeleton "
              "declares it: keep every declaration of kv_cache_manager.hpp as it is.");

struct KVCacheManager::Learners {
  alloclab::KVCacheManager m;
  template <class... Args>
  explicit Learners(Args... args) : m(args...) {}
};

Copyability traits_of_the_manager() { return copyability_of<alloclab::KVCacheManager>(); }

std::optional<bool> learners_copies_equal(BlockCopy a, BlockCopy b) {
  // Generic, so that a BlockCopy without operator== discards the comparison instead of failing to
  // compile: the test then says what is missing.
  const auto equal = [](const auto& x, const auto& y) -> std::optional<bool> {
    if constexpr (std::equality_comparable<std::remove_cvref_t<decltype(x)>>) {
      return x == y;
    } else {
      return std::nullopt;
    }
  };
  return equal(alloclab::BlockCopy{a.src, a.dst}, alloclab::BlockCopy{b.src, b.dst});
}

// The learner's constructor runs before the pointer owns it, so a constructor that throws
// leaves nothing behind, as it would with the learner's type on the stack.
KVCacheManager::KVCacheManager(int num_blocks, int block_tokens)
    : learners_(std::make_unique<Learners>(num_blocks, block_tokens)) {}
KVCacheManager::KVCacheManager(int num_blocks, int block_tokens, bool prefix_caching)
    : learners_(std::make_unique<Learners>(num_blocks, block_tokens, prefix_caching)) {}
KVCacheManager::~KVCacheManager() = default;

std::optional<int> KVCacheManager::admit(RequestId r, std::span<const int> prompt) {
  return learners_->m.admit(r, prompt);
}

namespace {

/// `from`'s copies as `To`, with `from`'s capacity, allocated outside the count of a failing heap.
template <class To, class From>
std::vector<To> converted(const std::vector<From>& from) {
  const UncountedNew uncounted;
  std::vector<To> to;
  to.reserve(from.capacity());
  for (const From& c : from) to.push_back({c.src, c.dst});
  return to;
}

}  // namespace

bool KVCacheManager::append_token(RequestId r, int token, std::vector<BlockCopy>& copies) {
  // The learner's vector holds what `copies` holds with the same capacity, so that its
  // push_back allocates (and fails, under a failing heap) exactly when it would on `copies`; and
  // `copies` gets back whatever the call left in it, whether the call returned or threw.
  std::vector<alloclab::BlockCopy> theirs = converted<alloclab::BlockCopy>(copies);
  try {
    const bool appended = learners_->m.append_token(r, token, theirs);
    copies = converted<BlockCopy>(theirs);
    return appended;
  } catch (...) {
    copies = converted<BlockCopy>(theirs);
    throw;
  }
}

void KVCacheManager::fork(RequestId parent, RequestId child) { learners_->m.fork(parent, child); }
void KVCacheManager::release(RequestId r) { learners_->m.release(r); }

// The observers are called on a const manager, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
std::span<const int> KVCacheManager::block_table(RequestId r) const {
  return std::as_const(learners_->m).block_table(r);
}
int KVCacheManager::num_tokens(RequestId r) const { return std::as_const(learners_->m).num_tokens(r); }
int KVCacheManager::slot(RequestId r, int position) const { return std::as_const(learners_->m).slot(r, position); }
int KVCacheManager::num_free_blocks() const { return std::as_const(learners_->m).num_free_blocks(); }
int KVCacheManager::num_cached_blocks() const { return std::as_const(learners_->m).num_cached_blocks(); }

PrefixCacheStats KVCacheManager::stats() const {
  const alloclab::PrefixCacheStats s = std::as_const(learners_->m).stats();
  return {s.queried_tokens, s.hit_tokens, s.evictions, s.copies};
}

int PoolView::num_blocks() const { return std::as_const(owner_.learners_->m).pool().num_blocks(); }
int PoolView::num_free() const { return std::as_const(owner_.learners_->m).pool().num_free(); }
int PoolView::refcount(int block) const { return std::as_const(owner_.learners_->m).pool().refcount(block); }

}  // namespace alloclab::test::kv
