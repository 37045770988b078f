// How one sequence of calls runs on the arena under test and on the model (model.hpp), with
// every observer compared after each call. stage5_model.cpp generates the sequences.
#include "arena_under_test.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"

namespace arena_model {
namespace {

using Tested = alloclab::test::arena::Arena;   // the learner's, through the seam
using alloclab::test::is_poisoned;
using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;

std::string plus(std::size_t offset) { return "base + " + std::to_string(offset); }

std::string big(std::size_t n) {
  return n > SIZE_MAX / 2 ? "SIZE_MAX - " + std::to_string(SIZE_MAX - n) : std::to_string(n);
}

// Whether AddressSanitizer sees each byte of the buffer as the contract says: every byte handed
// out is live; a byte not handed out is poisoned unless a live byte follows it in its granule of 8
// (ASan can only mark a granule's first k bytes live, so such a byte cannot be poisoned), or ASan's
// rounding left it addressable (Shadow in model.hpp).
constexpr const char* kLive =
    "the byte belongs to a block allocate handed out and nothing has reclaimed it, so the caller may use it: "
    "allocate unpoisons exactly the n bytes it returns";
constexpr const char* kNotLive =
    "no block handed out and not reclaimed covers the byte (it is padding, the tail, or was reclaimed by reset or "
    "rewind), so AddressSanitizer must report an access to it";

void same_poisoning(Transcript& t, const std::byte* base, const Arena& model) {
  if (!alloclab::test::kHasAsan) return;
  const auto differ = [&](std::size_t i, bool poisoned) {
    t.differ("is byte base + " + std::to_string(i) + " poisoned", poisoned ? "false" : "true",
             poisoned ? "true" : "false", poisoned ? kLive : kNotLive);
  };
  // Past the highest used() so far, rounded up to a granule, the arena has handed nothing out:
  // every granule there must be poisoned whole, which its first byte tells.
  const std::size_t touched = std::min(model.capacity(), (model.peak() + 7) / 8 * 8);
  for (std::size_t i = touched; i < model.capacity(); i += 8) {
    if (!is_poisoned(base + i)) differ(i, false);
  }
  // Reused from call to call: a buffer of a MiB is mapped, its shadow written and unmapped again
  // by AddressSanitizer's heap each time it is taken and given back.
  static std::vector<char> live, live_after;
  live.assign(touched, 0);
  for (const auto& b : model.live()) std::fill_n(live.begin() + static_cast<std::ptrdiff_t>(b.offset), b.n, 1);
  live_after.assign(touched + 1, 0);  // a live byte at or after i in i's granule
  for (std::size_t i = touched; i-- > 0;) live_after[i] = live[i] || ((i + 1) % 8 != 0 && live_after[i + 1]);
  const auto must_be_poisoned = [&](std::size_t i) { return !live_after[i] && model.shadow().poisoned(i); };
  for (std::size_t i = 0; i < touched; ++i) {
    // A granule that must be poisoned whole is, when its first byte is: ASan cannot mark a hole.
    if (i % 8 == 0 && i + 8 <= touched && must_be_poisoned(i)) {
      if (!is_poisoned(base + i)) differ(i, false);
      i += 7;
      continue;
    }
    const bool poisoned = is_poisoned(base + i);
    if (live[i] && poisoned) differ(i, true);
    if (must_be_poisoned(i) && !poisoned) differ(i, false);
  }
}

}  // namespace

void run(std::size_t capacity, const std::vector<Op>& ops) {
  Transcript t("alloclab::Arena a(" + std::to_string(capacity) + ");");
  if (capacity == 0) {
    t.same("alloclab::Arena a(0)", Outcome::invalid_argument, outcome_of([] { Tested zero(0); }),
           "an arena with no room can serve no request, so a capacity of 0 is refused");
    return;
  }
  Tested arena(capacity);
  auto* base = static_cast<std::byte*>(arena.allocate(0, 1));
  t.call("std::byte* base = static_cast<std::byte*>(a.allocate(0, 1));", "the buffer's start");
  t.same("base == nullptr", false, base == nullptr, "allocate(0, 1) returns a valid pointer, the buffer's start");
  t.same("address of base % 4096", std::uintptr_t{0}, reinterpret_cast<std::uintptr_t>(base) % 4096,
         "the arena's buffer starts on a page boundary");
  Arena model(capacity, reinterpret_cast<std::uintptr_t>(base));
  (void)model.allocate(0, 1);
  // The heap's own redzone past the buffer's end, from the first granule the buffer does not
  // share: no call of the arena may touch it.
  const std::byte* end = base + (capacity + 7) / 8 * 8;
  const std::string past_the_end = alloclab::test::shadow_bytes(end, 64);
  std::vector<Tested::Marker> markers;
  std::vector<std::size_t> model_markers;
  int pointers = 0;

  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::allocate:
      case Op::alloc_words:
      case Op::alloc_lines: {
        void* p = nullptr;
        std::string call;
        Outcome yours;
        std::optional<std::size_t> expected;
        Outcome wanted = Outcome::returned;
        const std::string name = "p" + std::to_string(++pointers);
        if (op.kind == Op::allocate) {
          call = "void* " + name + " = a.allocate(" + big(op.n) + ", " + std::to_string(op.align) + ");";
          yours = outcome_of([&] { p = arena.allocate(op.n, op.align); });
          if (!valid_alignment(op.align)) {
            wanted = Outcome::invalid_argument;
          } else if (!(expected = model.allocate(op.n, op.align))) {
            wanted = Outcome::bad_alloc;
          }
        } else {
          const bool words = op.kind == Op::alloc_words;
          const std::size_t size = words ? sizeof(std::uint64_t) : sizeof(alloclab::test::arena::CacheLine);
          call = std::string("void* ") + name + " = a.alloc_array<" + (words ? "std::uint64_t" : "CacheLine") +
                 ">(" + std::to_string(op.n) + ");";
          yours = outcome_of([&] {
            p = words ? static_cast<void*>(arena.alloc_array<std::uint64_t>(op.n))
                      : static_cast<void*>(arena.alloc_array<alloclab::test::arena::CacheLine>(op.n));
          });
          if (op.n > SIZE_MAX / size || !(expected = model.allocate(op.n * size, size))) wanted = Outcome::bad_alloc;
        }
        t.call(call, wanted == Outcome::returned ? plus(*expected) : std::string(alloclab::test::model::name(wanted)));
        t.same(call, wanted, yours,
               wanted == Outcome::invalid_argument ? "an alignment that is not a power of two is refused with "
                                                     "std::invalid_argument"
               : wanted == Outcome::bad_alloc
                   ? "the padding plus the request do not fit in what is left (or the size overflows), so the "
                     "call throws std::bad_alloc and leaves the arena as it was"
                   : "the padding plus the request fit in what is left, so the call returns a block");
        if (wanted == Outcome::returned) {
          t.same(name + " - base", static_cast<std::ptrdiff_t>(*expected), static_cast<std::byte*>(p) - base,
                 "a block starts at the first address past the cursor that is a multiple of the alignment: the "
                 "address, not the offset, is aligned");
        }
        break;
      }
      case Op::reset:
        arena.reset();
        model.reset();
        t.call("a.reset();");
        break;
      case Op::mark:
        markers.push_back(arena.mark());
        model_markers.push_back(model.mark());
        t.call("auto m" + std::to_string(markers.size()) + " = a.mark();");
        t.same("m" + std::to_string(markers.size()) + ".offset", model_markers.back(), markers.back().offset,
               "a marker records used()");
        break;
      case Op::rewind:
        if (op.pick < markers.size()) {
          arena.rewind(markers[op.pick]);
          model.rewind(model_markers[op.pick]);
          t.call("a.rewind(m" + std::to_string(op.pick + 1) + ");");
        } else {  // a marker from beyond the cursor, as one taken before a reset
          const std::size_t offset = model.used() + 1 + op.pick;
          arena.rewind(Tested::Marker{offset});
          model.rewind(offset);
          t.call("a.rewind(alloclab::Arena::Marker{" + std::to_string(offset) + "});");
        }
        break;
    }
    t.same("a.used()", model.used(), arena.used(),
           "used() is the offset of the end of the last block still handed out, padding included");
    t.same("a.peak()", model.peak(), arena.peak(),
           "peak() is the largest used() ever seen: a failed request, reset and rewind never change it");
    t.same("a.capacity()", model.capacity(), arena.capacity(), "capacity() never changes");
    same_poisoning(t, base, model);
    t.same("AddressSanitizer's shadow of the 64 bytes past the buffer's end", past_the_end,
           alloclab::test::shadow_bytes(end, 64),
           "those bytes belong to the heap, not to the arena: reset and rewind poison only what they reclaim, "
           "which ends at used()");
  }
}


}  // namespace arena_model
