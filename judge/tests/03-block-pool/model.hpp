// The block pool's and the paged KV cache's contract as the simplest code that can be right: a
// count per block and the free stack in a vector, and for the cache one table of blocks and a
// plain copy of every token per sequence, no buffer at all. The model stage (stage5_model.cpp)
// runs every call on this and on the header under test, and compares what a caller can observe.
//
// Misuse (a negative count, a free block, a number outside the pool, an unknown sequence) is
// for the caller to recognise with the predicates below before it calls: the model's members
// assume a call the contract lets succeed.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace block_pool_model {

class Pool {
 public:
  /// `num_blocks >= 0` blocks, all free; the stack's top is its back, so the first pops are
  /// 0, 1, 2, ...
  explicit Pool(int num_blocks) : count_(static_cast<std::size_t>(num_blocks), 0) {
    for (int b = num_blocks - 1; b >= 0; --b) push({b});
  }

  int num_blocks() const { return static_cast<int>(count_.size()); }
  int num_free() const { return static_cast<int>(free_.size()); }
  bool in_range(int b) const { return b >= 0 && b < num_blocks(); }
  bool in_use(int b) const { return in_range(b) && count_[static_cast<std::size_t>(b)] > 0; }
  int refcount(int b) const { return count_[static_cast<std::size_t>(b)]; }

  /// All or nothing: `n >= 0` blocks off the top of the stack, each with one reference.
  /// `wanted` says which block to pop where the contract leaves the choice open (the header's
  /// answer); one it cannot pop is ignored.
  std::optional<std::vector<int>> allocate(int n, const std::vector<int>& wanted = {}) {
    if (n > num_free()) return std::nullopt;
    std::vector<int> taken;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      taken.push_back(pop(i < wanted.size() ? wanted[i] : -1));
    }
    return taken;
  }

  /// `b` in use.
  void retain(int b) { ++count_[static_cast<std::size_t>(b)]; }

  /// `b` in use; its last reference puts it back on top of the stack.
  void release(int b) { release_all({b}); }

  /// Each of `blocks` (in use) loses a reference; the ones that reach zero go back on top of
  /// the stack together, in no order among themselves.
  void release_all(const std::vector<int>& blocks) {
    std::vector<int> freed;
    for (int b : blocks) {
      if (--count_[static_cast<std::size_t>(b)] == 0) freed.push_back(b);
    }
    push(freed);
  }

  /// `b` in use. Alone: `b` itself. Shared: the top of the stack (`wanted` as in allocate), and
  /// one reference to `b` fewer; -1 and no change when nothing is free.
  int make_writable(int b, int wanted = -1) {
    if (refcount(b) == 1) return b;
    if (free_.empty()) return -1;
    const int fresh = pop(wanted);
    --count_[static_cast<std::size_t>(b)];
    return fresh;
  }

 private:
  struct Free {
    int block, group;  // blocks freed by one call share a group
  };

  void push(const std::vector<int>& blocks) {
    for (int b : blocks) free_.push_back({b, groups_});
    ++groups_;
  }

  int pop(int wanted) {
    std::size_t at = free_.size() - 1;
    for (std::size_t i = free_.size(); i-- > 0 && free_[i].group == free_.back().group;) {
      if (free_[i].block == wanted) at = i;
    }
    const int b = free_[at].block;
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(at));
    count_[static_cast<std::size_t>(b)] = 1;
    return b;
  }

  std::vector<int> count_;  // references per block; 0: free
  std::vector<Free> free_;  // the free stack; its top is the back
  int groups_ = 0;
};

/// A sequence: its blocks in token order, and what each of its tokens holds.
struct Sequence {
  std::vector<int> table;
  std::vector<std::string> tokens;
};

/// Sequences are named by the caller (the stage numbers them s1, s2, ... as it makes them);
/// which id the header gives each one is the header's choice.
class Cache {
 public:
  Cache(int num_blocks, int block_tokens) : pool_(num_blocks), block_tokens_(block_tokens) {}

  const Pool& pool() const { return pool_; }
  int block_tokens() const { return block_tokens_; }
  bool live(int name) const { return seqs_.count(name) != 0; }
  const Sequence& sequence(int name) const { return seqs_.at(name); }
  const std::map<int, Sequence>& sequences() const { return seqs_; }

  void create(int name) { seqs_[name] = Sequence{}; }

  /// `name` live. A token that starts a block takes the top of the stack; one that goes into a
  /// partly filled block writes into a block of its own (make_writable: the same block when
  /// the sequence holds it alone, a copy when it is shared). False, and no change, when the
  /// block it needs is not there. `wanted` as in Pool::allocate.
  bool append(int name, const std::string& token, int wanted = -1) {
    Sequence& s = seqs_.at(name);
    if (s.tokens.size() % static_cast<std::size_t>(block_tokens_) == 0) {
      auto taken = pool_.allocate(1, {wanted});
      if (!taken) return false;
      s.table.push_back(taken->front());
    } else {
      const int mine = pool_.make_writable(s.table.back(), wanted);
      if (mine < 0) return false;
      s.table.back() = mine;
    }
    s.tokens.push_back(token);
    return true;
  }

  /// `name` live: `child` shares each of its blocks, which gain a reference.
  void fork(int name, int child) {
    seqs_[child] = seqs_.at(name);
    for (int b : seqs_.at(child).table) pool_.retain(b);
  }

  /// `name` live: its references are dropped, and the name is dead. The blocks it frees go
  /// back together: the contract does not say in which order.
  void free(int name) {
    pool_.release_all(seqs_.at(name).table);
    seqs_.erase(name);
  }

 private:
  Pool pool_;
  int block_tokens_;
  std::map<int, Sequence> seqs_;
};

}  // namespace block_pool_model
