// How one sequence of calls runs on the ring under test and on the model (model.hpp), with every
// observer compared after each call, and the destructor checked at the end. stage5_model.cpp
// generates the sequences.
#include "ring_under_test.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "alloclab_test.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"
#include "ring_test_support.hpp"

namespace ring_model {
namespace {

using alloclab::test::ring::RingBumpAllocator;
using alloclab::test::model::Outcome;
using alloclab::test::model::outcome_of;
using alloclab::test::model::Transcript;

std::string big(std::size_t n) {
  if (n == SIZE_MAX) return "SIZE_MAX";
  if (n >> 32 != 0 && (n & (n - 1)) == 0) return "std::size_t{1} << " + std::to_string(__builtin_ctzll(n));
  return n > SIZE_MAX / 2 ? "SIZE_MAX - " + std::to_string(SIZE_MAX - n) : std::to_string(n);
}

std::string position(std::uint64_t c) {
  return c > UINT64_MAX / 2 ? (c == UINT64_MAX ? "UINT64_MAX" : "UINT64_MAX - " + std::to_string(UINT64_MAX - c))
                            : std::to_string(c);
}

std::string refusal_note(Refusal why) {
  switch (why) {
    case Refusal::zero_bytes: return "nullptr: n is 0";
    case Refusal::more_than_capacity: return "nullptr: n > capacity()";
    case Refusal::not_a_power_of_two: return "nullptr: align is not a power of two";
    case Refusal::above_a_page: return "nullptr: align > 4096";
    case Refusal::no_room: return "nullptr: no room";
    case Refusal::none: break;
  }
  return "";
}

// What the model's answer to allocate means, in the contract's words and this call's numbers.
std::string allocate_meaning(const Placement& p, const Ring& model) {
  const std::string lap = "more than capacity() = " + std::to_string(model.capacity()) +
                          " past the last reclaimed position, " + std::to_string(model.tail());
  const std::string way = p.skipped != 0 ? " (" + std::to_string(p.skipped) + " bytes skipped at the end, then the block at offset 0)"
                                         : " (" + std::to_string(p.padding) + " bytes of padding, then the block)";
  switch (p.refusal) {
    case Refusal::zero_bytes: return "allocate refuses n == 0: it returns nullptr and changes nothing";
    case Refusal::more_than_capacity:
      return "allocate refuses n > capacity() up front with nullptr: such a block never fits, and a huge n would "
             "make the sum of positions wrap around 2^64 and look small";
    case Refusal::not_a_power_of_two: return "allocate refuses an alignment that is not a power of two with nullptr";
    case Refusal::above_a_page:
      return "allocate refuses an alignment above 4096 with nullptr: after a wrap, a block starts at offset 0, "
             "which is only page-aligned";
    case Refusal::no_room:
      return "the new head would be position " + std::to_string(p.end) + way + ", " + lap +
             ", so allocate returns nullptr and changes nothing";
    case Refusal::none: break;
  }
  return "the new head is position " + std::to_string(p.end) + way + ", not " + lap + ", so allocate hands the block out";
}

std::string placement_meaning(const Placement& p, std::size_t align, std::size_t capacity) {
  const std::string at = "the head is at position " + std::to_string(p.from) + ", offset " + std::to_string(p.offset);
  if (p.skipped != 0) {
    return at + "; there, aligned up to " + std::to_string(align) + ", the block would cross the end of the buffer (" +
           std::to_string(capacity) + " bytes), so it starts at offset 0 instead and the " +
           std::to_string(p.skipped) + " bytes at the end are skipped";
  }
  return at + ", and the block goes there with its address aligned up to " + std::to_string(align);
}

const char* byte_meaning(Byte b) {
  switch (b) {
    case Byte::untouched: return "the head has never reached the byte, and a new ring's buffer is poisoned whole";
    case Byte::skipped:
      return "the byte is in the end of the buffer that a block wrapping to offset 0 skipped: it belongs to no "
             "block, so it stays poisoned";
    case Byte::padding: return "the byte is padding before an aligned block: it belongs to no block, so it stays poisoned";
    case Byte::live:
      return "the byte belongs to a block handed out and not yet reclaimed: allocate unpoisons exactly the n bytes "
             "it returns, and nothing may poison them while they are in use";
    case Byte::reclaimed:
      return "the byte belongs to a block reclaimed before the last allocate that handed a block out: a reclaimed "
             "block is poisoned at the latest once the producer's next allocate has run";
    case Byte::reclaimed_lately: break;
  }
  return "";
}

// AddressSanitizer's shadow of [p, p + n) into `shadow`, one signed byte per granule of 8 bytes:
// 0 when the granule is addressable, k in 1..7 when only its first k bytes are, negative when none
// is (nothing without ASan). p and n are multiples of 8. Not instrumented itself: ASan would check
// the shadow of the shadow, which is unmapped.
__attribute__((no_sanitize_address)) void shadow_of([[maybe_unused]] const std::byte* p, [[maybe_unused]] std::size_t n,
                                                    [[maybe_unused]] std::vector<signed char>& shadow) {
#ifdef ALLOCLAB_TEST_ASAN
  std::size_t scale = 0, offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  const auto* from = reinterpret_cast<const signed char*>((reinterpret_cast<std::uintptr_t>(p) >> scale) + offset);
  shadow.resize(n / 8);
  signed char* to = shadow.data();
  for (std::size_t g = 0; g < n / 8; ++g) to[g] = from[g];
#endif
}

// Writes back the shadow that shadow_of() read from [p, p + 8 * shadow.size()).
__attribute__((no_sanitize_address)) void restore_shadow([[maybe_unused]] const std::byte* p,
                                                         [[maybe_unused]] const std::vector<signed char>& shadow) {
#ifdef ALLOCLAB_TEST_ASAN
  std::size_t scale = 0, offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  auto* to = reinterpret_cast<signed char*>((reinterpret_cast<std::uintptr_t>(p) >> scale) + offset);
  const signed char* from = shadow.data();
  for (std::size_t g = 0; g < shadow.size(); ++g) to[g] = from[g];
#endif
}

// AddressSanitizer's shadow of the 64 bytes past the buffer, which are not the ring's, made
// addressable when the first block shows where the buffer lies: whatever an earlier test or
// sequence left there (a ring the kernel mapped at the same address, poisoned by a header), a
// header that poisons them now shows. A header that poisons them would leave its marks for the
// next sequence's ring, and the failure would not replay while RapidCheck shrinks it: the guard
// puts the shadow back as it found it.
struct PastTheEnd {
  const std::byte* at = nullptr;
  std::vector<signed char> saved;
  std::string shown;

  PastTheEnd() = default;
  PastTheEnd(const PastTheEnd&) = delete;
  PastTheEnd& operator=(const PastTheEnd&) = delete;
  ~PastTheEnd() {
    if (at != nullptr) restore_shadow(at, saved);
  }
  void record(const std::byte* p) {
    at = p;
    shadow_of(p, 64, saved);
    restore_shadow(p, std::vector<signed char>(saved.size(), 0));
    shown = alloclab::test::shadow_bytes(p, 64);
  }
};

// The largest n that allocate(n, align) accepts now, 0 when none does. A smaller block fits
// whenever a larger one does (its new head is never further on), so a binary search finds it.
std::size_t largest_fit(const Ring& model, std::size_t align) {
  if (model.place(1, align).refusal != Refusal::none) return 0;
  std::size_t fits = 1, refused = model.capacity() + 1;
  while (refused - fits > 1) {
    const std::size_t mid = fits + (refused - fits) / 2;
    (model.place(mid, align).refusal == Refusal::none ? fits : refused) = mid;
  }
  return fits;
}

// Whether AddressSanitizer sees each byte of the buffer as the contract says. A live byte must be
// addressable. A byte that no block in use covers must be poisoned, unless a byte after it in its
// granule may be addressable: a live one, or one reclaimed since the last allocate that handed a
// block out (ASan can only mark a granule's first k bytes addressable). The vectors are kept from
// one call to the next: allocating them afresh each time would take most of the stage's time.
struct PoisonCheck {
  std::vector<Byte> model_bytes;
  std::vector<signed char> shadow_bytes;
  std::vector<unsigned char> open_after_bytes;  // a byte at or after i in i's granule may be addressable

  void same(Transcript& t, const std::byte* base, const Ring& model) {
    if (!alloclab::test::kHasAsan) return;
    const std::size_t size = model.capacity();
    model.bytes(model_bytes);
    shadow_of(base, size, shadow_bytes);
    open_after_bytes.resize(size + 1);
    const Byte* bytes = model_bytes.data();
    const signed char* shadow = shadow_bytes.data();
    unsigned char* open_after = open_after_bytes.data();
    open_after[size] = 0;
    for (std::size_t i = size; i-- > 0;) {
      const bool open = bytes[i] == Byte::live || bytes[i] == Byte::reclaimed_lately;
      open_after[i] = open || ((i + 1) % 8 != 0 && open_after[i + 1]);
    }
    for (std::size_t i = 0; i < size; ++i) {
      const signed char v = shadow[i / 8];
      const bool poisoned = v != 0 && (v < 0 || static_cast<signed char>(i % 8) >= v);
      if (bytes[i] == Byte::live && poisoned) {
        t.differ("is byte base + " + std::to_string(i) + " poisoned", "false", "true", byte_meaning(Byte::live));
      }
      if (!open_after[i] && !poisoned) {
        t.differ("is byte base + " + std::to_string(i) + " poisoned", "true", "false", byte_meaning(bytes[i]));
      }
    }
  }
};

}  // namespace

void run(std::size_t asked, const std::vector<Op>& ops) {
  Transcript t("// one thread makes every call, in this order");
  t.call("alloclab::RingBumpAllocator r(" + big(asked) + ");");
  PastTheEnd past_the_end;  // before the ring: its shadow is put back after the ring is gone
  std::optional<RingBumpAllocator> ring;
  const Outcome built = outcome_of([&] { ring.emplace(asked); });
  const std::optional<std::size_t> capacity = rounded_capacity(asked);
  if (!capacity) {
    t.note(std::string(alloclab::test::model::name(asked == 0 ? Outcome::invalid_argument : Outcome::bad_alloc)));
    if (asked == 0) {
      t.same("alloclab::RingBumpAllocator r(0)", Outcome::invalid_argument, built,
             "a ring with no room can serve no request, so a capacity of 0 is refused with std::invalid_argument");
    } else {
      t.same("alloclab::RingBumpAllocator r(" + big(asked) + ")", Outcome::bad_alloc, built,
             "that many bytes rounded up to whole pages cannot be represented in a size_t or cannot be mapped, so "
             "the constructor throws std::bad_alloc");
    }
    return;
  }
  t.same("alloclab::RingBumpAllocator r(" + big(asked) + ")", Outcome::returned, built,
         "any capacity from 1 up to what the machine can map builds a ring");
  Ring model(*capacity);
  RingBumpAllocator& r = *ring;

  const std::byte* base = nullptr;  // the buffer's start: where the first block goes
  std::vector<std::uint64_t> taken;  // the checkpoints taken so far
  int pointers = 0;
  PoisonCheck poisoning;

  auto compare = [&] {
    t.same("r.checkpoint()", model.checkpoint(), r.checkpoint(),
           "checkpoint() is the head position: every byte handed out since the ring was built, padding and "
           "skipped ends included");
    t.same("r.in_use()", model.in_use(), r.in_use(),
           "in_use() is the head minus the last reclaimed position, " + std::to_string(model.tail()));
    t.same("r.capacity()", model.capacity(), r.capacity(),
           "capacity() is the constructor's argument rounded up to a multiple of 4096, and never changes");
    if (base == nullptr) return;
    poisoning.same(t, base, model);
    t.same("AddressSanitizer's shadow of the 64 bytes past the buffer's end", past_the_end.shown,
           alloclab::test::shadow_bytes(base + model.capacity(), 64),
           "those bytes are not the ring's: it poisons and unpoisons only its own buffer, splitting at the end of "
           "the buffer what wraps around it");
  };
  compare();

  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::allocate:
      case Op::allocate_default:
      case Op::allocate_most: {
        const bool default_align = op.kind == Op::allocate_default;
        const std::size_t most = op.kind == Op::allocate_most ? largest_fit(model, op.align) : 0;
        const std::size_t n = op.kind == Op::allocate_most ? most + op.pick : op.n;
        const Placement plan = model.place(n, op.align);
        const bool first = base == nullptr && plan.refusal == Refusal::none;
        const std::string args = big(n) + (default_align ? "" : ", " + big(op.align));
        const std::string name = first ? "base" : "p" + std::to_string(++pointers);
        void* p = default_align ? r.allocate(n) : r.allocate(n, op.align);
        (void)model.allocate(n, op.align);
        const bool refused = plan.refusal != Refusal::none;
        std::string note = refused ? refusal_note(plan.refusal) : first ? "the buffer's start" : "base + " + std::to_string(plan.start);
        if (plan.skipped != 0 && !refused) note += "; wrapped, " + std::to_string(plan.skipped) + " bytes skipped at the end";
        if (op.kind == Op::allocate_most && most != 0) {
          note += op.pick == 0 ? "; the largest block that fits now" : "; one byte more than fits now";
        }
        t.call(first ? "auto* base = static_cast<std::byte*>(r.allocate(" + args + "));"
                     : "void* " + name + " = r.allocate(" + args + ");",
               note);
        t.same("r.allocate(" + args + ")", std::string(refused ? "nullptr" : "a block"),
               std::string(p == nullptr ? "nullptr" : "a block"), allocate_meaning(plan, model));
        if (refused) break;
        if (first) {
          base = static_cast<const std::byte*>(p);
          t.same("reinterpret_cast<std::uintptr_t>(base) % 4096", std::uintptr_t{0},
                 reinterpret_cast<std::uintptr_t>(base) % 4096,
                 "a new ring's first block goes at offset 0, the buffer's start, and the buffer is mapped with mmap, "
                 "so it is page-aligned");
          past_the_end.record(base + model.capacity());
        } else {
          t.same("static_cast<std::byte*>(" + name + ") - base", static_cast<std::ptrdiff_t>(plan.start),
                 static_cast<const std::byte*>(p) - base, placement_meaning(plan, op.align, model.capacity()));
        }
        break;
      }
      case Op::checkpoint: {
        taken.push_back(model.checkpoint());
        const std::uint64_t yours = r.checkpoint();
        const std::string name = "c" + std::to_string(taken.size());
        t.call("auto " + name + " = r.checkpoint();", std::to_string(taken.back()));
        t.same(name, taken.back(), yours, "checkpoint() is the head position, the end of the last block handed out");
        break;
      }
      case Op::reclaim_taken:
      case Op::reclaim_all:
      case Op::reclaim_between:
      case Op::reclaim_stale:
      case Op::reclaim_future: {
        std::uint64_t c = model.checkpoint();
        std::string line = "r.reclaim(r.checkpoint());";
        std::string note;
        if (op.kind == Op::reclaim_taken && !taken.empty()) {
          const std::size_t k = op.pick % taken.size();
          c = taken[k];
          line = "r.reclaim(c" + std::to_string(k + 1) + ");";
        } else if (op.kind == Op::reclaim_between && model.in_use() >= 2) {
          c = model.tail() + 1 + op.pick % (model.in_use() - 1);
          line = "r.reclaim(" + position(c) + ");";
          note = "between the tail and the head";
        } else if (op.kind == Op::reclaim_stale) {
          c = model.tail() - (op.pick < model.tail() ? op.pick : model.tail());
          line = "r.reclaim(" + position(c) + ");";
        } else if (op.kind == Op::reclaim_future) {
          c = op.pick < 90 ? model.checkpoint() + 1 + op.pick : UINT64_MAX - (op.pick - 90);
          line = "r.reclaim(" + position(c) + ");";
        }
        switch (model.ignores(c)) {
          case Ring::Ignored::not_after_the_tail:
            note = "ignored: not after the last reclaimed position, " + std::to_string(model.tail());
            break;
          case Ring::Ignored::after_the_head:
            note = "ignored: after the head, " + std::to_string(model.checkpoint());
            break;
          case Ring::Ignored::no: break;
        }
        r.reclaim(c);
        model.reclaim(c);
        t.call(line, note);
        break;
      }
    }
    compare();
  }

  if (base == nullptr || !alloclab::test::kHasAsan) return;
  // The destructor: the test binary's munmap records what ASan thought of the buffer at the call.
  alloclab::test::ring::watch_unmapping(base);
  ring.reset();
  const auto calls = alloclab::test::ring::unmappings();
  alloclab::test::ring::watch_unmapping(nullptr);
  t.call("// r goes out of scope: ~RingBumpAllocator() runs");
  bool given_back = false;
  const void* poisoned = nullptr;
  for (const auto& call : calls) {
    const auto start = reinterpret_cast<std::uintptr_t>(base);
    given_back = given_back || (call.begin <= start && call.length >= start - call.begin + model.capacity());
    if (poisoned == nullptr) poisoned = call.first_poisoned;
  }
  t.same("does a munmap give back [base, base + capacity())", true, given_back,
         "the buffer is a mapping of its own, made with mmap and given back with munmap by the destructor");
  t.same("is a byte of the buffer poisoned when munmap gives it back", std::string("no"),
         poisoned == nullptr ? std::string("no") : "yes, base + " + std::to_string(static_cast<const std::byte*>(poisoned) - base),
         "the destructor unpoisons the whole buffer before munmap: ASan's allocator never owned these pages, and "
         "the next mapping at this address would start out poisoned");
}

}  // namespace ring_model
