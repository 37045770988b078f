// How one sequence of calls runs on the header under test and on the model (model.hpp), with
// every observer compared after each call: on allocators of several kinds (allocate,
// deallocate, equality, rebind, counts that overflow, a heap that fails), or on one arena over a
// buffer that starts anywhere (allocate with every alignment, bad ones too, deallocate, release,
// destruction, is_equal, bad constructor arguments, a heap that fails while a spill is recorded).
// After every call the heap's calls, the addresses, used(), upstream_bytes() and every block the
// upstream handed out and got back must agree. stage5_model.cpp generates the sequences.
#include "aligned_allocator.hpp"

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "aligned_test_support.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"

namespace aligned_model {
namespace {

using alloclab::test::address;
using alloclab::test::HeapCall;
using alloclab::test::HeapLog;
using alloclab::test::aligned::TrackingResource;
using alloclab::test::model::Transcript;

constexpr std::size_t kSizeMax = std::numeric_limits<std::size_t>::max();

// How a call ended: std::bad_array_new_length apart from the std::bad_alloc it derives from.
// (No std::string: the call may run while every operator new fails.)
template <class Call>
const char* ending_of(Call&& call) {
  try {
    call();
    return "returns";
  } catch (const std::bad_array_new_length&) {
    return "throws std::bad_array_new_length";
  } catch (const std::bad_alloc&) {
    return "throws std::bad_alloc";
  } catch (const std::invalid_argument&) {
    return "throws std::invalid_argument";
  } catch (...) {
    return "throws something else";
  }
}

// The global operator new and delete calls `log` recorded, as C++; `name` is what a pointer
// given back is called in the transcript ("" for "a block").
std::string heap_calls(const HeapLog& log, const void* named = nullptr, const std::string& name = "") {
  std::string out;
  for (const HeapCall& c : log) {
    if (!out.empty()) out += "; ";
    const std::string align = c.alignment == 0 ? "" : ", std::align_val_t{" + std::to_string(c.alignment) + "}";
    if (c.is_new) {
      out += "operator new(" + std::to_string(c.size) + align + ")";
    } else {
      const std::string who = named != nullptr && c.p == named ? name : "a block";
      out += "operator delete(" + who + (c.sized ? ", " + std::to_string(c.size) : "") + align + ")";
    }
  }
  if (log.news() + log.deletes() > HeapLog::kCapacity) out += "; ...";
  return out.empty() ? "none" : out;
}

// ---------------------------------------------------------------------------------------------
// The allocator

// A type whose own alignment is larger than most Aligns, and one whose size is no power of two.
struct alignas(128) Wide {
  std::uint64_t words[16];
};
struct Triple {
  std::uint64_t a, b, c;
};

template <class A, class U>
using Rebound = typename std::allocator_traits<A>::template rebind_alloc<U>;
template <class A, class U>
concept RebindsTo = requires { typename Rebound<A, U>; };

// The Align of an AlignedAllocator type.
template <class A>
struct AlignOf {
  static constexpr std::size_t value = 0;
};
template <class U, std::size_t B>
struct AlignOf<alloclab::AlignedAllocator<U, B>> {
  static constexpr std::size_t value = B;
};

// One allocator a sequence uses: AlignedAllocator<T, Align>, or (U not void) the allocator of U
// that std::allocator_traits makes of it, built from it with the converting constructor, as a
// container builds the allocator of its nodes.
template <class T, std::size_t Align, class U = void>
struct Kind {
  using Source = alloclab::AlignedAllocator<T, Align>;
  static constexpr bool kRebound = !std::is_void_v<U>;
  using Value = std::conditional_t<kRebound, U, T>;
  static constexpr std::size_t kAlign = Align;
};

// Whether the header lets the test name and build the kind's allocator (the skeleton rebinds
// to T alone, and has no converting constructor): a kind it cannot build fails its first call
// with that, instead of stopping the build.
template <class K>
constexpr bool kBuildable = [] {
  if constexpr (!K::kRebound) {
    return true;
  } else if constexpr (RebindsTo<typename K::Source, typename K::Value>) {
    return std::is_constructible_v<Rebound<typename K::Source, typename K::Value>, const typename K::Source&>;
  } else {
    return false;
  }
}();

template <class K>
auto make() {
  if constexpr (K::kRebound) {
    return Rebound<typename K::Source, typename K::Value>(typename K::Source{});
  } else {
    return typename K::Source{};
  }
}

struct KindName {
  const char* value;    // T, or U
  const char* source;   // AlignedAllocator<T, Align>
  const char* written;  // the expression that makes the allocator
};

// Calls f(Kind{}, name) for kind k.
template <class F>
void with_kind(std::size_t k, F&& f) {
  static_assert(kAllocators == 6, "with_kind lists every allocator a sequence chooses from");
  switch (k) {
    case 0:
      return f(Kind<char, 64>{}, KindName{"char", "alloclab::AlignedAllocator<char>", "alloclab::AlignedAllocator<char>()"});
    case 1:
      return f(Kind<double, 16>{},
               KindName{"double", "alloclab::AlignedAllocator<double, 16>", "alloclab::AlignedAllocator<double, 16>()"});
    case 2:
      return f(Kind<Wide, 64>{},
               KindName{"Wide", "alloclab::AlignedAllocator<Wide, 64>", "alloclab::AlignedAllocator<Wide, 64>()"});
    case 3:
      return f(Kind<Triple, 256>{}, KindName{"Triple", "alloclab::AlignedAllocator<Triple, 256>",
                                             "alloclab::AlignedAllocator<Triple, 256>()"});
    case 4:
      return f(Kind<double, 16, Wide>{},
               KindName{"Wide", "alloclab::AlignedAllocator<double, 16>",
                        "Rebound<alloclab::AlignedAllocator<double, 16>, Wide>(alloclab::AlignedAllocator<double, 16>())"});
    default:
      return f(Kind<char, 4096, Triple>{},
               KindName{"Triple", "alloclab::AlignedAllocator<char, 4096>",
                        "Rebound<alloclab::AlignedAllocator<char, 4096>, Triple>(alloclab::AlignedAllocator<char, 4096>())"});
  }
}

template <class K>
aligned_model::Allocator model_of() {
  return {K::kAlign, sizeof(typename K::Value), alignof(typename K::Value)};
}

// Pairs of kinds with the same Align, which the contract says compare equal.
constexpr std::size_t kPairs[][2] = {{0, 0}, {0, 2}, {2, 0}, {1, 4}, {4, 1}, {3, 3}, {5, 5}, {1, 1}};
static_assert(std::size(kPairs) == kComparedPairs);

// Fails the sequence when the header cannot build kind K, or builds it with another Align.
template <class K>
void same_rebind(Transcript& t, const KindName& name) {
  if constexpr (K::kRebound) {
    const std::string traits = std::string("std::allocator_traits<") + name.source + ">::rebind_alloc<" + name.value + ">";
    constexpr const char* meaning =
        "rebind names the allocator of U with the same Align, for every U, and the converting constructor "
        "builds it from the allocator of T: that is how a container makes the allocator of its nodes";
    if constexpr (!RebindsTo<typename K::Source, typename K::Value>) {
      t.differ(traits, "a type", "names no type", meaning);
    } else if constexpr (!kBuildable<K>) {
      t.differ("building " + traits + " from " + name.source + "()", "compiles", "does not compile", meaning);
    } else {
      t.same("the Align of " + traits, K::kAlign, AlignOf<Rebound<typename K::Source, typename K::Value>>::value,
             meaning);
    }
  }
}

struct AllocBlock {
  std::string name;
  std::size_t kind, n;
  void* p;
};

// Gives back what a failed sequence left allocated, with the header's own deallocate.
struct AllocBlocks {
  std::vector<AllocBlock> live;
  AllocBlocks() = default;
  AllocBlocks(const AllocBlocks&) = delete;
  AllocBlocks& operator=(const AllocBlocks&) = delete;
  ~AllocBlocks() {
    for (const AllocBlock& b : live) {
      with_kind(b.kind, [&](auto kind, const KindName&) {
        using K = decltype(kind);
        if constexpr (kBuildable<K>) make<K>().deallocate(static_cast<typename K::Value*>(b.p), b.n);
      });
    }
  }
};

// `bool e = L() == R();` for two kinds with the same Align, and `!=` as well.
template <class L, class R>
void compare(Transcript& t, const std::string& e, const KindName& left, const KindName& right) {
  const std::string call = "bool " + e + " = " + left.written + " == " + right.written + ";";
  t.call(call, "true");
  same_rebind<L>(t, left);
  same_rebind<R>(t, right);
  constexpr const char* meaning =
      "any two instances with the same Align compare equal, whatever their T: memory from one can be freed by the "
      "other";
  if constexpr (kBuildable<L> && kBuildable<R>) {
    using LA = decltype(make<L>());
    using RA = decltype(make<R>());
    if constexpr (requires(const LA& a, const RA& b) {
                    { a == b } -> std::convertible_to<bool>;
                    { a != b } -> std::convertible_to<bool>;
                  }) {
      const bool equal = make<L>() == make<R>();
      const bool unequal = make<L>() != make<R>();
      t.same(e, true, equal, meaning);
      t.same(left.written + std::string(" != ") + right.written, false, unequal, meaning);
    } else {
      t.differ(call, "compiles", "does not compile", meaning);
    }
  }
}

}  // namespace

void run_allocator(const std::vector<AllocOp>& ops) {
  Transcript t(
      "struct alignas(128) Wide { std::uint64_t words[16]; };  struct Triple { std::uint64_t a, b, c; };\n"
      "    template <class A, class U> using Rebound = typename std::allocator_traits<A>::template rebind_alloc<U>;");
  AllocBlocks blocks;
  int pointers = 0, answers = 0;
  for (const AllocOp& op : ops) {
    switch (op.kind) {
      case AllocOp::allocate:
        with_kind(op.which, [&](auto kind, const KindName& name) {
          using K = decltype(kind);
          using T = typename K::Value;
          const aligned_model::Allocator model = model_of<K>();
          // The count, and how the transcript writes it.
          std::size_t n = op.n;
          std::string count = std::to_string(n);
          if (op.huge != 0) {
            const int delta = op.huge - 4;
            const std::size_t most = kSizeMax / sizeof(T);  // the largest count whose bytes fit
            if (sizeof(T) == 1) {  // no count overflows: the largest ones are more than any heap has
              n = delta >= 0 ? kSizeMax : kSizeMax - static_cast<std::size_t>(-delta);
              count = n == kSizeMax ? "SIZE_MAX" : "SIZE_MAX - " + std::to_string(kSizeMax - n);
            } else {
              n = delta >= 0 ? most + static_cast<std::size_t>(delta) : most - static_cast<std::size_t>(-delta);
              count = std::string("SIZE_MAX / sizeof(") + name.value + ")" +
                      (delta == 0 ? "" : (delta > 0 ? " + " : " - ") + std::to_string(delta > 0 ? delta : -delta));
            }
          }
          const std::optional<std::size_t> bytes = model.bytes(n);
          // A request no heap can serve fails as the heap would, without asking the real one.
          const bool heap_fails = op.heap_fails || (bytes && *bytes > (std::size_t{1} << 32));
          const std::string p = "p" + std::to_string(++pointers);
          const std::string call = std::string(name.value) + "* " + p + " = " + name.written + ".allocate(" + count + ");";
          const std::string wanted = !bytes ? "throws std::bad_array_new_length"
                                     : heap_fails ? "throws std::bad_alloc"
                                                  : "returns";
          t.call(call, (heap_fails ? "while every operator new fails: " : "") +
                           (wanted == "returns" ? "returns " + std::to_string(*bytes) + " bytes at a multiple of " +
                                                      std::to_string(model.alignment())
                                                : wanted));
          same_rebind<K>(t, name);
          if constexpr (kBuildable<K>) {
            auto alloc = make<K>();
            T* got = nullptr;
            HeapLog log;
            if (heap_fails) log.fail_every_allocation();
            const char* ended = ending_of([&] { got = alloc.allocate(n); });
            log.close();
            const std::string ending = ended;
            t.same(call, wanted, ending,
                   !bytes ? "n * sizeof(T) does not fit in a std::size_t, so allocate throws "
                            "std::bad_array_new_length before it asks the heap for anything"
                   : heap_fails ? "the heap is out of memory: the aligned operator new throws std::bad_alloc, and "
                                  "allocate lets it through"
                                : "allocate returns the block the aligned operator new returned");
            const std::string asked =
                !bytes ? "none"
                       : "operator new(" + std::to_string(*bytes) + ", std::align_val_t{" +
                             std::to_string(model.alignment()) + "})";
            t.same("the heap's calls during " + p + "'s allocate", asked, heap_calls(log),
                   "allocate(n) makes one call of the aligned global operator new, for n * sizeof(T) bytes at the "
                   "larger of Align and alignof(T), unless n * sizeof(T) overflows");
            if (ending == "returns") {
              t.same(p + " is the block operator new returned", true, log.news() == 1 && log.begin()->p == got,
                     "allocate returns what the aligned operator new returned, nothing else");
              blocks.live.push_back({p, op.which, n, got});
            }
          }
        });
        break;
      case AllocOp::deallocate: {
        if (blocks.live.empty()) break;
        const std::size_t index = op.which % blocks.live.size();
        const AllocBlock block = blocks.live[index];
        blocks.live.erase(blocks.live.begin() + static_cast<std::ptrdiff_t>(index));
        with_kind(block.kind, [&](auto kind, const KindName& name) {
          using K = decltype(kind);
          const aligned_model::Allocator model = model_of<K>();
          t.call(std::string(name.written) + ".deallocate(" + block.name + ", " + std::to_string(block.n) + ");");
          if constexpr (kBuildable<K>) {
            auto alloc = make<K>();
            HeapLog log;
            alloc.deallocate(static_cast<typename K::Value*>(block.p), block.n);
            log.close();
            t.same("the heap's calls during this deallocate",
                   "operator delete(" + block.name + ", " + std::to_string(*model.bytes(block.n)) +
                       ", std::align_val_t{" + std::to_string(model.alignment()) + "})",
                   heap_calls(log, block.p, block.name),
                   "deallocate(p, n) gives the block back through the sized, aligned operator delete, with the bytes "
                   "and the alignment allocate(n) used; any instance can free what another allocated");
          }
        });
        break;
      }
      case AllocOp::compare: {
        const std::size_t i = kPairs[op.which][0], j = kPairs[op.which][1];
        with_kind(i, [&](auto left, const KindName& left_name) {
          with_kind(j, [&](auto right, const KindName& right_name) {
            compare<decltype(left), decltype(right)>(t, "e" + std::to_string(++answers), left_name, right_name);
          });
        });
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The arena

namespace {

// memory_resource::allocate is declared never to return the null pointer nor a block that is
// not aligned as asked, and UndefinedBehaviorSanitizer stops the program at once when it does:
// the model stage calls do_allocate itself, so that such a block is reported as a difference
// with the sequence that led to it. (An explicit instantiation may name a private member; the
// friend function hands the member pointer out.)
using DoAllocate = void* (std::pmr::memory_resource::*)(std::size_t, std::size_t);
DoAllocate do_allocate_member();
template <DoAllocate Member>
struct ExposeDoAllocate {
  friend DoAllocate do_allocate_member() { return Member; }
};
template struct ExposeDoAllocate<&std::pmr::memory_resource::do_allocate>;

void* allocate(std::pmr::memory_resource& r, std::size_t bytes, std::size_t alignment) {
  return (r.*do_allocate_member())(bytes, alignment);
}

constexpr std::size_t kUpstreamLimit = 4096;

std::string big(std::size_t n) {
  if (n == kSizeMax) return "SIZE_MAX";
  return n > kSizeMax / 2 ? "SIZE_MAX - " + std::to_string(kSizeMax - n) : std::to_string(n);
}

// Why a request does not fit, as the model sees it.
std::string no_room(const aligned_model::Arena::Placement& at) {
  if (at.left == 0) return "nothing left in the buffer";
  if (at.padding >= at.left) {
    return std::to_string(at.padding) + " bytes of padding reach the end of the " + std::to_string(at.left) + " left";
  }
  return std::to_string(at.left) + " left, " + std::to_string(at.padding) + " of them padding";
}

struct ArenaBlock {
  std::string name;
  void* p;
  std::size_t bytes, alignment;
};

// The buffer: `offset` bytes past a page boundary, and exactly `size` bytes long, so that the
// heap's redzone follows its last byte.
struct Storage {
  std::byte* start = nullptr;
  explicit Storage(std::size_t bytes) : start(static_cast<std::byte*>(::operator new(bytes, std::align_val_t{4096}))) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() { ::operator delete(start, std::align_val_t{4096}); }
};

std::string upstream_blocks(const std::vector<aligned_model::UpstreamBlock>& blocks) {
  std::string out;
  for (const auto& b : blocks) {
    out += (out.empty() ? "" : ", ") + std::string("{") + big(b.bytes) + " bytes at " + std::to_string(b.alignment) +
           (b.held ? ", held" : ", given back") + "}";
  }
  return out.empty() ? "none" : out;
}

std::vector<aligned_model::UpstreamBlock> as_model(const std::vector<TrackingResource::Handed>& handed) {
  std::vector<aligned_model::UpstreamBlock> out;
  for (const auto& h : handed) out.push_back({h.bytes, h.alignment, h.held});
  return out;
}

}  // namespace

void run_arena(const ArenaSetup& setup, const std::vector<ArenaOp>& ops) {
  const std::size_t size = setup.buffer ? setup.size : 0;
  Storage storage(setup.buffer ? setup.offset + size : 1);
  std::byte* const buffer = setup.buffer ? storage.start + setup.offset : nullptr;
  TrackingResource tracking(kUpstreamLimit);
  std::pmr::memory_resource* const up = setup.null_upstream ? std::pmr::null_memory_resource() : &tracking;
  const std::string up_arg = setup.null_upstream ? "up" : "&up";
  const std::string up_ref = setup.null_upstream ? "*up" : "up";
  const std::string args = setup.buffer ? "buffer, " + std::to_string(size) + ", " + up_arg : "nullptr, 0, " + up_arg;
  std::string setup_lines;
  if (setup.buffer) {
    setup_lines += "alignas(4096) static std::byte storage[8192];  std::byte* buffer = storage + " +
                   std::to_string(setup.offset) + ";  // " + std::to_string(setup.offset) +
                   (setup.offset == 1 ? " byte" : " bytes") + " past a page boundary\n    ";
  }
  setup_lines += setup.null_upstream
                     ? "std::pmr::memory_resource* up = std::pmr::null_memory_resource();\n    "
                     : "alloclab::test::aligned::TrackingResource up(" + std::to_string(kUpstreamLimit) +
                           ");  // keeps the books; refuses more than " + std::to_string(kUpstreamLimit) + " bytes\n    ";
  setup_lines.resize(setup_lines.size() - 5);  // the last line's indentation
  Transcript t(setup_lines);

  aligned_model::Upstream model_up(setup.null_upstream, kUpstreamLimit, TrackingResource::kMaxBlocks);
  aligned_model::Arena model(address(buffer), size, model_up);
  std::optional<alloclab::ArenaResource> arena;
  const std::string declared = "std::optional<alloclab::ArenaResource> a(std::in_place, " + args + ");";
  t.call(declared);
  const std::string built = ending_of([&] { arena.emplace(buffer, size, up); });
  t.same(declared, std::string("returns"), built,
         "an arena over a buffer, or over no buffer with size 0, and a non-null upstream is valid");

  std::vector<ArenaBlock> live;  // the blocks handed out since the last release
  int pointers = 0, answers = 0;
  std::byte spare[16];

  for (const ArenaOp& op : ops) {
    bool quiet = true;           // the contract says this call makes no heap call
    std::string heap = "none";   // the heap calls the arena made during the call
    switch (op.kind) {
      case ArenaOp::allocate:
      case ArenaOp::allocate_heap_fails: {
        using Where = aligned_model::Arena::Where;
        const std::string p = "p" + std::to_string(++pointers);
        const std::string call = "void* " + p + " = a->allocate(" + big(op.bytes) + ", " + std::to_string(op.alignment) + ");";
        const bool valid = aligned_model::valid_alignment(op.alignment);
        // The heap fails only for a valid request: a refusal's exception may need the heap.
        const bool heap_fails = op.kind == ArenaOp::allocate_heap_fails && valid;
        const aligned_model::Arena::Placement placement =
            valid ? model.place(op.bytes, op.alignment) : aligned_model::Arena::Placement{Where::refused, 0, 0, 0};
        const std::size_t handed_before = tracking.handed_out().size(), refused_before = tracking.refused();
        void* got = nullptr;
        std::string ending;
        {
          HeapLog log;
          if (heap_fails) log.fail_every_allocation();
          const char* ended = ending_of([&] { got = allocate(*arena, op.bytes, op.alignment); });
          log.close();
          ending = ended;
          heap = heap_calls(log);
        }
        const std::vector<TrackingResource::Handed> handed = tracking.handed_out();
        const void* from_upstream = handed.size() == handed_before + 1 ? handed.back().p : nullptr;
        // Whether recording a spilled block needs the heap is the header's choice, and so is whether
        // it makes room for the record before it asks the upstream: with the heap failing, a spill
        // may throw std::bad_alloc before the upstream hears of it, and then nothing has changed.
        const bool upstream_not_asked = heap_fails && placement.where != Where::buffer &&
                                        ending == "throws std::bad_alloc" &&
                                        handed.size() == handed_before && tracking.refused() == refused_before;
        // What the model says the call does, and the rule behind it.
        std::string wanted = "returns", note, meaning;
        bool spill_unrecorded = false;
        if (!valid) {
          wanted = note = "throws std::invalid_argument";
          meaning = "an alignment that is not a power of two is refused with std::invalid_argument, and nothing changes";
        } else if (placement.where == Where::buffer) {
          note = "buffer + " + std::to_string(placement.offset);
          meaning = "the padding and the request fit in what is left, and the block starts inside the buffer, so it "
                    "comes from the buffer";
        } else if (upstream_not_asked) {
          wanted = "throws std::bad_alloc";
          note = "throws std::bad_alloc: " + no_room(placement) + "; no room for the record, so the upstream was not asked";
          meaning = "a request that throws changes nothing: the heap failed while the arena made room to record the "
                    "upstream's block, before it asked the upstream";
        } else if (placement.where == Where::refused) {
          wanted = "throws std::bad_alloc";
          note = "throws std::bad_alloc: " + no_room(placement) + ", and the upstream refuses it";
          meaning = "the request does not fit in the buffer, goes upstream, and the upstream refuses it: the arena "
                    "lets std::bad_alloc through and changes nothing";
        } else if (heap_fails && ending != "returns") {
          // Whether recording a spilled block needs the heap is the header's choice: when it does
          // and the heap fails, the call throws, having given the block back.
          wanted = "throws std::bad_alloc";
          note = "throws std::bad_alloc: " + no_room(placement) + "; the upstream's block could not be recorded, and went back";
          meaning = "a request that throws changes nothing: if recording the upstream's block fails, the block goes "
                    "back upstream before std::bad_alloc leaves (or the call returns the block, recorded, or it makes "
                    "room for the record before it asks the upstream)";
          spill_unrecorded = true;
        } else {
          note = "from upstream: " + no_room(placement);
          meaning = "the request does not fit in what is left (or its block would start at the end of the buffer), so "
                    "it goes to the upstream resource, as it was asked, and the buffer stays as it was";
        }
        t.call(call, (heap_fails ? "while every operator new fails: " : "") + note);
        t.same(call, wanted, ending, meaning);
        if (spill_unrecorded) {
          model.spill_unrecorded(op.bytes, op.alignment);
        } else if (valid && !upstream_not_asked) {
          model.allocate(placement, op.bytes, op.alignment);
        }
        if (ending == "returns") {
          const std::string where_model = placement.where == Where::buffer
                                              ? "the buffer, at buffer + " + std::to_string(placement.offset)
                                              : "the block the upstream handed out";
          std::string where_yours;
          const std::uintptr_t at = address(got), from = address(buffer);
          if (got == nullptr) {
            where_yours = "nullptr";
          } else if (got == from_upstream) {
            where_yours = "the block the upstream handed out";
          } else if (buffer != nullptr && at >= from && at < from + size) {
            where_yours = "the buffer, at buffer + " + std::to_string(at - from);
          } else if (buffer != nullptr && at == from + size) {
            where_yours = "buffer + " + std::to_string(size) + ", the end of the buffer";
          } else {
            where_yours = "an address neither in the buffer nor from the upstream";
          }
          t.same("where " + p + " comes from", where_model, where_yours,
                 placement.where == Where::buffer
                     ? "a block from the buffer starts at the first address past the cursor that is a multiple of "
                       "the alignment: the address, not the offset, is aligned"
                     : "a block from the buffer must start inside it, at a multiple of the alignment, and the "
                       "request must fit after the padding; otherwise it is passed to the upstream resource, and the "
                       "arena returns the upstream's block");
          std::memset(got, 0xA5, op.bytes);  // the caller uses its block
          live.push_back({p, got, op.bytes, op.alignment});
        }
        quiet = valid && placement.where == Where::buffer;
        break;
      }
      case ArenaOp::deallocate: {
        if (live.empty()) continue;
        const std::size_t index = op.pick % live.size();
        const ArenaBlock b = live[index];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));  // the caller is done with it
        t.call("a->deallocate(" + b.name + ", " + big(b.bytes) + ", " + std::to_string(b.alignment) + ");");
        HeapLog log;
        arena->deallocate(b.p, b.bytes, b.alignment);
        log.close();
        heap = heap_calls(log);
        break;
      }
      case ArenaOp::release: {
        t.call("a->release();");
        arena->release();
        model.release();
        live.clear();
        quiet = false;
        break;
      }
      case ArenaOp::rebuild: {
        t.call("a.reset(); a.emplace(" + args + ");", "destroys the arena, then builds another over the same buffer");
        arena.reset();
        model.release();
        live.clear();
        const std::string again = ending_of([&] { arena.emplace(buffer, size, up); });
        t.same("a.emplace(" + args + ")", std::string("returns"), again,
               "an arena over a buffer, or over no buffer with size 0, and a non-null upstream is valid");
        model = aligned_model::Arena(address(buffer), size, model_up);
        quiet = false;
        break;
      }
      case ArenaOp::is_equal: {
        const std::size_t which = op.pick % 4;
        const std::string e = "e" + std::to_string(++answers);
        const std::string other = which == 0   ? "*a"
                                  : which == 1 ? "alloclab::ArenaResource(" + args + ")"
                                  : which == 2 ? up_ref
                                               : "*std::pmr::new_delete_resource()";
        t.call("bool " + e + " = a->is_equal(" + other + ");", which == 0 ? "true" : "false");
        std::optional<alloclab::ArenaResource> twin;
        if (which == 1) twin.emplace(buffer, size, up);
        const std::pmr::memory_resource& with = which == 0   ? static_cast<const std::pmr::memory_resource&>(*arena)
                                                : which == 1 ? *twin
                                                : which == 2 ? *up
                                                             : *std::pmr::new_delete_resource();
        HeapLog log;
        const bool yours = arena->is_equal(with);
        log.close();
        heap = heap_calls(log);
        t.same(e, which == 0, yours,
               which == 0 ? "an arena is equal to itself"
                          : "an arena is equal only to itself: memory from it cannot be given back to another resource, "
                            "even another arena over the same buffer");
        break;
      }
      case ArenaOp::construct: {
        const std::size_t which = op.pick % 5;
        static constexpr const char* kArgs[] = {"nullptr, 16, ", "spare, 16, nullptr", "nullptr, 0, ",
                                                "nullptr, 0, nullptr", "spare, 0, "};
        const bool needs_up = which == 0 || which == 2 || which == 4;
        const std::string line = std::string("alloclab::ArenaResource b(") + kArgs[which] + (needs_up ? up_arg : "") + ");";
        const bool invalid = which < 2 || which == 3;
        t.call(which == 1 || which == 4 ? "std::byte spare[16];  " + line : line,
               invalid ? "throws std::invalid_argument" : "returns");
        void* const b_buffer = which == 1 || which == 4 ? spare : nullptr;
        const std::size_t b_size = which < 2 ? 16 : 0;
        std::pmr::memory_resource* const b_up = needs_up ? up : nullptr;
        const std::string ending = ending_of([&] { alloclab::ArenaResource b(b_buffer, b_size, b_up); });
        t.same(line, std::string(invalid ? "throws std::invalid_argument" : "returns"), ending,
               invalid ? "a null upstream, or a null buffer of nonzero size, is refused with std::invalid_argument"
                       : "a buffer of size 0, null or not, with an upstream is valid: every request then goes upstream");
        quiet = false;
        break;
      }
    }
    if (quiet) {
      t.same("the heap's calls during this call", std::string("none"), heap,
             op.kind == ArenaOp::deallocate
                 ? "deallocate does nothing: an arena frees everything at once, in release()"
             : op.kind == ArenaOp::is_equal
                 ? "is_equal only compares"
                 : "a block from the buffer costs no heap allocation: the arena aligns the address and moves the "
                   "cursor, nothing else");
    }
    t.same("a->used()", model.used(), arena->used(),
           "used() is the cursor's offset from the start of the buffer, padding included: a spill, a refused request "
           "and deallocate leave it, release() rewinds it to 0");
    t.same("a->upstream_bytes()", model.upstream_bytes(), arena->upstream_bytes(),
           "upstream_bytes() is the total size of the blocks currently held from upstream");
    if (!setup.null_upstream) {
      t.same("the blocks the upstream handed out", upstream_blocks(model_up.blocks()),
             upstream_blocks(as_model(tracking.handed_out())),
             "each request that does not fit goes upstream once, with its bytes and alignment; its block is held "
             "until release() or the destructor gives it back, and deallocate never does");
      t.same("up.refused()", model_up.refused(), tracking.refused(),
             "a request that does not fit is passed to the upstream once, even when the upstream refuses it");
      std::string problems = tracking.problems();
      if (!problems.empty() && problems.back() == '\n') problems.pop_back();
      for (std::size_t at = problems.find('\n'); at != std::string::npos; at = problems.find('\n', at)) {
        problems.replace(at, 1, "; ");
      }
      t.same("what the upstream saw given back wrongly", std::string("nothing"), problems.empty() ? "nothing" : problems,
             "every upstream block goes back exactly once, with the size and alignment it was taken with");
    }
  }
}

}  // namespace aligned_model
