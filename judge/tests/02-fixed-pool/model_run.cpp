// How one sequence of calls runs on the pool under test and on the model (model.hpp), with every
// observer compared after each call. stage5_model.cpp generates the sequences.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloclab_test.hpp"
#include "failing_new.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_heap.hpp"
#include "object_pool_under_test.hpp"
#include "object_types.hpp"
#include "pool_under_test.hpp"

namespace pool_model {
namespace {

using alloclab::test::address;
using alloclab::test::FailingNew;
using alloclab::test::news_in_use;
using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;

std::string big(std::size_t n) {
  if (n == SIZE_MAX) return "SIZE_MAX";
  if (n > SIZE_MAX - 100) return "SIZE_MAX - " + std::to_string(SIZE_MAX - n);
  for (std::size_t k : {2, 3, 4, 5, 6, 7, 16}) {
    const std::size_t m = SIZE_MAX / k;
    if (n + 100 < m || n > m + 100) continue;
    return "SIZE_MAX / " + std::to_string(k) +
           (n == m  ? ""
            : n > m ? " + " + std::to_string(n - m)
                    : " - " + std::to_string(m - n));
  }
  return std::to_string(n);
}

std::string nth(long n) {
  const char* suffix = n % 10 == 1 && n % 100 != 11   ? "st"
                       : n % 10 == 2 && n % 100 != 12 ? "nd"
                       : n % 10 == 3 && n % 100 != 13 ? "rd"
                                                      : "th";
  return std::to_string(n) + suffix;
}

// What the sequence's heap (model_heap.hpp) did in a call that a pool may not count on: the
// blocks it put below every block it gave before, which a heap whose addresses only grow never
// does. Empty when it put none there.
std::string placed_below(const std::vector<ModelHeap::Given>& given) {
  std::vector<std::string> sizes;
  for (const auto& g : given)
    if (g.below) sizes.push_back(std::to_string(g.bytes) + "-byte");
  if (sizes.empty()) return "";
  std::string which = "the " + sizes[0];
  for (std::size_t i = 1; i < sizes.size(); ++i) which += (i + 1 == sizes.size() ? " and the " : ", the ") + sizes[i];
  return "the heap puts " + which + (sizes.size() == 1 ? " block" : " blocks") +
         " it gives here below every block it gave before";
}

// A call made while the `fail`-th heap allocation inside it is refused: how it ended, whether
// the refusal happened, how many heap blocks the call took and kept, and the blocks the heap
// gave it.
struct Measured {
  Outcome outcome;
  bool fired;
  long taken;
  std::vector<ModelHeap::Given> given;
};

template <class Call>
Measured measured(long fail, Call&& call) {
  const long before = news_in_use();
  Measured m{};
  {
    const ModelHeap::Call placed;
    FailingNew failing(fail);
    m.outcome = outcome_of(std::forward<Call>(call));
    m.fired = failing.fired();
  }
  m.taken = news_in_use() - before;
  m.given = ModelHeap::get().given();
  return m;
}

// Adds what the heap did in the call to its line of the transcript.
void say_where(Transcript& t, const Measured& m) {
  if (const std::string below = placed_below(m.given); !below.empty()) t.note(below);
}

// Names the blocks handed out so far: `p1`, `p2`, ... (or `o1`, ...), each address by the
// variable it was first returned in.
class Names {
 public:
  explicit Names(char letter) : letter_(letter) {}
  std::string fresh() { return std::string(1, letter_) + std::to_string(++count_); }
  void add(std::uintptr_t a, const std::string& name) { known_.push_back({a, name}); }
  const std::string& of(std::uintptr_t a) const {
    for (const auto& [b, name] : known_)
      if (b == a) return name;
    return none_;
  }
  /// What `a` is, as the transcript says it: a name, a place inside a named block, or new.
  std::string describe(std::uintptr_t a, std::size_t extent) const {
    if (a == 0) return "nullptr";
    if (a == address(decoy))
      return "the address the caller left in the first 8 bytes of a block it held, read as a link";
    for (const auto& [b, name] : known_)
      if (b == a) return name;
    for (const auto& [b, name] : known_)
      if (a > b && a - b < extent) return "static_cast<char*>(" + name + ") + " + std::to_string(a - b);
    return kNew;
  }
  static constexpr const char* kNew = "a block never handed out before";

 private:
  char letter_;
  int count_ = 0;
  std::vector<std::pair<std::uintptr_t, std::string>> known_;
  std::string none_ = "?";
};

std::string near(const std::string& name, long offset) {
  if (offset == 0) return name;
  return "static_cast<char*>(" + name + ") " + (offset > 0 ? "+ " : "- ") +
         std::to_string(offset > 0 ? offset : -offset);
}

// The bytes a caller writes into a block it holds: the decoy's address, then bytes distinct per
// block.
std::vector<unsigned char> pattern(std::size_t n, int serial) {
  std::vector<unsigned char> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(serial * 29 + i * 7 + 1);
  const std::uintptr_t link = address(decoy);
  std::memcpy(bytes.data(), &link, std::min(n, sizeof link));
  return bytes;
}

constexpr const char* kCounts[] = {
    "block_size() is the stride: the requested size raised to at least sizeof(void*), rounded up to a multiple of "
    "alignof(std::max_align_t); it never changes",
    "blocks_per_chunk() is the constructor's second argument, 1024 when it is left out; it never changes",
    "the constructor adds the first chunk, and allocate adds one more only when no block is free; a throwing "
    "allocate adds none",
    "free_blocks() counts the blocks allocate can hand out before the pool must grow: a new chunk adds "
    "blocks_per_chunk(), allocate takes one, deallocate gives one back, and a throwing allocate changes nothing",
    "capacity() is chunk_count() times blocks_per_chunk(): the blocks of every chunk, free or not",
};

template <class Tested>
void same_counts(Transcript& t, const Tested& pool, const Pool& model) {
  t.same("pool.block_size()", model.stride(), pool.block_size(), kCounts[0]);
  t.same("pool.blocks_per_chunk()", model.list().blocks_per_chunk(), pool.blocks_per_chunk(), kCounts[1]);
  t.same("pool.chunk_count()", model.list().chunk_count(), pool.chunk_count(), kCounts[2]);
  t.same("pool.free_blocks()", model.list().free_blocks(), pool.free_blocks(), kCounts[3]);
  t.same("pool.capacity()", model.list().capacity(), pool.capacity(), kCounts[4]);
}

// The blocks the caller holds, with what it wrote into each.
struct Held {
  std::uintptr_t address;
  std::vector<unsigned char> bytes;
};

void same_bytes(Transcript& t, const Names& names, const std::vector<Held>& held) {
  for (const Held& h : held) {
    const auto* p = reinterpret_cast<const unsigned char*>(h.address);
    if (std::memcmp(p, h.bytes.data(), h.bytes.size()) == 0) continue;
    std::size_t i = 0;
    while (p[i] == h.bytes[i]) ++i;
    t.differ("the " + std::to_string(h.bytes.size()) + " bytes the caller wrote into " + names.of(h.address),
             "unchanged", "changed from byte " + std::to_string(i) + " on",
             "a block handed out belongs to the caller until it is given back: no call of the pool writes into "
             "it, and no other block shares a byte with it");
  }
}

template <class Tested>
void same_ownership(Transcript& t, const Tested& pool, const Names& names, const Pool& model) {
  for (const auto& blocks : model.list().chunks()) {
    for (std::uintptr_t b : blocks) {
      // Named only when it differs: this runs for every block after every call.
      if (!pool.owns(reinterpret_cast<const void*>(b))) {
        t.differ("pool.owns(" + names.of(b) + ")", "true", "false",
                 "owns(p) is true for the start of every block of the pool's chunks, free or handed out");
      }
    }
  }
}

bool uses(const std::vector<Op>& ops, Op::Kind kind, int target) {
  for (const Op& op : ops)
    if (op.kind == kind && op.target == target) return true;
  return false;
}

template <class Tested>
void run_pool(const char* type, const Start& s, const std::vector<Op>& ops) {
  const bool with_other = uses(ops, Op::owns, 2), with_local = uses(ops, Op::owns, 3);
  Transcript t(std::string("using alloclab::") + type + ";");
  const std::string args =
      big(s.block_size) + (s.given < 2 ? "" : ", " + big(s.per_chunk)) + (s.given < 3 ? "" : ", " + big(s.max_chunks));
  const Built built = construction(s.block_size, s.per_chunk, s.max_chunks);
  // A refused allocation only where the arguments are good: a constructor that must refuse them
  // may build its exception's message on the heap.
  const long fail = built == Built::yes ? s.fail : 0;
  std::optional<Tested> pool;
  const Measured made = measured(fail, [&] {
    if (s.given == 1) {
      pool.emplace(s.block_size);
    } else if (s.given == 2) {
      pool.emplace(s.block_size, s.per_chunk);
    } else {
      pool.emplace(s.block_size, s.per_chunk, s.max_chunks);
    }
  });
  const std::string refused = made.fired ? "the " + nth(fail) + " heap allocation inside it is refused" : "";
  const std::string decl = std::string(type) + " pool(" + args + ");";

  if (built != Built::yes || (made.fired && made.outcome == Outcome::bad_alloc)) {
    Outcome wanted = built == Built::invalid_argument ? Outcome::invalid_argument : Outcome::bad_alloc;
    if (built == Built::either && made.outcome == Outcome::invalid_argument) wanted = Outcome::invalid_argument;
    t.call(decl, (refused.empty() ? "" : refused + ": ") + std::string(alloclab::test::model::name(wanted)));
    say_where(t, made);
    t.same(decl.substr(0, decl.size() - 1), wanted, made.outcome,
           built == Built::invalid_argument ? "a block_size, blocks_per_chunk or max_chunks of 0 throws "
                                              "std::invalid_argument"
           : built == Built::either
               ? "an argument is 0 (std::invalid_argument) and the sizes do not fit in a std::size_t "
                 "(std::bad_alloc): either exception keeps the contract"
           : built == Built::bad_alloc
               ? "a stride, or a chunk of blocks_per_chunk strides, that does not fit in a std::size_t throws "
                 "std::bad_alloc, and so does a chunk no heap can provide"
               : "a refused heap allocation ends the constructor with std::bad_alloc");
    t.same("heap blocks the constructor took and kept", 0L, made.taken,
           "a constructor that throws leaves nothing behind: whatever it took from the heap it gives back");
    return;
  }
  t.call(decl, refused);
  say_where(t, made);
  t.same(decl.substr(0, decl.size() - 1), Outcome::returned, made.outcome,
         "the arguments are valid and the heap provides the first chunk, so the constructor builds the pool");
  long held_by_pool = made.taken;

  // The other pool and the local variable of the owns() probes, declared up front when a
  // sequence uses them.
  std::optional<alloclab::test::pool::FixedPool> other;
  const void* foreign = nullptr;
  if (with_other) {
    try {
      other.emplace(64, 1);
      foreign = other->allocate();
    } catch (...) {
    }
    t.call("FixedPool other(64, 1);  void* q = other.allocate();", "for the owns() probes");
  }
  int local = 0;
  if (with_local) t.call("int local = 0;", "for the owns() probes");

  Pool model(s.block_size, s.per_chunk, s.max_chunks);
  Names names('p');
  std::vector<Held> held;
  int serial = 0;
  same_counts(t, *pool, model);

  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::allocate: {
        const std::string name = names.fresh();
        const std::string line = "void* " + name + " = pool.allocate();";
        const auto top = model.list().top();
        const bool refuses = model.refuses();
        void* p = nullptr;
        const Measured m = measured(op.fail, [&] { p = pool->allocate(); });
        const std::string note = m.fired ? "the " + nth(op.fail) + " heap allocation inside it is refused" : "";
        // A refused heap allocation may end the call with std::bad_alloc; the pool is then as it was.
        const bool gives_up = refuses || (m.fired && m.outcome == Outcome::bad_alloc);
        if (gives_up) {
          t.call(line, (note.empty() ? "" : note + ": ") + "throws std::bad_alloc");
          say_where(t, m);
          t.same("pool.allocate()", Outcome::bad_alloc, m.outcome,
                 refuses ? "no block is free and the pool already has max_chunks chunks, so allocate throws "
                           "std::bad_alloc and changes nothing"
                         : "a refused heap allocation ends allocate with std::bad_alloc");
          t.same("heap blocks the failed allocate took and kept", 0L, m.taken,
                 "a throwing allocate changes nothing: whatever it took from the heap it gives back before it throws");
          break;
        }
        const std::string expected = top ? (top->address ? names.of(*top->address) : Names::kNew) : Names::kNew;
        const std::size_t chunk = top ? top->chunk : model.list().chunk_count();
        t.call(line, (note.empty() ? "" : note + "; ") +
                         (top && top->address ? "returns " + expected + ", the block given back last"
                                              : "returns a block of chunk " + std::to_string(chunk + 1) +
                                                    " never handed out before" + (top ? "" : ": the pool grows")));
        say_where(t, m);
        t.same("pool.allocate()", Outcome::returned, m.outcome,
               model.list().must_grow()
                   ? "no block is free but the pool has fewer than max_chunks chunks, so allocate adds one and hands "
                     "out a block of it"
                   : "a block is free, so allocate hands it out");
        const Slot slot = model.allocate();
        const std::uintptr_t a = address(p);
        t.same(name, expected, names.describe(a, model.stride()),
               slot.address ? "allocate is last in, first out: the block given back last is the next one handed out"
                            : "no block given back is free, so allocate hands out a block of the newest chunk that "
                              "was never handed out before");
        if (!slot.address) {
          t.same("reinterpret_cast<std::uintptr_t>(" + name + ") % alignof(std::max_align_t)", std::uintptr_t{0},
                 a % kAlign, "every block's address is a multiple of alignof(std::max_align_t)");
          if (const auto b = model.overlaps(a)) {
            t.differ("does " + name + " share a byte with " + names.of(*b), "false", "true",
                     "blocks are one stride apart: no two blocks of the pool share a byte");
          }
          if (!model.fits(slot.chunk, a)) {
            t.differ("is " + name + " one of the blocks of chunk " + std::to_string(slot.chunk + 1), "true", "false",
                     "a chunk is one run of blocks_per_chunk() blocks, one stride apart: " + name +
                         " must lie a whole number of strides from the blocks of its chunk handed out before, "
                         "within blocks_per_chunk() strides of them, and outside every other chunk");
          }
          t.same("pool.owns(" + name + ")", true, pool->owns(p),
                 "owns(p) is true for the start of every block of the pool's chunks");
          names.add(a, name);
        }
        model.handed_out(slot, a);
        held_by_pool += m.taken;
        held.push_back({a, pattern(model.stride(), ++serial)});
        std::memcpy(p, held.back().bytes.data(), held.back().bytes.size());
        break;
      }
      case Op::deallocate: {
        if (model.live().empty()) continue;  // nothing to give back
        const std::uintptr_t a = model.live()[op.pick % model.live().size()];
        t.call("pool.deallocate(" + names.of(a) + ");");
        std::erase_if(held, [&](const Held& h) { return h.address == a; });
        held_by_pool += measured(0, [&] { pool->deallocate(reinterpret_cast<void*>(a)); }).taken;
        model.deallocate(a);
        break;
      }
      case Op::deallocate_null:
        t.call("pool.deallocate(nullptr);");
        held_by_pool += measured(0, [&] { pool->deallocate(nullptr); }).taken;
        break;
      case Op::owns: {
        std::uintptr_t a = 0;
        std::string what;
        std::string meaning;
        if (op.target == 0 || op.target >= 4) {  // near a block handed out before
          std::vector<std::uintptr_t> seen;
          for (const auto& blocks : model.list().chunks()) seen.insert(seen.end(), blocks.begin(), blocks.end());
          if (seen.empty()) continue;
          std::uintptr_t b = seen[op.pick % seen.size()];
          const std::size_t into[] = {0, 1, sizeof(void*), model.stride() / 2, model.stride() - 1};
          long steps = op.steps;
          if (op.target >= 4) {  // just past one end of what its chunk has shown
            const auto& mine = model.list().chunks()[model.list().chunk_of(b)];
            b = op.target == 4 ? *std::max_element(mine.begin(), mine.end())
                               : *std::min_element(mine.begin(), mine.end());
            steps = op.target == 4 ? 1 : -1;
          }
          const long offset = steps * static_cast<long>(model.stride()) + static_cast<long>(into[op.into]);
          a = b + static_cast<std::uintptr_t>(offset);
          what = near(names.of(b), offset);
          const auto why = model.owns(a);
          if (why == Pool::Why::unknown) continue;  // no chunk has shown enough of itself
          meaning = why == Pool::Why::block
                        ? "the address is a whole number of strides from a block of the same chunk, inside the "
                          "chunk: the start of a block, and owns is true for every block, free or handed out"
                    : why == Pool::Why::inside_a_block
                        ? "the address lies inside a chunk but not a whole number of strides from the start of its "
                          "blocks: it points into a block, and owns is true only for the start of one"
                        : "no chunk of the pool covers the address: a chunk is one run of blocks_per_chunk() "
                          "blocks, and the blocks handed out show where each chunk can begin and end";
          const bool model_says = why == Pool::Why::block;
          t.call("pool.owns(" + what + ");", model_says ? "true" : "false");
          t.same("pool.owns(" + what + ")", model_says, pool->owns(reinterpret_cast<const void*>(a)), meaning);
          break;
        }
        const void* q = op.target == 1 ? nullptr : op.target == 2 ? foreign : static_cast<const void*>(&local);
        what = op.target == 1 ? "nullptr" : op.target == 2 ? "q" : "&local";
        meaning = op.target == 1   ? "nullptr is no block"
                  : op.target == 2 ? "q is a block of another pool, whose chunks are not this pool's"
                                   : "a local variable is not memory of the pool";
        t.call("pool.owns(" + what + ");", "false");
        t.same("pool.owns(" + what + ")", false, pool->owns(q), meaning);
        break;
      }
      case Op::create:
      case Op::destroy:
      case Op::destroy_null: continue;  // ObjectPool's calls
    }
    same_counts(t, *pool, model);
    same_ownership(t, *pool, names, model);
    same_bytes(t, names, held);
  }

  t.call("// the end of pool's scope: its destructor runs");
  held_by_pool += measured(0, [&] { pool.reset(); }).taken;
  t.same("heap blocks the pool took and never gave back", 0L, held_by_pool,
         "the destructor returns every chunk to the heap, and all else the pool took from it");
}

// ---- ObjectPool -------------------------------------------------------------------------------

const char* ctor_name(Objects::Ctor c) {
  switch (c) {
    case Objects::Ctor::tag_lvalue: return "Item(int, const Tag&)";
    case Objects::Ctor::tag_rvalue: return "Item(int, Tag&&)";
    case Objects::Ctor::two_ints: return "Item(int, int)";
    case Objects::Ctor::braced_list: return "Item(std::initializer_list<int>)";
    case Objects::Ctor::none: return "Item()";
  }
  return "?";
}

// What the constructor that built an object says about create, by that constructor.
const char* ctor_meaning(Objects::Ctor c) {
  switch (c) {
    case Objects::Ctor::tag_lvalue:
    case Objects::Ctor::tag_rvalue:
      return "create forwards its arguments as given: Tag{} reaches Item's constructor as an rvalue, tag and "
             "std::as_const(tag) as lvalues";
    case Objects::Ctor::two_ints:
    case Objects::Ctor::braced_list:
      return "create builds the object as T(args...), with parentheses, as std::construct_at does: for create(v, p) "
             "that is Item(int, int), where braces, Item{v, p}, would choose Item's std::initializer_list<int> "
             "constructor";
    case Objects::Ctor::none: break;
  }
  return "create() with no argument builds T(), with Item's own default constructor";
}

void run_objects(const Start& s, const std::vector<Op>& ops) {
  Transcript t("using alloclab::ObjectPool;  // Item, Tag and Refuse: see judge/tests/02-fixed-pool/object_types.hpp");
  Item::destructions = Item::overwritten = 0;
  std::optional<alloclab::test::pool::ObjectPool<Item>> objects;
  const std::string decl = "ObjectPool<Item> objects(" + std::to_string(s.per_chunk) + ");";
  const Measured made = measured(s.fail, [&] { objects.emplace(s.per_chunk); });
  const std::string refused = made.fired ? "the " + nth(s.fail) + " heap allocation inside it is refused" : "";
  if (made.fired && made.outcome == Outcome::bad_alloc) {
    t.call(decl, refused + ": throws std::bad_alloc");
    say_where(t, made);
    t.same("heap blocks the constructor took and kept", 0L, made.taken,
           "a constructor that throws leaves nothing behind: whatever it took from the heap it gives back");
    return;
  }
  t.call(decl, refused);
  say_where(t, made);
  t.same(decl.substr(0, decl.size() - 1), Outcome::returned, made.outcome,
         "the heap provides the first chunk, so the constructor builds the pool");
  long held_by_pool = made.taken;
  if (uses(ops, Op::create, 1) || uses(ops, Op::create, 2)) t.call("Tag tag;");
  Tag tag;

  Objects model(s.per_chunk, sizeof(Item));
  Names names('o');
  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::create: {
        const std::string name = names.fresh();
        const int value = static_cast<int>(op.pick);
        const char* args[] = {"Tag{}", "tag", "std::as_const(tag)", "Refuse{}", ""};
        const int plain = op.steps;
        const std::string call = op.target == 5 ? std::string("objects.create()")
                                                : "objects.create(" + std::to_string(value) + ", " +
                                                      (op.target == 4 ? std::to_string(plain) : args[op.target]) + ")";
        const std::string line = "Item* " + name + " = " + call + ";";
        Item* p = nullptr;
        bool threw_refused = false;
        const Measured m = measured(op.fail, [&] {
          try {
            switch (op.target) {
              case 0: p = objects->create(value, Tag{}); break;
              case 1: p = objects->create(value, tag); break;
              case 2: p = objects->create(value, std::as_const(tag)); break;
              case 3: p = objects->create(value, Refuse{}); break;
              case 4: p = objects->create(value, int{plain}); break;
              default: p = objects->create(); break;
            }
          } catch (const Refused&) {
            threw_refused = true;
          }
        });
        const std::string yours =
            threw_refused ? "throws Refused" : std::string(alloclab::test::model::name(m.outcome));
        const std::string note = m.fired ? "the " + nth(op.fail) + " heap allocation inside it is refused" : "";
        if (m.fired && m.outcome == Outcome::bad_alloc) {  // a growth that failed: nothing changes
          t.call(line, (note.empty() ? "" : note + ": ") + "throws std::bad_alloc");
          say_where(t, m);
          t.same("heap blocks the failed create took and kept", 0L, m.taken,
                 "a create that throws std::bad_alloc changes nothing: whatever it took from the heap it gives back");
          break;
        }
        const auto top = model.list().top();
        const std::string expected = top && top->address ? names.of(*top->address) : Names::kNew;
        // A create adds a chunk exactly when no block is free, as the FixedPool inside it does: a
        // block of at least objects_per_chunk strides from the heap.
        const bool grows = model.list().must_grow();
        bool took_a_chunk = false;
        for (const auto& g : m.given) took_a_chunk = took_a_chunk || g.bytes >= model.chunk_bytes();
        const std::string chunk = "did " + call + " take a chunk (a block of at least " +
                                  std::to_string(model.chunk_bytes()) + " bytes) from the heap";
        const std::string grows_word = grows ? "yes" : "no", took_word = took_a_chunk ? "yes" : "no";
        const std::string growth =
            grows ? "no block is free, so create adds a chunk of objects_per_chunk blocks, each sizeof(Item) rounded "
                    "up to alignof(std::max_align_t): ObjectPool's FixedPool is built with the object's size first "
                    "and objects_per_chunk second"
                  : "a block is free, so create takes it and adds no chunk: the pool grows only when no block is free, "
                    "by chunks of objects_per_chunk objects";
        if (op.target == 3) {
          t.call(line, (note.empty() ? "" : note + "; ") + "throws Refused" + (grows ? ": the pool grows first" : ""));
          say_where(t, m);
          t.same(call, std::string("throws Refused"), yours,
                 "when T's constructor throws, create lets that exception out to the caller");
          t.same(chunk, grows_word, took_word, growth);
          model.refused();
          held_by_pool += m.taken;  // a chunk added for the object may stay
          break;
        }
        t.call(line, (note.empty() ? "" : note + "; ") +
                         (top && top->address ? "in the block of " + expected + ", given back last"
                                              : std::string("in a block never handed out before") +
                                                    (grows ? ": the pool grows" : "")));
        say_where(t, m);
        t.same(call, std::string("returns"), yours, "Item's constructor returns, so create returns the object");
        const Slot slot = model.take();
        const std::uintptr_t a = address(p);
        t.same(name, expected, names.describe(a, sizeof(Item)),
               slot.address
                   ? "create takes its block from the pool, last in, first out: the block given back last, by destroy "
                     "or by a create whose constructor threw, is the next one used"
                   : "no block given back is free, so create takes a block never handed out before");
        if (!slot.address) {
          t.same("reinterpret_cast<std::uintptr_t>(" + name + ") % alignof(std::max_align_t)", std::uintptr_t{0},
                 a % kAlign,
                 "create builds the object in a block of the pool, and every block is aligned to "
                 "alignof(std::max_align_t)");
          if (const auto b = model.overlaps(a)) {
            t.differ("does " + name + " share a byte with " + names.of(*b), "false", "true",
                     "every object has a block of its own");
          }
          names.add(a, name);
        }
        t.same(chunk, grows_word, took_word, growth);
        using C = Objects::Ctor;
        const C ctor = std::array{C::tag_rvalue, C::tag_lvalue, C::tag_lvalue, C::none, C::two_ints, C::none}[op.target];
        model.created(slot, a, op.target == 5 ? 0 : value, op.target == 4 ? plain : op.target == 5 ? 0 : value, ctor);
        held_by_pool += m.taken;
        break;
      }
      case Op::destroy: {
        if (model.live().empty()) continue;
        const std::uintptr_t a = model.live()[op.pick % model.live().size()].address;
        t.call("objects.destroy(" + names.of(a) + ");");
        held_by_pool += measured(0, [&] { objects->destroy(reinterpret_cast<Item*>(a)); }).taken;
        model.destroy(a);
        break;
      }
      case Op::destroy_null:
        t.call("objects.destroy(nullptr);");
        held_by_pool += measured(0, [&] { objects->destroy(nullptr); }).taken;
        break;
      default: continue;  // the pools' calls
    }
    t.same("objects.live()", model.live().size(), objects->live(),
           "live() counts the objects created and not yet destroyed: a create whose constructor threw made none");
    t.same("Item's destructors run so far", model.destructions(), Item::destructions,
           "destroy runs ~T() once for its object; create, a create that threw and destroy(nullptr) run none");
    t.same("Item's destructors that found the object overwritten", 0, Item::overwritten,
           "destroy runs ~T() first, on the object as create built it, and only then gives the block back to the "
           "pool, which may write its link there");
    for (const auto& o : model.live()) {
      const Item* item = reinterpret_cast<const Item*>(o.address);
      // Each observer is named only when it differs: these run for every object after every call.
      if (item->ctor != o.ctor) {
        t.differ("the constructor that built " + names.of(o.address), ctor_name(o.ctor), ctor_name(item->ctor),
                 ctor_meaning(o.ctor));
      }
      if (item->value != o.value) {
        t.differ(names.of(o.address) + "->value", std::to_string(o.value), std::to_string(item->value),
                 "create builds the object from its arguments, and no later call of the pool writes into a live "
                 "object");
      }
      int plain = 0;  // copied as bytes: a pool that default-initialises leaves it indeterminate
      std::memcpy(&plain, &item->plain, sizeof plain);
      if (plain != o.plain) {
        t.differ(names.of(o.address) + "->plain", std::to_string(o.plain), std::to_string(plain),
                 o.ctor == Objects::Ctor::none
                     ? "create() with no argument value-initialises T, as the expression T() does: Item's defaulted "
                       "constructor gives plain no value, so value-initialisation zeroes it first, where a bare "
                       "`new (block) T` (default-initialisation) leaves whatever bytes the block held"
                     : "create builds the object from its arguments, and no later call of the pool writes into a "
                       "live object");
      }
    }
  }

  t.call("// the end of objects' scope: its destructor runs");
  held_by_pool += measured(0, [&] { objects.reset(); }).taken;
  t.same("Item's destructors run so far", model.destructions(), Item::destructions,
         "destroying the pool itself runs no destructors: the objects still alive are the caller's business");
  t.same("heap blocks the pool took and never gave back", 0L, held_by_pool,
         "the destructor returns every chunk to the heap, and all else the pool took from it");
}

}  // namespace

void run(const Start& start, const std::vector<Op>& ops) {
  ModelHeap::get().start(start.below);
  switch (start.subject) {
    case Start::fixed: run_pool<alloclab::test::pool::FixedPool>("FixedPool", start, ops); break;
    case Start::shared: run_pool<alloclab::test::pool::SharedFixedPool>("SharedFixedPool", start, ops); break;
    case Start::objects: run_objects(start, ops); break;
  }
}

}  // namespace pool_model
