// How one sequence of calls runs on the pool and the cache under test and on the model
// (model.hpp), with every observer compared after each call. stage5_model.cpp generates the
// sequences.
#include "block_pool_under_test.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "failing_new.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"

namespace block_pool_model {
// Named, not anonymous: the stages are compiled two to a translation unit, and an anonymous
// namespace would be shared with the other file.
namespace model_run {

namespace tested = alloclab::test::block_pool;   // the learner's types, through the seam
using alloclab::test::FailingNew;
using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;

// The constructor calls the generator makes, with the outcome the contract gives them.
struct Sizes {
  int num_blocks, block_tokens;
  std::size_t token_bytes;
  const char* text;  // as the transcript prints it
  Outcome outcome;
};
const Sizes kCacheSizes[kCacheSizeCases] = {
    {2, 3, 5, "2, 3, 5", Outcome::returned},
    {0, 2, 4, "0, 2, 4", Outcome::invalid_argument},
    {-1, 2, 4, "-1, 2, 4", Outcome::invalid_argument},
    {3, 0, 4, "3, 0, 4", Outcome::invalid_argument},
    {3, INT_MIN, 4, "3, INT_MIN, 4", Outcome::invalid_argument},
    {3, 2, 0, "3, 2, 0", Outcome::invalid_argument},
    {4, 1, SIZE_MAX / 4 + 1, "4, 1, SIZE_MAX / 4 + 1", Outcome::bad_alloc},
    {2, 2, SIZE_MAX / 4 + 1, "2, 2, SIZE_MAX / 4 + 1", Outcome::bad_alloc},
    {3, 1, SIZE_MAX / 2 + 1, "3, 1, SIZE_MAX / 2 + 1", Outcome::bad_alloc},
    {2, 3, SIZE_MAX / 3 + 1, "2, 3, SIZE_MAX / 3 + 1", Outcome::bad_alloc},  // block_tokens * token_bytes wraps to 2
    {2, INT_MAX, SIZE_MAX / 3, "2, INT_MAX, SIZE_MAX / 3", Outcome::bad_alloc},
};
constexpr int kPoolSizes[kPoolSizeCases] = {-1, -7, INT_MIN, 0, 3};

std::string lit(int v) {
  return v == INT_MIN ? "INT_MIN" : v == INT_MAX ? "INT_MAX" : std::to_string(v);
}

std::string show(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}
std::string show(const std::optional<std::vector<int>>& v) { return v ? show(*v) : "std::nullopt"; }
std::string show(const std::string& bytes) {
  std::vector<int> v;
  for (char c : bytes) v.push_back(static_cast<unsigned char>(c));
  return show(v);
}

// How the contract's endings print; kAnyLogicError stands for "a std::logic_error, whichever".
std::string ending(Outcome o) { return std::string(alloclab::test::model::name(o)); }
constexpr const char* kAnyLogicError = "throws a std::logic_error";
bool is_logic_error(Outcome o) {
  return o == Outcome::logic_error || o == Outcome::out_of_range || o == Outcome::invalid_argument;
}

// How a call ended: its outcome, and whether the heap allocation armed to fail inside it did.
struct Ending {
  Outcome outcome;
  bool heap_failed;
  // The heap failed inside the call and the call threw std::bad_alloc: the strong guarantee
  // then asks that nothing changed, whatever the call would otherwise have done.
  bool refused_by_heap() const { return heap_failed && outcome == Outcome::bad_alloc; }
};

template <class Call>
Ending call_with(int fail, Call&& call) {
  if (fail == 0) return {outcome_of(call), false};
  FailingNew failing(fail);
  const Outcome outcome = outcome_of(call);
  return {outcome, failing.fired()};
}

// The line of a call whose `fail`-th heap allocation fails, as a scratch program makes it fail
// (judge/tests/support/failing_new.hpp).
std::string with_heap(int fail, const std::string& call) {
  if (fail == 0) return call;
  return "alloclab::test::fail_nth_new(" + std::to_string(fail) + "); " + call + " alloclab::test::fail_nth_new(0);";
}

constexpr const char* kTop =
    "a block comes off the top of the free stack: a new pool hands out 0, 1, 2, ..., afterwards the block freed "
    "most recently comes out first (the blocks one free() of a sequence gives back, in any order among themselves)";

class BothSides {
 public:
  // `uses_pool` and `uses_cache`: whether the sequence calls `bp` and `c`; the transcript declares
  // only those, and only their observers are compared.
  BothSides(int pool_blocks, int cache_blocks, int block_tokens, std::size_t token_bytes, bool uses_pool,
            bool uses_cache)
      : t_(setup(pool_blocks, cache_blocks, block_tokens, token_bytes, uses_pool, uses_cache)),
        uses_pool_(uses_pool),
        uses_cache_(uses_cache),
        pool_model_(pool_blocks),
        cache_model_(cache_blocks, block_tokens),
        token_bytes_(token_bytes) {
    // The declarations are the transcript's first line: they must not throw.
    const Outcome pool = outcome_of([&] { pool_.emplace(pool_blocks); });
    if (uses_pool) {
      t_.same("alloclab::BlockPool bp(" + std::to_string(pool_blocks) + ")", Outcome::returned, pool, kBuilt);
    }
    const Outcome cache = outcome_of([&] { cache_.emplace(cache_blocks, block_tokens, token_bytes); });
    if (uses_cache) {
      t_.same("alloclab::PagedKVCache c(" + std::to_string(cache_blocks) + ", " + std::to_string(block_tokens) + ", " +
                  std::to_string(token_bytes) + ")",
              Outcome::returned, cache, kBuilt);
    }
  }

  void step(const Op& op) {
    switch (op.kind) {
      case Op::allocate: allocate(op); break;
      case Op::retain:
      case Op::release:
      case Op::make_writable:
      case Op::refcount: block_call(op); break;
      case Op::new_pool: new_pool(op); break;
      case Op::create:
      case Op::fork: make_sequence(op); break;
      case Op::append: append(op); break;
      case Op::free: free(op); break;
      case Op::length:
      case Op::token:
      case Op::block_table: read(op); break;
      case Op::new_cache: new_cache(op); break;
    }
    if (uses_pool_) same_pool("bp.", *pool_, pool_model_, kPoolRefcount);
    if (uses_cache_) same_cache();
  }

 private:
  static std::string setup(int pool_blocks, int cache_blocks, int block_tokens, std::size_t token_bytes,
                           bool uses_pool, bool uses_cache) {
    std::string line;
    if (uses_pool) line = "alloclab::BlockPool bp(" + std::to_string(pool_blocks) + ");";
    if (uses_cache) {
      line += (line.empty() ? "" : " ") + std::string("alloclab::PagedKVCache c(") + std::to_string(cache_blocks) +
              ", " + std::to_string(block_tokens) + ", " + std::to_string(token_bytes) + ");";
    }
    return line.empty() ? "// each call below builds an object of its own" : line;
  }

  // ---- the calls ---------------------------------------------------------------------------

  void allocate(const Op& op) {
    std::optional<std::vector<int>> got;
    const Ending e = call_with(op.fail, [&] { got = pool_->allocate(op.n); });
    const std::string call = "bp.allocate(" + lit(op.n) + ")";
    t_.call(with_heap(op.fail, "(void)" + call + ";"));
    if (op.n < 0) {
      return expect(call, e, Outcome::invalid_argument, "a negative count is refused with std::invalid_argument");
    }
    if (e.refused_by_heap()) return refused(op.fail);
    const bool fits = op.n <= pool_model_.num_free();
    const bool got_n = got && got->size() == static_cast<std::size_t>(op.n);
    const auto want = pool_model_.allocate(op.n, got_n ? *got : std::vector<int>{});
    t_.note(show(want));
    expect(call, e, Outcome::returned, "asking for blocks is no misuse: allocate(n) returns, a value or std::nullopt");
    t_.same(call, show(want), show(got),
            fits ? std::string("allocate(n) with n blocks free takes n of them, each with one reference: ") + kTop
                 : "fewer than n blocks are free, so allocate(n) takes none (all or nothing) and returns std::nullopt");
  }

  // retain, release, make_writable, and refcount of a number outside the pool.
  void block_call(const Op& op) {
    const auto which = block(op);
    if (!which) return;
    const int b = *which;
    static const char* const names[] = {"", "retain", "release", "make_writable", "refcount"};
    const std::string call = std::string("bp.") + names[op.kind] + "(" + lit(b) + ")";
    const bool returns_value = op.kind == Op::make_writable || op.kind == Op::refcount;
    int got = 0;
    const Ending e = call_with(op.fail, [&] {
      switch (op.kind) {
        case Op::retain: pool_->retain(b); break;
        case Op::release: pool_->release(b); break;
        case Op::make_writable: got = pool_->make_writable(b); break;
        default: got = pool_->refcount(b); break;
      }
    });
    t_.call(with_heap(op.fail, (returns_value ? "(void)" : "") + call + ";"));
    if (!pool_model_.in_range(b)) {
      return expect(call, e, Outcome::out_of_range,
                    "a block number outside the pool is refused with std::out_of_range, and nothing changes");
    }
    if (!pool_model_.in_use(b)) {
      t_.note(kAnyLogicError);
      if (!(is_logic_error(e.outcome) || e.refused_by_heap())) {
        t_.differ(call, kAnyLogicError, ending(e.outcome),
                  "a free block given to retain, release or make_writable is misuse, refused with a std::logic_error "
                  "before anything changes");
      }
      return;
    }
    if (e.refused_by_heap()) return refused(op.fail);
    if (op.kind == Op::retain) {
      pool_model_.retain(b);
      return expect(call, e, Outcome::returned, "retain of a block in use adds a reference");
    }
    if (op.kind == Op::release) {
      pool_model_.release(b);
      return expect(call, e, Outcome::returned, "release of a block in use drops a reference");
    }
    const int count = pool_model_.refcount(b);
    const bool free_block = pool_model_.num_free() > 0;
    const int want = pool_model_.make_writable(b, got);
    t_.note(std::to_string(want));
    expect(call, e, Outcome::returned, "make_writable of a block in use returns a block, or -1");
    t_.same(call, want, got,
            count == 1   ? std::string("block ") + std::to_string(b) +
                             " has one reference, its caller's, so it is writable as it is: make_writable returns it"
            : free_block ? std::string("block ") + std::to_string(b) +
                               " is shared, so the writer gets a new block with one reference, the one allocate(1) "
                               "would return, and gives up one reference to the old one: " + kTop
                         : std::string("block ") + std::to_string(b) +
                               " is shared and no block is free, so make_writable returns -1 and the caller keeps its "
                               "reference");
  }

  void new_pool(const Op& op) {
    const int n = kPoolSizes[op.n];
    const std::string var = "bp" + std::to_string(++others_);
    std::optional<tested::BlockPool> other;
    const Ending e = call_with(op.fail, [&] { other.emplace(n); });
    t_.call(with_heap(op.fail, "alloclab::BlockPool " + var + "(" + lit(n) + ");"));
    const std::string call = "alloclab::BlockPool(" + lit(n) + ")";
    if (n < 0) {
      return expect(call, e, Outcome::invalid_argument,
                    "a negative number of blocks is refused with std::invalid_argument");
    }
    if (e.refused_by_heap()) return refused(op.fail);
    expect(call, e, Outcome::returned, "a pool of 0 or more blocks can be built");
    same_pool(var + ".", *other, Pool(n), kPoolRefcount);
  }

  void new_cache(const Op& op) {
    const Sizes& s = kCacheSizes[op.n];
    const std::string var = "c" + std::to_string(++others_);
    std::optional<tested::PagedKVCache> other;
    const Ending e = call_with(op.fail, [&] { other.emplace(s.num_blocks, s.block_tokens, s.token_bytes); });
    t_.call(with_heap(op.fail, "alloclab::PagedKVCache " + var + "(" + s.text + ");"));
    if (s.outcome == Outcome::returned && e.refused_by_heap()) return refused(op.fail);
    expect(std::string("alloclab::PagedKVCache(") + s.text + ")", e, s.outcome,
           s.outcome == Outcome::invalid_argument ? "a size that is not positive is refused with std::invalid_argument"
           : s.outcome == Outcome::bad_alloc
               ? "num_blocks * block_tokens * token_bytes overflows std::size_t, so no buffer can hold the cache: "
                 "std::bad_alloc, as from a heap that cannot provide it"
               : "every size is positive and the buffer is small: the cache is built");
    if (other) same_pool(var + ".pool().", other->pool(), Pool(s.num_blocks), kCacheRefcount);
  }

  // create, and fork of `op`'s sequence.
  void make_sequence(const Op& op) {
    Seq parent{};
    if (op.kind == Op::fork) {
      const auto which = sequence(op);
      if (!which) return;
      parent = *which;
    }
    const int name = ++names_;
    const std::string var = "s" + std::to_string(name);
    const std::string call = op.kind == Op::create ? "c.create()" : "c.fork(" + parent.text + ")";
    int id = 0;
    const Ending e = call_with(op.fail, [&] {
      id = op.kind == Op::create ? cache_->create() : cache_->fork(parent.id);
    });
    t_.call(with_heap(op.fail, "auto " + var + " = " + call + ";"));
    if (op.kind == Op::fork && parent.name == 0) return expect(call, e, Outcome::invalid_argument, kUnknownSequence);
    if (e.refused_by_heap()) return refused(op.fail);
    expect(call, e, Outcome::returned,
           op.kind == Op::create ? "create() makes an empty sequence" : "fork of a live sequence makes a new one");
    for (const auto& [other, other_id] : ids_) {
      if (cache_model_.live(other) && other_id == id) {
        t_.differ(var + " == s" + std::to_string(other), "false", "true",
                  "every sequence create() or fork() makes has an id no live sequence has");
      }
    }
    ids_[name] = id;
    if (op.kind == Op::create) {
      cache_model_.create(name);
    } else {
      cache_model_.fork(parent.name, name);
    }
  }

  void append(const Op& op) {
    const auto which = sequence(op);
    if (!which) return;
    const Seq& s = *which;
    const int k = ++tokens_ % 255 + 1;
    const std::string bytes(token_bytes_, static_cast<char>(k));
    const std::string call = "c.append(" + s.text + ", std::string(" + std::to_string(token_bytes_) + ", char(" +
                             std::to_string(k) + ")).data())";
    bool ok = false;
    const Ending e = call_with(op.fail, [&] { ok = cache_->append(s.id, bytes.data()); });
    t_.call(with_heap(op.fail, "(void)" + call + ";"));
    if (s.name == 0) return expect(call, e, Outcome::invalid_argument, kUnknownSequence);
    if (e.refused_by_heap()) return refused(op.fail);
    // Which block a new one is, where the free stack leaves a choice: the header's last block.
    int last = -1;
    if (e.outcome == Outcome::returned) {
      if (auto table = observe([&] { return "c.block_table(" + s.text + ")"; }, "the sequence is live",
                               [&] { return cache_->block_table(s.id); });
          !table.empty()) {
        last = table.back();
      }
    }
    const Sequence& before = cache_model_.sequence(s.name);
    const bool new_block = before.tokens.size() % static_cast<std::size_t>(cache_model_.block_tokens()) == 0;
    const bool shared = !new_block && cache_model_.pool().refcount(before.table.back()) > 1;
    const bool want = cache_model_.append(s.name, bytes, last);
    t_.note(want ? "true, " + s.text + "'s blocks " + show(cache_model_.sequence(s.name).table) : "false");
    expect(call, e, Outcome::returned, "append to a live sequence returns true or false");
    t_.same(call, want, ok,
            new_block ? (want ? "the token starts a new block (the last one is full, or there is none), and a block "
                                "is free"
                              : "the token starts a new block (the last one is full, or there is none) and no block "
                                "is free, so append returns false and changes nothing")
            : !shared ? "the last block is partly filled and the sequence holds it alone, so the token goes into it: "
                        "no block is needed"
            : want    ? "the last block is partly filled and shared, so the token goes into a copy of it, and a block "
                        "is free for the copy (any block, block 0 included)"
                      : "the last block is partly filled and shared, so the token needs a copy of it, and no block is "
                        "free: append returns false and changes nothing");
  }

  void free(const Op& op) {
    const auto which = sequence(op);
    if (!which) return;
    const Seq& s = *which;
    const std::string call = "c.free(" + s.text + ")";
    const Ending e = call_with(op.fail, [&] { cache_->free(s.id); });
    t_.call(with_heap(op.fail, call + ";"));
    if (s.name == 0) return expect(call, e, Outcome::invalid_argument, kUnknownSequence);
    if (e.refused_by_heap()) return refused(op.fail);
    cache_model_.free(s.name);
    expect(call, e, Outcome::returned, "free of a live sequence drops its references and forgets it");
  }

  // length, token and block_table of a sequence that does not exist; token at a position
  // outside a live sequence.
  void read(const Op& op) {
    const auto which = sequence(op);
    if (!which) return;
    const Seq& s = *which;
    int pos = 0;
    if (op.kind == Op::token && s.name != 0) {
      const int length = static_cast<int>(cache_model_.sequence(s.name).tokens.size());
      const int outside[] = {-1, length, length + 1, INT_MIN, INT_MAX};
      pos = outside[op.n];
    }
    const std::string call = op.kind == Op::length        ? "c.length(" + s.text + ")"
                             : op.kind == Op::block_table ? "c.block_table(" + s.text + ")"
                                                          : "c.token(" + s.text + ", " + lit(pos) + ")";
    const Ending e = call_with(0, [&] {
      if (op.kind == Op::length) (void)cache_->length(s.id);
      if (op.kind == Op::block_table) (void)cache_->block_table(s.id);
      if (op.kind == Op::token) (void)cache_->token(s.id, pos);
    });
    t_.call("(void)" + call + ";");
    if (s.name == 0) return expect(call, e, Outcome::invalid_argument, kUnknownSequence);
    expect(call, e, Outcome::out_of_range,
           "a position outside [0, length) names no token: std::out_of_range");
  }

  // ---- handles -------------------------------------------------------------------------------

  // The block `op` names: one in use, a free one, or a number outside the pool; nothing when it
  // asks for a block in use and none is (the call is then left out).
  std::optional<int> block(const Op& op) const {
    std::vector<int> in_use, free;
    for (int b = 0; b < pool_model_.num_blocks(); ++b) (pool_model_.in_use(b) ? in_use : free).push_back(b);
    const auto nth = [&](const std::vector<int>& v) { return v[static_cast<std::size_t>(op.pick) % v.size()]; };
    if (op.which == 0) {
      if (in_use.empty()) return std::nullopt;
      return nth(in_use);
    }
    if (op.which == 1 && !free.empty()) return nth(free);
    const int outside[] = {-1, pool_model_.num_blocks(), pool_model_.num_blocks() + 1, INT_MIN, INT_MAX};
    return outside[op.pick % 5];
  }

  struct Seq {
    int id;            // the header's id
    int name;          // its name in the model, s1, s2, ...; 0 for an id no live sequence has
    std::string text;  // as the transcript prints it
  };

  // Whether a live sequence has the header's id `id`.
  bool live_id(int id) const {
    for (const auto& [name, given] : ids_) {
      if (given == id && cache_model_.live(name)) return true;
    }
    return false;
  }

  // The sequence `op` names: a live one, a freed one whose id the header has not given again,
  // or an id the header never gave to a live sequence; nothing when it asks for a live one and
  // none is (the call is then left out).
  std::optional<Seq> sequence(const Op& op) const {
    std::vector<int> live, freed;
    for (const auto& [name, id] : ids_) {
      if (cache_model_.live(name)) {
        live.push_back(name);
      } else if (!live_id(id)) {
        freed.push_back(name);
      }
    }
    const auto nth = [&](const std::vector<int>& v) { return v[static_cast<std::size_t>(op.pick) % v.size()]; };
    if (op.which == 0) {
      if (live.empty()) return std::nullopt;
      // The sequences where the call has most to show come first, and `pick` is most often 0:
      // an append into a shared, partly filled last block (a copy-on-write), a fork of a
      // sequence whose last block is partly filled (which makes one). A free takes the oldest.
      const int bt = cache_model_.block_tokens();
      const auto partly_filled = [&](int name) {
        return cache_model_.sequence(name).tokens.size() % static_cast<std::size_t>(bt) != 0;
      };
      const auto shared_last = [&](int name) {
        return partly_filled(name) && cache_model_.pool().refcount(cache_model_.sequence(name).table.back()) > 1;
      };
      // A stable partition, written out: libstdc++ 12's std::stable_partition uses
      // std::get_temporary_buffer, which newer clang++ warns is deprecated.
      const auto first = [&](const auto& wanted) {
        std::vector<int> order;
        std::copy_if(live.begin(), live.end(), std::back_inserter(order), wanted);
        std::copy_if(live.begin(), live.end(), std::back_inserter(order), [&](int name) { return !wanted(name); });
        live = order;
      };
      if (op.kind == Op::append) first(shared_last);
      if (op.kind == Op::fork) first(partly_filled);
      const int name = nth(live);
      return Seq{ids_.at(name), name, "s" + std::to_string(name)};
    }
    if (op.which == 1 && !freed.empty()) {
      const int name = nth(freed);
      return Seq{ids_.at(name), 0, "s" + std::to_string(name)};
    }
    int id = -1 - op.pick % 4;
    while (live_id(id)) id -= 1000;
    return Seq{id, 0, lit(id)};
  }

  // ---- comparing -------------------------------------------------------------------------------

  static constexpr const char* kUnknownSequence =
      "an id no live sequence has (never given out, or freed) is refused with std::invalid_argument, and nothing "
      "changes";
  static constexpr const char* kPoolRefcount =
      "refcount(b) counts the references to block b: one from allocate, one more per retain, one fewer per release "
      "and per make_writable that swaps b away; 0 when it is free";
  static constexpr const char* kCacheRefcount =
      "refcount(b) is the number of block tables that list block b: fork adds the child's, free drops the "
      "sequence's, and a copy-on-write moves the writer's to the copy; 0 when it is free";

  // The last call, `call`, ended as `e` where the contract says `want`.
  void expect(const std::string& call, const Ending& e, Outcome want, const std::string& meaning) {
    if (want != Outcome::returned) t_.note(ending(want));
    if (e.refused_by_heap() && want != Outcome::returned) return;  // a misuse refused by the heap first
    t_.same(call, want, e.outcome, meaning);
  }

  // The last call threw std::bad_alloc when its `fail`-th heap allocation failed.
  void refused(int fail) {
    t_.note("heap allocation " + std::to_string(fail) + " fails: std::bad_alloc, and nothing may change");
  }

  // The value of an observer, or a difference when it throws. `what` names it, and is only
  // called then: the observers are read after every call, and their names cost more than they.
  template <class Read, class What>
  auto observe(What&& what, const char* why, Read&& read) -> decltype(read()) {
    decltype(read()) value{};
    const Outcome o = outcome_of([&] { value = read(); });
    if (o != Outcome::returned) t_.differ(what(), "returns", ending(o), why);
    return value;
  }

  // Transcript::same, with the observer's name made only when the two differ.
  template <class T, class What>
  void same_as(What&& what, const T& model, const T& yours, std::string_view meaning) {
    if (!(model == yours)) t_.same(what(), model, yours, meaning);
  }

  static constexpr const char* kBlockTable =
      "token pos lives in block table[pos / block_tokens]; a sequence takes a new block only when its last is full "
      "or it has none, and swaps its last block for a copy only when that block is shared and partly filled; a new "
      "block comes off the top of the free stack, the most recently freed first";
  static constexpr const char* kBytes =
      "a token holds the bytes given to the append that stored it (in this sequence or, before a fork, in its "
      "parent): a copy-on-write starts the copy with the tokens already in the block, and no append writes into a "
      "block another sequence reads";
  static constexpr const char* kSlot =
      "the cache's one buffer holds block b at b * block_tokens * token_bytes bytes from its start, and token pos at "
      "slot pos % block_tokens of block table[pos / block_tokens]: the slot mapping an attention kernel reads";

  void same_pool(const std::string& prefix, const tested::BlockPool& pool, const Pool& model,
                 const char* refcount_meaning) {
    same_as([&] { return prefix + "num_blocks()"; }, model.num_blocks(), pool.num_blocks(),
            "num_blocks() is the number of blocks the pool was built with, free or not");
    same_as([&] { return prefix + "num_free()"; }, model.num_free(), pool.num_free(),
            "num_free() counts the blocks with no reference: allocate and a copy-on-write take them, the last "
            "release of a block gives it back, and a call that fails or throws changes nothing");
    for (int b = 0; b < model.num_blocks(); ++b) {
      const auto what = [&] { return prefix + "refcount(" + std::to_string(b) + ")"; };
      same_as(what, model.refcount(b), observe(what, "the block is in the pool", [&] { return pool.refcount(b); }),
              refcount_meaning);
    }
  }

  // Each live sequence's length, block table and tokens, then the pool under the cache: a block
  // table that differs says more than the counts it throws off.
  void same_cache() {
    const int bt = cache_model_.block_tokens();
    const auto tb = static_cast<long long>(token_bytes_);
    std::string bytes(token_bytes_, '\0');
    // The first token read: every other token's address is compared with its.
    int anchor_name = 0;
    std::uintptr_t anchor_address = 0;
    long long anchor_slot = -1;
    for (const auto& entry : cache_model_.sequences()) {
      const int name = entry.first;  // not a structured binding: lambdas capture it
      const Sequence& seq = entry.second;
      const int id = ids_.at(name);
      const auto s = [&] { return "s" + std::to_string(name); };
      same_as([&] { return "c.length(" + s() + ")"; }, static_cast<int>(seq.tokens.size()),
              observe([&] { return "c.length(" + s() + ")"; }, "the sequence is live",
                      [&] { return cache_->length(id); }),
              "length() counts the tokens stored: append adds one when it returns true, fork copies the parent's");
      const auto table = observe([&] { return "c.block_table(" + s() + ")"; }, "the sequence is live",
                                 [&] { return cache_->block_table(id); });
      if (table != seq.table) t_.same("c.block_table(" + s() + ")", show(seq.table), show(table), kBlockTable);
      for (int pos = 0; pos < static_cast<int>(seq.tokens.size()); ++pos) {
        const auto what = [&] { return "c.token(" + s() + ", " + std::to_string(pos) + ")"; };
        const void* p = observe(what, "pos is in [0, length)", [&] { return cache_->token(id, pos); });
        if (p == nullptr) t_.differ(what() + " == nullptr", "false", "true", "token() points at the stored token");
        std::memcpy(bytes.data(), p, token_bytes_);
        const std::string& want = seq.tokens[static_cast<std::size_t>(pos)];
        if (bytes != want) t_.same("the bytes at " + what(), show(want), show(bytes), kBytes);
        const long long slot = static_cast<long long>(seq.table[static_cast<std::size_t>(pos / bt)]) * bt + pos % bt;
        const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(p);
        if (anchor_slot < 0) {
          anchor_name = name;
          anchor_address = address;
          anchor_slot = slot;
          continue;
        }
        const auto difference = [&] {
          return "address of " + what() + " - address of c.token(s" + std::to_string(anchor_name) + ", 0)";
        };
        same_as(difference, (slot - anchor_slot) * tb, static_cast<long long>(address - anchor_address), kSlot);
      }
    }
    same_pool("c.pool().", cache_->pool(), cache_model_.pool(), kCacheRefcount);
  }

  static constexpr const char* kBuilt = "its sizes are valid (a pool may have no block at all), so it is built";

  Transcript t_;
  bool uses_pool_, uses_cache_;
  std::optional<tested::BlockPool> pool_;  // built in the constructor's body, where a throw is reported
  Pool pool_model_;
  std::optional<tested::PagedKVCache> cache_;
  Cache cache_model_;
  std::size_t token_bytes_;
  std::map<int, int> ids_;  // the header's id of every sequence made, by name
  int names_ = 0, tokens_ = 0, others_ = 0;
};

}  // namespace model_run

void run(int pool_blocks, int cache_blocks, int block_tokens, std::size_t token_bytes, const std::vector<Op>& ops) {
  bool uses_pool = false, uses_cache = false;
  for (const Op& op : ops) {
    if (op.kind <= Op::refcount) {
      uses_pool = true;
    } else if (op.kind != Op::new_pool && op.kind != Op::new_cache) {
      uses_cache = true;
    }
  }
  model_run::BothSides both(pool_blocks, cache_blocks, block_tokens, token_bytes, uses_pool, uses_cache);
  for (const Op& op : ops) both.step(op);
}

}  // namespace block_pool_model
