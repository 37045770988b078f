// The test file that calls the learner's header: each member of the tests' BlockPool and
// PagedKVCache (block_pool_under_test.hpp) calls the learner's member of the same name. An edit of
// the header recompiles this file and header_in_a_second_unit.cpp, and no other test file.
#include "block_pool.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "block_pool_under_test.hpp"
#include "failing_new.hpp"

namespace alloclab::test::block_pool {

// The pool is read through the reference pool() returns: a pool returned by value would be a
// copy, gone once the call that asked for it ends.
static_assert(std::is_same_v<decltype(std::declval<const ::alloclab::PagedKVCache&>().pool()),
                             const ::alloclab::BlockPool&>,
              "pool() must return const BlockPool&, a reference to the cache's own pool, as the skeleton declares "
              "it: keep every declaration of block_pool.hpp as it is.");

struct PagedKVCache::Learners {
  std::optional<::alloclab::PagedKVCache> c;
};

struct BlockPool::Learners {
  std::optional<::alloclab::BlockPool> own;   // a pool the tests built
  const PagedKVCache* owner = nullptr;        // or the one a cache holds, asked for on every call

  ::alloclab::BlockPool& mine() { return *own; }
  // The observers are called on a const pool, as a caller holding a const reference would: an
  // observer the learner did not declare const does not compile here.
  [[nodiscard]] const ::alloclab::BlockPool& seen() const {
    return own ? *own : std::as_const(*owner->learners_->c).pool();
  }
};

BlockPool::BlockPool(int num_blocks) : learners_(uncounted_holder<Learners>()) { learners_->own.emplace(num_blocks); }
BlockPool::BlockPool(const PagedKVCache& owner) : learners_(uncounted_holder<Learners>()) { learners_->owner = &owner; }
BlockPool::~BlockPool() = default;

std::optional<std::vector<int>> BlockPool::allocate(int n) { return learners_->mine().allocate(n); }
void BlockPool::retain(int b) { learners_->mine().retain(b); }
void BlockPool::release(int b) { learners_->mine().release(b); }
int BlockPool::make_writable(int b) { return learners_->mine().make_writable(b); }
int BlockPool::num_free() const { return learners_->seen().num_free(); }
int BlockPool::num_blocks() const { return learners_->seen().num_blocks(); }
int BlockPool::refcount(int b) const { return learners_->seen().refcount(b); }

PagedKVCache::PagedKVCache(int num_blocks, int block_tokens, std::size_t token_bytes)
    : learners_(uncounted_holder<Learners>()), pool_(*this) {
  learners_->c.emplace(num_blocks, block_tokens, token_bytes);
}
PagedKVCache::~PagedKVCache() = default;

PagedKVCache::SeqId PagedKVCache::create() { return learners_->c->create(); }
bool PagedKVCache::append(SeqId s, const void* token_kv) { return learners_->c->append(s, token_kv); }
PagedKVCache::SeqId PagedKVCache::fork(SeqId s) { return learners_->c->fork(s); }
void PagedKVCache::free(SeqId s) { learners_->c->free(s); }
int PagedKVCache::length(SeqId s) const { return std::as_const(*learners_->c).length(s); }
const void* PagedKVCache::token(SeqId s, int pos) const { return std::as_const(*learners_->c).token(s, pos); }
std::vector<int> PagedKVCache::block_table(SeqId s) const { return std::as_const(*learners_->c).block_table(s); }
const BlockPool& PagedKVCache::pool() const { return pool_; }

}  // namespace alloclab::test::block_pool
