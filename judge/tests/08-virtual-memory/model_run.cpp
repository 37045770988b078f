// How one sequence of calls runs on the contiguous KV cache under test and on the model
// (model.hpp), with every observer compared after each call. stage7_model.cpp generates the
// sequences.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"
#include "vm_under_test.hpp"

namespace vm_model {
namespace {

using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;
using Memory = alloclab::test::vm::PhysicalMemory;
using KVCache = alloclab::test::vm::ContiguousKVCache;

Outcome outcome_of(Ending e) {
  switch (e) {
    case Ending::invalid_argument: return Outcome::invalid_argument;
    case Ending::logic_error: return Outcome::logic_error;
    default: return Outcome::returned;
  }
}

std::string ended(Ending e, const std::string& value) {
  return e == Ending::done || e == Ending::refused ? "returns " + value
                                                    : std::string(alloclab::test::model::name(outcome_of(e)));
}

std::string shown_granule(const std::optional<std::size_t>& g) {
  return g ? "granule " + std::to_string(*g) : std::string("nothing");
}

class Run {
 public:
  explicit Run(const Setup& s)
      : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))), granule_(s.granule_pages * page_),
        token_bytes_(s.token_eighths * page_ / 8), granules_(granules_for(s)),
        t_("alloclab::PhysicalMemory mem(" + std::to_string(granule_) + ", " + std::to_string(granules_) + ");"),
        memory_(granule_, granules_), cache_(memory_, s.sequences, s.max_tokens, token_bytes_),
        model_(page_, granule_, granules_, s.sequences, s.max_tokens, token_bytes_) {
    t_.call(construction(s.sequences, s.max_tokens));
    same_everything();
  }

  void apply(const Op& op) {
    last_ = {0, 0};
    // A call that names an admitted request when none is admitted is left out, and so are a
    // write or a read while nothing can be written: the sequence shrinking made by deleting the
    // call before it is the same without it.
    const bool names_one = op.kind == Op::grow || op.kind == Op::fork || op.kind == Op::release ||
                           op.kind == Op::write || op.kind == Op::read;
    if (names_one && op.pick != kUnknown && model_.sequences().empty()) return;
    switch (op.kind) {
      case Op::admit: return admit(op);
      case Op::grow: return grow(op);
      case Op::fork: return fork(op);
      case Op::release: return release(op);
      case Op::trim: return trim();
      case Op::sleep: return sleep(op);
      case Op::wake: return wake();
      case Op::write: return write(op);
      case Op::read: return read(op);
      case Op::hold: return hold();
      case Op::drop: return drop(op);
    }
  }

 private:
  std::size_t granules_for(const Setup& s) const {
    const std::size_t slots = s.sequences * ((s.max_tokens * token_bytes_ + granule_ - 1) / granule_);
    return std::clamp<std::size_t>(slots * s.granule_eighths / 8, 2, 12);
  }

  /// The cache's construction, and the caller's writes and reads of a token through data(r).
  std::string construction(std::size_t sequences, std::size_t max_tokens) const {
    const std::string tb = std::to_string(token_bytes_);
    return "alloclab::ContiguousKVCache c(mem, " + std::to_string(sequences) + ", " + std::to_string(max_tokens) + ", " +
           tb + ");\n    auto write = [&](int r, std::size_t p, int w) { std::byte* at = c.data(r) + p * " + tb +
           "; for (std::size_t k = 0; k < " + tb +
           "; ++k) at[k] = std::byte((w * 97 + k * 7) % 255 + 1); };\n"
           "    auto read = [&](int r, std::size_t p) { return std::vector<std::byte>(c.data(r) + p * " +
           tb + ", c.data(r) + (p + 1) * " + tb + "); };";
  }

  /// An admitted request, by index; or, for kUnknown or when none is admitted, an id that is not.
  int existing(int pick) const {
    const auto& live = model_.sequences();
    if (pick < kUnknown && !live.empty()) return live[static_cast<std::size_t>(pick) % live.size()].id;
    return fresh(0);
  }
  /// The smallest id not admitted; or, for kUnknown when some request is, an admitted one.
  int fresh(int pick) const {
    if (pick == kUnknown && !model_.sequences().empty()) return model_.sequences().front().id;
    int id = 1;
    while (model_.find(id) != nullptr) ++id;
    return id;
  }

  /// Compares how a call ended. While asleep a call whose arguments are misuse too may say
  /// either: the contract does not rank the two.
  void same_ending(const std::string& line, Ending want, Outcome yours, bool bad_arguments, std::string_view meaning) {
    if (want == Ending::logic_error && bad_arguments && yours == Outcome::invalid_argument) return;
    t_.same(line, outcome_of(want), yours, meaning);
  }

  static constexpr const char* kAsleep =
      "while the cache is asleep, every call but the observers and wake throws std::logic_error and changes nothing";
  static constexpr const char* kBool =
      "running out of slices or granules is a return value, false; only misuse throws";

  /// What the model's answer to a call that returns true or false means.
  struct Meanings {
    std::string_view refused_use;  // the model threw std::logic_error (asleep, or wake while awake)
    std::string_view misuse;       // the model threw std::invalid_argument
    std::string_view done, refused;
  };

  /// Runs a call that returns true or false on the header (`yours`), then on the model (`model`),
  /// and compares how it ended, what it returned, and then every observer. `bad`: the arguments
  /// are misuse too.
  template <class Yours, class Model>
  void boolean(const std::string& line, std::string_view value, bool bad, Yours&& yours, Model&& model,
               const Meanings& meant) {
    bool got = false;
    const Outcome outcome = outcome_of([&] { got = yours(); });
    const Ending e = model();
    t_.call(line, ended(e, e == Ending::done ? "true" : "false"));
    same_ending(line, e, outcome, bad,
                e == Ending::logic_error ? meant.refused_use : e == Ending::invalid_argument ? meant.misuse : kBool);
    if (outcome == Outcome::returned && (e == Ending::done || e == Ending::refused))
      t_.same(value, e == Ending::done, got, e == Ending::done ? meant.done : meant.refused);
    same_everything();
  }

  void admit(const Op& op) {
    const int r = fresh(op.pick);
    const std::size_t tokens = op.other == kOverMax ? model_.max_tokens() + 1
                                                    : std::min(static_cast<std::size_t>(op.other), model_.max_tokens());
    last_ = {r, 0};
    boolean("c.admit(" + std::to_string(r) + ", " + std::to_string(tokens) + ");", "the value c.admit returned",
            model_.find(r) != nullptr || tokens > model_.max_tokens(), [&] { return cache_.admit(r, tokens); },
            [&] { return model_.admit(r, tokens); },
            {kAsleep, "an id admitted already, or more tokens than max_tokens, throws std::invalid_argument",
             "a free slice exists and the granules the tokens need can be had: from free memory, or given back by "
             "idle slices other than the one taken",
             "no slice is free, or the granules lacking outnumber the free ones and those mapped in the other idle "
             "slices together: false, nothing changed"});
  }

  void grow(const Op& op) {
    const int r = existing(op.pick);
    const Cache::Seq* s = model_.find(r);
    const std::size_t now = s ? s->tokens : 0;
    const std::size_t tokens = op.other == kOverMax ? model_.max_tokens() + 1
                               : op.other == kShrink ? (now > 0 ? now - 1 : 0)
                                                     : std::min(now + static_cast<std::size_t>(op.other), model_.max_tokens());
    last_ = {r, 0};
    boolean("c.grow(" + std::to_string(r) + ", " + std::to_string(tokens) + ");", "the value c.grow returned",
            !s || tokens > model_.max_tokens() || tokens < now, [&] { return cache_.grow(r, tokens); },
            [&] { return model_.grow(r, tokens); },
            {kAsleep,
             "an unknown id, more tokens than max_tokens or fewer than the request holds throws std::invalid_argument",
             "the granules the new length needs beyond those mapped can be had: from free memory, or given back by "
             "idle slices",
             "the granules lacking outnumber the free ones and those mapped in idle slices together: false, nothing "
             "changed"});
  }

  void fork(const Op& op) {
    const int parent = existing(op.pick), child = fresh(op.other);
    last_ = {parent, child};
    boolean("c.fork(" + std::to_string(parent) + ", " + std::to_string(child) + ");", "the value c.fork returned",
            !model_.find(parent) || model_.find(child), [&] { return cache_.fork(parent, child); },
            [&] { return model_.fork(parent, child); },
            {kAsleep, "an unknown parent, or a child admitted already, throws std::invalid_argument",
             "a free slice exists and its partly filled slot can have a granule: free, or one the child's slice had "
             "mapped where an alias goes (released first), or one given back by another idle slice",
             "no slice is free, or the partly filled slot cannot have a granule: false, nothing changed"});
  }

  void release(const Op& op) {
    const int r = existing(op.pick);
    last_ = {r, 0};
    const std::string line = "c.release(" + std::to_string(r) + ");";
    const Outcome yours = outcome_of([&] { cache_.release(r); });
    const bool bad = !model_.find(r);
    const Ending e = model_.release(r);
    t_.call(line, e == Ending::done ? "" : ended(e, ""));
    same_ending(line, e, yours, bad,
                e == Ending::logic_error ? kAsleep
                : e == Ending::invalid_argument ? "an unknown id throws std::invalid_argument"
                                                : "release of an admitted request returns");
    if (e == Ending::done) address_.erase(r);
    same_everything();
  }

  void trim() {
    const std::string line = "c.trim();";
    std::size_t got = 0, want = 0;
    const Outcome yours = outcome_of([&] { got = cache_.trim(); });
    const Ending e = model_.trim(want);
    t_.call(line, ended(e, std::to_string(want)));
    same_ending(line, e, yours, false, e == Ending::logic_error ? kAsleep : "trim returns");
    if (yours == Outcome::returned && e == Ending::done) {
      t_.same("the value c.trim returned", want, got, "trim gives back every granule mapped in an idle slice and "
                                                      "counts them");
    }
    same_everything();
  }

  void sleep(const Op& op) {
    std::vector<int> keep;
    const auto& live = model_.sequences();
    for (std::size_t i = 0; i < live.size() && i < 4; ++i)
      if ((op.other >> i) & 1) keep.push_back(live[i].id);
    if (op.pick == kUnknown) keep.push_back(fresh(0));
    std::string list;
    for (const int r : keep) list += (list.empty() ? "" : ", ") + std::to_string(r);
    const std::string line = keep.empty() ? "c.sleep();" : "c.sleep(std::vector<int>{" + list + "});";
    const Outcome yours = outcome_of([&] { cache_.sleep(keep); });
    const bool bad = op.pick == kUnknown;
    const Ending e = model_.sleep(keep);
    t_.call(line, e == Ending::done ? "" : ended(e, ""));
    same_ending(line, e, yours, bad,
                e == Ending::logic_error       ? "sleep while asleep throws std::logic_error and changes nothing"
                : e == Ending::invalid_argument ? "an unknown id among those kept throws std::invalid_argument and "
                                                  "changes nothing"
                                                : "sleep of an awake cache returns");
    same_everything();
  }

  void wake() {
    boolean("c.wake();", "the value c.wake returned", false, [&] { return cache_.wake(); }, [&] { return model_.wake(); },
            {"wake while awake throws std::logic_error", "",
             "free memory holds a granule for every granule mapped before sleep (aliases count once)",
             "another user holds granules, and fewer are free than were mapped before sleep: false, still asleep"});
  }

  /// The token of request `r` that a write or read names, or nullopt when there is none.
  std::optional<std::size_t> position(int r, int draw) const {
    const Cache::Seq* s = model_.find(r);
    if (!s || s->tokens == 0 || model_.asleep()) return std::nullopt;
    return static_cast<std::size_t>(draw) % s->tokens;
  }

  void write(const Op& op) {
    const int r = existing(op.pick);
    const auto p = position(r, op.other);
    if (!p) return;
    const std::uint32_t w = ++writes_;
    written_[w] = {r, *p};
    t_.call("write(" + std::to_string(r) + ", " + std::to_string(*p) + ", " + std::to_string(w) + ");");
    std::byte* at = cache_.data(r) + *p * token_bytes_;
    for (std::size_t k = 0; k < token_bytes_; ++k) at[k] = static_cast<std::byte>(Cache::pattern(w, k));
    model_.write(r, *p, w);
    same_everything();
  }

  void read(const Op& op) {
    const int r = existing(op.pick);
    const auto p = position(r, op.other);
    if (!p) return;
    const std::string call = "read(" + std::to_string(r) + ", " + std::to_string(*p) + ")";
    std::vector<unsigned char> bytes(token_bytes_);
    std::memcpy(bytes.data(), cache_.data(r) + *p * token_bytes_, token_bytes_);
    model_.read(r, *p, want_, writers_);
    t_.call(call + ";", "reads " + described(writers_));
    for (std::size_t k = 0; k < token_bytes_ && std::memcmp(bytes.data(), want_.data(), token_bytes_) != 0; ++k) {
      if (bytes[k] == want_[k]) continue;
      t_.differ(call + "[" + std::to_string(k) + "]", std::to_string(want_[k]), std::to_string(bytes[k]),
                writers_[k] == 0
                    ? "no write has reached this byte since its granule was created, and a new granule reads zeros: "
                      "a granule given back and created again is a hole punched in the file, whatever it held before"
                    : "this byte holds the last write to its address, write " + std::to_string(writers_[k]) +
                          " (token " + std::to_string(written_[writers_[k]].second) + " of request " +
                          std::to_string(written_[writers_[k]].first) +
                          "), carried through forks (a full granule is shared, the partly filled one copied whole), "
                          "idle slices reused, and sleep and wake for the requests kept");
    }
    same_everything();
  }

  /// What a read returns, by the writes its bytes come from.
  static std::string described(const std::vector<std::uint32_t>& writers) {
    std::string s;
    std::optional<std::uint32_t> run;
    for (std::size_t k = 0; k < writers.size(); ++k) {
      if (run && *run == writers[k]) continue;
      run = writers[k];
      s += (s.empty() ? "" : ", then ") + (k > 0 ? "from byte " + std::to_string(k) + " " : std::string()) +
           (writers[k] == 0 ? std::string("zeros") : "write " + std::to_string(writers[k]) + "'s bytes");
    }
    return s;
  }

  void hold() {
    std::optional<std::size_t> got;
    const Outcome yours = outcome_of([&] { got = memory_.create(); });
    const auto want = model_.create();
    t_.call("(void)mem.create();", "another user of the memory; returns " + (want ? std::to_string(*want) : "std::nullopt"));
    t_.same("mem.create()", Outcome::returned, yours, "create never throws");
    t_.same("the value mem.create() returned", shown_granule(want), shown_granule(got),
            "create hands out the lowest-numbered free granule, std::nullopt when none is free");
    if (want) held_.push_back(*want);
    same_everything();
  }

  void drop(const Op& op) {
    if (held_.empty()) return;
    const std::size_t i = static_cast<std::size_t>(op.other) % held_.size(), g = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    t_.call("mem.release(" + std::to_string(g) + ");", "the other user gives its granule back");
    const Outcome yours = outcome_of([&] { memory_.release(g); });
    model_.release_granule(g);
    t_.same("mem.release(" + std::to_string(g) + ")", Outcome::returned, yours, "releasing a granule in use returns");
    same_everything();
  }

  // ---- after every call ----

  std::string slot_meaning(std::size_t s) const {
    const std::size_t slice = s / model_.slice_granules(), i = s % model_.slice_granules();
    const auto holder = model_.holder(slice);
    std::string where = "slot " + std::to_string(s) + " is slot " + std::to_string(i) + " of slice " +
                        std::to_string(slice) + ", ";
    if (model_.asleep()) return where + "and the cache is asleep: sleep gives back every granule and wake maps "
                                        "them again, so nothing is mapped";
    if (holder) {
      const Cache::Seq& q = *model_.find(*holder);
      where += "held by request " + std::to_string(*holder) + " of " + std::to_string(q.tokens) + " tokens, which needs " +
               std::to_string(model_.granules_for(q.tokens)) + " granules (ceil(tokens * token_bytes / granule)); ";
    } else {
      where += "an idle slice; ";
    }
    return where +
           "a needed slot lacking a granule gets the lowest-numbered free one; with none free, idle slices give "
           "back first (the slice idle longest, its highest mapped slot), never the slice being filled; a fork "
           "maps the parent's full granules (one granule, two slices) and copies the partly filled one into a "
           "granule of the child's; release unmaps only granules another slice maps too; wake maps new granules at "
           "the same slots, one per granule mapped before (aliases shared again), in the order of the lowest slot "
           "that mapped it, and idle slices wake unmapped";
  }

  /// When your header maps granule `g` in two slices that the model does not share it between,
  /// says so: the mistake that lets one request write into another's KV.
  std::string shared_by_mistake(const std::optional<std::size_t>& g) const {
    if (!g) return "";
    std::vector<std::size_t> slices, shared;  // the slices that map it: yours, the model's
    for (std::size_t s = 0; s < model_.slots().size(); ++s) {
      const std::size_t slice = s / model_.slice_granules();
      if (cache_.range().mapped(s) == g && std::find(slices.begin(), slices.end(), slice) == slices.end())
        slices.push_back(slice);
      if (model_.slots()[s] == g && std::find(shared.begin(), shared.end(), slice) == shared.end()) shared.push_back(slice);
    }
    if (slices.size() < 2 || slices == shared) return "";
    std::string listed;
    for (const std::size_t slice : slices) listed += (listed.empty() ? "" : " and ") + std::to_string(slice);
    return "your header maps granule " + std::to_string(*g) + " in slices " + listed +
           ", which the model does not share between them (a fork shares a granule only while both requests hold "
           "their slices): a request writing its tokens there would overwrite another's; ";
  }

  void same_everything() {
    const auto& c = cache_;
    t_.same("c.asleep()", model_.asleep(), c.asleep(), "sleep puts the cache to sleep and a wake that returns true "
                                                       "wakes it");
    t_.same("c.num_sequences()", model_.sequences().size(), c.num_sequences(),
            "admit and fork add a request, release removes one");
    std::byte* const base = c.range().base();
    // Strings are built only for a difference: this runs after every call of every sequence.
    for (const auto& q : model_.sequences()) {
      std::size_t tokens = 0, slice = 0;
      std::byte* data = nullptr;
      const Outcome answers = outcome_of([&] {
        tokens = c.num_tokens(q.id);
        slice = c.slice_of(q.id);
        data = c.data(q.id);
      });
      const auto first = address_.try_emplace(q.id, data).first;
      const auto offset = static_cast<std::ptrdiff_t>(q.slice * model_.slice_granules() * granule_);
      if (answers == Outcome::returned && tokens == q.tokens && slice == q.slice && data - base == offset &&
          data == first->second)
        continue;
      const std::string r = std::to_string(q.id);
      t_.same("c.num_tokens(" + r + ")", Outcome::returned, answers,
              "request " + r + " is admitted: num_tokens, slice_of and data answer");
      t_.same("c.num_tokens(" + r + ")", q.tokens, tokens, "admit sets the length, grow raises it, a fork copies the parent's");
      t_.same("c.slice_of(" + r + ")", q.slice, slice, slice_rule());
      t_.same("c.data(" + r + ") - c.range().base()", offset, data - base,
              "data(r) is the first byte of r's slice: slice_of(r) * slice_bytes() from the reservation's start");
      t_.same("c.data(" + r + ") moved", false, true,
              "data(r) stays where it was when r was admitted for as long as r is, sleep and wake included");
    }
    for (const int id : {last_.first, last_.second}) {
      if (id <= 0 || model_.find(id) != nullptr) continue;
      const Outcome yours = outcome_of([&] { (void)c.num_tokens(id); });
      if (yours == Outcome::invalid_argument) continue;
      t_.same("c.num_tokens(" + std::to_string(id) + ")", Outcome::invalid_argument, yours,
              "no request " + std::to_string(id) + " is admitted (or it was released, or refused): an unknown id throws "
              "std::invalid_argument");
    }
    const auto& slots = model_.slots();
    for (std::size_t s = 0; s < slots.size(); ++s) {
      const std::optional<std::size_t> got = c.range().mapped(s);
      if (got != slots[s])
        t_.differ("c.range().mapped(" + std::to_string(s) + ")", shown_granule(slots[s]), shown_granule(got),
                  shared_by_mistake(got) + slot_meaning(s));
    }
    for (std::size_t g = 0; g < model_.num_granules(); ++g) {
      if (memory_.refcount(g) == model_.refcount(g)) continue;
      t_.differ("mem.refcount(" + std::to_string(g) + ")", std::to_string(model_.refcount(g)),
                std::to_string(memory_.refcount(g)),
                "a granule's count is the number of slots that map it, plus 1 while another user holds it; a granule "
                "no slot maps is given back (count 0)");
    }
    t_.same("mem.num_free()", model_.num_free(), memory_.num_free(),
            "num_free() counts the granules whose count is 0: every granule of a new PhysicalMemory, and every one "
            "given back since");
    t_.same("c.mapped_granules()", model_.mapped_granules(), c.mapped_granules(),
            "the slots mapped in every slice, held or idle (an alias counts once per slot)");
    t_.same("c.idle_granules()", model_.idle_granules(), c.idle_granules(),
            "the slots mapped in the slices no request holds");
    t_.same("c.range().map_calls()", model_.map_calls(), c.range().map_calls(),
            "one map per slot that gets a granule (admit, grow, fork, wake), none more: a map is a system call, and a "
            "refused call changes no slot, not even for a while");
    t_.same("c.range().unmap_calls()", model_.unmap_calls(), c.range().unmap_calls(),
            "one unmap per slot that loses its granule (pressure, a fork's alias over a granule of its own, release "
            "of a shared granule, trim, sleep), none more");
    const std::size_t committed = memory_.committed_bytes();
    if (committed != model_.committed_bytes()) {
      t_.differ("mem.committed_bytes()", std::to_string(model_.committed_bytes()), std::to_string(committed),
                committed_meaning());
    }
  }

  std::string slice_rule() const {
    return "a new request takes, among the slices no request holds, the one with the most already mapped of the slots "
           "it fills with granules of its own (admit: every slot it needs; fork: its partly filled one), the lowest "
           "among equals; it keeps that slice until it is released";
  }

  std::string committed_meaning() const {
    std::string pages;
    for (std::size_t g = 0; g < model_.num_granules(); ++g) {
      std::string these;
      for (std::size_t p = 0; p < model_.pages(); ++p)
        if (model_.touched(g, p)) these += (these.empty() ? "" : ", ") + std::to_string(p);
      if (!these.empty()) pages += (pages.empty() ? "" : "; ") + std::string("granule ") + std::to_string(g) + ": page" +
                                   (these.find(',') == std::string::npos ? " " : "s ") + these;
    }
    return "the system commits a page of a granule at its first access through any mapping, a read included, and "
           "frees it when the granule's last reference goes (a hole punched in the file); a fork's copy reads the "
           "parent's partly filled granule whole and writes the child's whole, sleep's host copy reads the kept "
           "granules whole and wake's restore writes them whole; committed_bytes() asks the system (fstat), not a "
           "count of its own. Committed now, by the model, " + std::to_string(page_) + "-byte pages: " +
           (pages.empty() ? std::string("none") : pages);
  }

  std::size_t page_, granule_, token_bytes_, granules_;
  Transcript t_;
  Memory memory_;
  KVCache cache_;
  Cache model_;
  std::pair<int, int> last_{0, 0};                   // the ids the last call named
  std::map<int, std::byte*> address_;                // data(r) when r was admitted
  std::uint32_t writes_ = 0;
  std::map<std::uint32_t, std::pair<int, std::size_t>> written_;  // write -> request and token
  std::vector<std::size_t> held_;                    // granules the other user holds
  std::vector<unsigned char> want_;
  std::vector<std::uint32_t> writers_;
};

}  // namespace

void run(const Setup& setup, const std::vector<Op>& ops) {
  Run run(setup);
  for (const Op& op : ops) run.apply(op);
}

}  // namespace vm_model
