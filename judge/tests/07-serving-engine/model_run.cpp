// How one sequence of calls runs on the manager under test and on the model (model.hpp), with
// every observer compared after each call. stage5_model.cpp generates the sequences.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "failing_new.hpp"
#include "manager_under_test.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"
#include "prefix_collisions.hpp"

namespace kv_model {
namespace {

using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;
using alloclab::test::kv::BlockCopy;
using alloclab::test::kv::KVCacheManager;

std::string listed(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string shown_copies(const std::vector<Copy>& copies) {
  std::string s = "[";
  for (std::size_t i = 0; i < copies.size(); ++i) {
    s += (i ? ", {" : "{") + std::to_string(copies[i].src) + ", " + std::to_string(copies[i].dst) + "}";
  }
  return s + "]";
}

std::string shown_copies(const std::vector<BlockCopy>& copies) {
  std::vector<Copy> same;
  for (const auto& c : copies) same.push_back({c.src, c.dst});
  return shown_copies(same);
}

/// What a call that may run out of blocks returned or threw, as the transcript says it.
std::string ended(Outcome outcome, const std::string& value) {
  return outcome == Outcome::returned ? "returns " + value : std::string(alloclab::test::model::name(outcome));
}

Outcome outcome_of(Ending e) {
  switch (e) {
    case Ending::invalid_argument: return Outcome::invalid_argument;
    case Ending::out_of_range: return Outcome::out_of_range;
    default: return Outcome::returned;
  }
}

class Run {
 public:
  Run(int blocks, int block_tokens, bool caching)
      : t_(setup(blocks, block_tokens, caching)),
        m_(blocks, block_tokens, caching), model_(blocks, block_tokens, caching) {
    same_everything(nullptr);
  }

  static std::string setup(int blocks, int block_tokens, bool caching) {
    return "alloclab::KVCacheManager m(" + std::to_string(blocks) + ", " + std::to_string(block_tokens) + ", " +
           (caching ? "true" : "false") + "); std::vector<alloclab::BlockCopy> copies;";
  }

  void apply(const Op& op) {
    threw_ = false;
    // A call that names an admitted request when none is admitted is left out: the sequence
    // that shrinking made by deleting the admit before it is the same without it.
    if (op.kind != Op::admit && op.pick != kUnknown && model_.requests().empty()) return;
    last_ = Called{op.kind, op.kind == Op::admit ? fresh(op.pick) : existing(op.pick),
                   op.kind == Op::fork ? fresh(op.other) : 0};
    switch (op.kind) {
      case Op::admit: admit(op); break;
      case Op::append: append(op); break;
      case Op::fork: fork(op); break;
      case Op::release: release(op); break;
      case Op::slot: slot(op); break;
    }
  }

 private:
  /// The ids a call names: `id` (admit's, append's, fork's parent…) and fork's `child`.
  struct Called {
    Op::Kind kind;
    int id, child;
  };

  /// An admitted request, by index; or, for kUnknown or when none is admitted, an id that is not.
  int existing(int pick) const {
    const auto& live = model_.requests();
    if (pick < kUnknown && !live.empty()) return live[static_cast<std::size_t>(pick) % live.size()].id;
    return fresh(0);
  }
  /// The smallest id not admitted; or, for kUnknown when some request is, an admitted one.
  int fresh(int pick) const {
    if (pick == kUnknown && !model_.requests().empty()) return model_.requests().front().id;
    int id = 1;
    while (model_.find(id) != nullptr) ++id;
    return id;
  }

  /// Runs `call` on the header, the `fail`-th heap allocation inside it failing; true when it
  /// threw std::bad_alloc because of that, so that the model must stay as it was.
  template <class Call>
  bool failed(int fail, Outcome& yours, Call&& call) {
    if (fail == 0) {
      yours = outcome_of(call);
      return false;
    }
    bool fired = false;
    {
      alloclab::test::FailingNew failing(fail);
      yours = outcome_of(call);
      fired = failing.fired();
    }
    return fired && yours == Outcome::bad_alloc;
  }

  /// The line of a call, with its failing allocation when there is one.
  void record(const std::string& line, int fail, bool fired, const std::string& note) {
    const std::string said =
        fired ? "heap allocation " + std::to_string(fail) + " inside it fails: throws std::bad_alloc" : note;
    t_.call(line, said);
  }

  static constexpr const char* kBadAlloc =
      "a call whose heap allocation fails may throw std::bad_alloc, and then changes nothing";

  /// The prompt of an admit: `keep` tokens of a token sequence seen before (`base`, counted
  /// among the requests admitted, then the prompts admitted and requests released, the latest
  /// first: the ones whose blocks are likeliest to be cached still), then the tail's tokens.
  std::vector<int> prompt_of(const Op& op) const {
    const std::size_t live = model_.requests().size(), earlier = live + seen_.size();
    std::vector<int> prompt;
    if (op.base > 0 && earlier > 0 && op.lead == 0) {
      const std::size_t i = static_cast<std::size_t>(op.base - 1) % earlier;
      const auto& from = i < live ? model_.requests()[i].tokens : seen_[seen_.size() - 1 - (i - live)];
      prompt.assign(from.begin(), from.begin() + std::min<std::ptrdiff_t>(op.keep, std::ssize(from)));
    }
    if (op.lead > 0) {
      const auto& pair = alloclab::test::kv::kCollisions[static_cast<std::size_t>(op.lead - 1) / 2];
      const auto& run = op.lead % 2 == 1 ? pair.a : pair.b;
      prompt.insert(prompt.end(), run.begin(), run.end());
    }
    for (int i = 0; i < op.tail_length; ++i) prompt.push_back(((op.tail_bits >> i) & 1) + kWide[op.wide]);
    return prompt;
  }

  void admit(const Op& op) {
    const std::vector<int> prompt = prompt_of(op);
    std::optional<int> got;
    Outcome yours;
    const std::string line = "m.admit(" + std::to_string(last_.id) + ", std::vector" +
                             (prompt.empty() ? "<int>{}" : "{" + listed(prompt) + "}") + ");";
    const bool fired = failed(op.fail, yours, [&] { got = m_.admit(last_.id, prompt); });
    if (fired) {
      record(line, op.fail, true, "");
      t_.same(line, Outcome::bad_alloc, yours, kBadAlloc);
      threw_ = true;
      same_everything(nullptr);
      return;
    }
    int hits = 0;
    const Ending e = model_.admit(last_.id, prompt, hits);
    const std::string value = e == Ending::refused ? "std::nullopt" : std::to_string(hits);
    record(line, op.fail, false, ended(outcome_of(e), value));
    t_.same(line, outcome_of(e), yours,
            e == Ending::invalid_argument
                ? "an id already admitted, or an empty prompt, throws std::invalid_argument and changes nothing"
                : "admit either gives the prompt its blocks or returns std::nullopt; only misuse throws");
    if (yours != Outcome::returned) return same_everything(nullptr);
    t_.same("the value m.admit returned", value, got ? std::to_string(*got) : std::string("std::nullopt"),
            e == Ending::refused ? admit_refused() : got ? admit_hits() : admit_fits());
    if (e == Ending::done) seen_.push_back(prompt);
    same_everything(&last_);
  }

  std::string admit_refused() const {
    return "the prompt needs more blocks than it hits, and the rest cannot be had even by evicting (the idle blocks "
           "plus the cached blocks no request uses, minus those the prompt hits): std::nullopt, nothing changed";
  }
  std::string admit_fits() const {
    return "the blocks the prompt needs besides its hits can be had: the idle blocks plus the cached blocks no "
           "request uses, minus the unused ones the prompt hits, are enough, so admit gives them and returns the "
           "hit tokens";
  }
  std::string admit_hits() const {
    if (!model_.caching()) return "with prefix caching off, admit never hits: it returns 0";
    return "admit returns hits * block_tokens: the prompt's leading full blocks whose whole prefix is cached, "
           "stopping at the first miss, and at most (len - 1) / block_tokens of them (the last prompt token is "
           "always computed)";
  }

  void append(const Op& op) {
    const int token = op.other + kWide[op.wide];
    bool got = false;
    Outcome yours;
    const std::string line = "m.append_token(" + std::to_string(last_.id) + ", " + std::to_string(token) + ", copies);";
    const bool fired = failed(op.fail, yours, [&] { got = m_.append_token(last_.id, token, copies_); });
    if (fired) {
      record(line, op.fail, true, "");
      t_.same(line, Outcome::bad_alloc, yours, kBadAlloc);
      threw_ = true;
      same_everything(nullptr);
      return;
    }
    const Ending e = model_.append_token(last_.id, token, model_copies_);
    const bool done = e == Ending::done;
    record(line, op.fail, false, ended(outcome_of(e), done ? "true" : "false"));
    t_.same(line, outcome_of(e), yours,
            e == Ending::invalid_argument ? "an unknown id throws std::invalid_argument and changes nothing"
                                                    : "append_token returns true or false; only misuse throws");
    if (yours == Outcome::returned) {
      t_.same("the value m.append_token returned", done, got,
              done ? "a token needs a block when the last one is full, or a copy when the last one is partly filled "
                     "and shared; it gets one when a block is idle or cached and unused, and the rest needs none"
                   : "the token needs a new block (the last is full) or a copy (the last is partly filled and "
                     "shared), and no block is idle nor cached and unused: false, nothing changed");
    }
    same_everything(yours == Outcome::returned && done ? &last_ : nullptr);
  }

  void fork(const Op& op) {
    Outcome yours;
    const std::string line = "m.fork(" + std::to_string(last_.id) + ", " + std::to_string(last_.child) + ");";
    const bool fired = failed(op.fail, yours, [&] { m_.fork(last_.id, last_.child); });
    if (fired) {
      record(line, op.fail, true, "");
      t_.same(line, Outcome::bad_alloc, yours, kBadAlloc);
      threw_ = true;
      same_everything(nullptr);
      return;
    }
    const Ending e = model_.fork(last_.id, last_.child);
    record(line, op.fail, false, e == Ending::done ? "" : "throws std::invalid_argument");
    t_.same(line, outcome_of(e), yours,
            e == Ending::done ? "a known parent forks into an id not admitted"
                                        : "an unknown parent, or a child id already admitted, throws "
                                          "std::invalid_argument and changes nothing");
    same_everything(e == Ending::done ? &last_ : nullptr);
  }

  void release(const Op& op) {
    Outcome yours;
    const Manager::Request* request = model_.find(last_.id);
    const std::vector<int> tokens = request ? request->tokens : std::vector<int>{};
    const std::string line = "m.release(" + std::to_string(last_.id) + ");";
    const bool fired = failed(op.fail, yours, [&] { m_.release(last_.id); });
    if (fired) {
      record(line, op.fail, true, "");
      t_.same(line, Outcome::bad_alloc, yours, kBadAlloc);
      threw_ = true;
      same_everything(nullptr);
      return;
    }
    const Ending e = model_.release(last_.id);
    record(line, op.fail, false, e == Ending::done ? "" : "throws std::invalid_argument");
    t_.same(line, outcome_of(e), yours,
            e == Ending::done ? "release of an admitted id returns"
                                        : "an unknown id throws std::invalid_argument and changes nothing");
    if (e == Ending::done) seen_.push_back(tokens);
    same_everything(e == Ending::done ? &last_ : nullptr);
  }

  void slot(const Op& op) {
    int got = 0;
    Outcome yours;
    const std::string line = "m.slot(" + std::to_string(last_.id) + ", " + std::to_string(op.other) + ");";
    yours = outcome_of([&] { got = m_.slot(last_.id, op.other); });
    const Manager::Request* q = model_.find(last_.id);
    const std::optional<int> want = q ? model_.slot(*q, op.other) : std::nullopt;
    const Outcome wanted = !q ? Outcome::invalid_argument : !want ? Outcome::out_of_range : Outcome::returned;
    record(line, 0, false, ended(wanted, want ? std::to_string(*want) : ""));
    t_.same(line, wanted, yours,
            !q    ? "an unknown id throws std::invalid_argument"
            : !want ? "a position outside [0, num_tokens(r)) throws std::out_of_range"
                    : "a position inside the request has a slot");
    if (want) t_.same("the value m.slot returned", *want, got, kSlot);
    same_everything(nullptr);
  }

  static constexpr const char* kSlot =
      "slot(r, p) is table[p / block_tokens] * block_tokens + p % block_tokens, where token p's keys and values are";

  /// What the model's table of request `id` means, after `op` (the call just made, when it
  /// changed something).
  std::string table_meaning(int id, const Called* op) const {
    const std::string taking =
        "each new block is taken in turn, for the request's blocks in token order: the pool's idle block on top of "
        "its stack (the one given back last) while any is idle, else the cached block unused longest";
    if (op == nullptr || (op->id != id && !(op->kind == Op::fork && op->child == id))) {
      return "a call that changes no request (or another one) leaves this request's table as it was";
    }
    switch (op->kind) {
      case Op::admit:
        return "the table lists the prompt's hits first, then one new block for each other block of the prompt; " +
               taking;
      case Op::append:
        return "a token takes a new block only when the last one is full; when the last one is partly filled and "
               "shared it is replaced by a copy; " +
               taking;
      case Op::fork: return "the child gets the parent's block table, every block shared";
      default: return "the table lists the request's blocks in token order";
    }
  }

  std::string refcount_meaning(int b) const {
    std::vector<int> holders;
    for (const auto& q : model_.requests()) {
      if (std::find(q.table.begin(), q.table.end(), b) != q.table.end()) holders.push_back(q.id);
    }
    const std::string who = holders.empty()       ? std::string("none")
                            : holders.size() == 1 ? "request " + listed(holders)
                                                  : "requests " + listed(holders);
    std::string meaning = "a block's count is the number of requests whose table holds it (" + who + ")";
    if (!model_.caching()) return meaning + "; with prefix caching off, the cache holds nothing";
    const auto key = model_.key_of(b);
    return meaning + ", plus 1 while the cache can find it (" +
           (key ? "it can, under the prefix {" + listed(*key) + "}" : std::string("it cannot")) + ")";
  }

  /// Transcript::same, whose meaning says first, after a call that threw std::bad_alloc, that the
  /// call had to change nothing.
  template <class T>
  void same(std::string_view observer, const T& model, const T& yours, std::string_view meaning) {
    if (model == yours) return;
    if (!threw_) return t_.same(observer, model, yours, meaning);
    t_.same(observer, model, yours,
            "the last call threw std::bad_alloc, so it must have changed nothing (do everything that allocates "
            "first, then the steps that cannot be undone); and " + std::string(meaning));
  }

  void same_everything(const Called* op) {
    // Strings are built only for a difference: this runs after every call of every sequence.
    for (const auto& q : model_.requests()) {
      std::span<const int> table;
      int tokens = 0;
      const Outcome answers = outcome_of([&] {
        table = m_.block_table(q.id);
        tokens = m_.num_tokens(q.id);
      });
      if (answers != Outcome::returned) {
        const std::string r = std::to_string(q.id);
        same("m.block_table(" + r + ")", Outcome::returned, answers,
             "request " + r + " is admitted: block_table and num_tokens answer");
      }
      if (tokens != static_cast<int>(q.tokens.size())) {
        same("m.num_tokens(" + std::to_string(q.id) + ")", static_cast<int>(q.tokens.size()), tokens,
             "num_tokens counts the prompt's tokens and every token appended (a child starts with its parent's)");
      }
      if (!std::equal(table.begin(), table.end(), q.table.begin(), q.table.end())) {
        same("m.block_table(" + std::to_string(q.id) + ")", q.table, std::vector<int>(table.begin(), table.end()),
             table_meaning(q.id, op));
      }
      for (int p = 0; p < static_cast<int>(q.tokens.size()); ++p) {
        int got = -1;
        const Outcome yours = outcome_of([&] { got = m_.slot(q.id, p); });
        if (yours != Outcome::returned || got != *model_.slot(q, p)) {
          const std::string call = "m.slot(" + std::to_string(q.id) + ", " + std::to_string(p) + ")";
          same(call, Outcome::returned, yours, "the position is inside the request");
          same(call, *model_.slot(q, p), got, kSlot);
        }
      }
    }
    // The ids the call named that the model says are not admitted (a released request, a refused
    // admit or fork): an exception is dear, so not every id ever named.
    for (const int id : {last_.id, last_.child}) {
      if (id <= 0 || model_.find(id) != nullptr) continue;
      const Outcome yours = outcome_of([&] { (void)m_.num_tokens(id); });
      if (yours != Outcome::invalid_argument) {
        same("m.num_tokens(" + std::to_string(id) + ")", Outcome::invalid_argument, yours,
                "no request " + std::to_string(id) + " is admitted (or it was released): an unknown id throws "
                "std::invalid_argument");
      }
    }
    same("m.num_free_blocks()", model_.num_free_blocks(), m_.num_free_blocks(),
            "num_free_blocks() is the pool's idle blocks plus the cached blocks no request uses");
    same("m.num_cached_blocks()", model_.num_cached_blocks(), m_.num_cached_blocks(),
            model_.caching()
                ? "num_cached_blocks() counts the keys the cache holds, one per cached block, used or not: every full "
                  "prompt block and every block a token fills becomes findable, even when the blocks before it were "
                  "evicted, unless another block still holds its key once the call's own evictions are done (one "
                  "block per key: a key the call evicts goes to its new block), and stays until it is evicted"
                : "with prefix caching off, nothing is ever cached");
    const auto st = m_.stats();
    const auto& want = model_.stats();
    same("m.stats().queried_tokens", want.queried_tokens, st.queried_tokens,
            model_.caching() ? "every successful admit adds its prompt's length, and nothing else does"
                             : "with prefix caching off, nothing is queried: queried_tokens stays 0");
    same("m.stats().hit_tokens", want.hit_tokens, st.hit_tokens,
            "every successful admit adds the tokens it reported cached, and nothing else does");
    same("m.stats().evictions", want.evictions, st.evictions,
            "a cached block is evicted only when no block of the pool is idle: each one taken from the unused cached "
            "blocks counts once");
    same("m.stats().copies", want.copies, st.copies, "stats().copies counts the copies append_token ordered");
    if (copies_.size() != model_copies_.size() ||
        !std::equal(copies_.begin(), copies_.end(), model_copies_.begin(),
                    [](const BlockCopy& a, const Copy& b) { return a.src == b.src && a.dst == b.dst; })) {
      same("copies", shown_copies(model_copies_), shown_copies(copies_),
              "append_token adds {shared block, new block} at the end of `copies` for each copy-on-write, keeps what "
              "was there, and adds nothing otherwise");
    }
    same("m.pool().num_free()", model_.idle_blocks(), m_.pool().num_free(),
            "the pool's idle blocks are those no request holds and the cache cannot find");
    for (int b = 0; b < model_.num_blocks(); ++b) {
      if (model_.refcount(b) != m_.pool().refcount(b)) {
        same("m.pool().refcount(" + std::to_string(b) + ")", model_.refcount(b), m_.pool().refcount(b),
                refcount_meaning(b));
      }
    }
  }

  Transcript t_;
  Called last_{Op::slot, 0, 0};
  bool threw_ = false;  // the last call threw std::bad_alloc when its heap allocation failed
  KVCacheManager m_;
  Manager model_;
  std::vector<BlockCopy> copies_;
  std::vector<Copy> model_copies_;
  std::vector<std::vector<int>> seen_;  // prompts admitted and requests released, to build prompts from
};

}  // namespace

void run(int blocks, int block_tokens, bool caching, const std::vector<Op>& ops) {
  if (blocks < 0 || block_tokens <= 0) {
    const std::string line = "alloclab::KVCacheManager m(" + std::to_string(blocks) + ", " +
                             std::to_string(block_tokens) + ", " + (caching ? "true" : "false") + ");";
    Transcript t(line);
    t.same(line, Outcome::invalid_argument,
           outcome_of([&] { KVCacheManager bad(blocks, block_tokens, caching); }),
           "num_blocks < 0 or block_tokens <= 0 throws std::invalid_argument");
    return;
  }
  Run run(blocks, block_tokens, caching);
  for (const Op& op : ops) run.apply(op);
}

}  // namespace kv_model

