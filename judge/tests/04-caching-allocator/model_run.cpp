// How one sequence of calls runs on the caching allocator under test and on the model
// (model.hpp), with every observer compared after each call. stage6_model.cpp generates the
// sequences.
#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <sys/mman.h>

#include "caching_under_test.hpp"
#include "failing_new.hpp"
#include "model.hpp"
#include "model_calls.hpp"
#include "model_check.hpp"

namespace caching_model {
// Named after the file: the stages are compiled two to a translation unit.
namespace model_run {

using alloclab::test::model::Transcript;
using Yours = alloclab::test::caching::CachingAllocator<Device>;

constexpr std::size_t kBudget = 64 * MiB;

// The memory of your allocator's device, mapped once for the whole run and never touched, so
// that it costs no page (the model's device has a made-up address: nobody reads it either). Not
// from the heap: LeakSanitizer would read all 64 MiB at exit, looking for pointers.
std::uintptr_t device_memory() {
  static void* const memory =
      mmap(nullptr, kBudget, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return reinterpret_cast<std::uintptr_t>(memory);
}
constexpr std::uintptr_t kModelBase = 1 << 20;

int local = 0;  // the transcript's `local`: a pointer no allocator handed out

// ---- how calls and values print --------------------------------------------------------------

std::string size_text(std::size_t n) {
  if (n == kLargestRequest) return "SIZE_MAX / (2 * MiB) * (2 * MiB)";
  if (n == kLargestRequest + 1) return "SIZE_MAX / (2 * MiB) * (2 * MiB) + 1";
  if (n > SIZE_MAX - 4096) return n == SIZE_MAX ? "SIZE_MAX" : "SIZE_MAX - " + std::to_string(SIZE_MAX - n);
  if (n != 0 && n % MiB == 0) return std::to_string(n / MiB) + " * MiB";
  if (n != 0 && n % KiB == 0) return std::to_string(n / KiB) + " * KiB";
  return std::to_string(n);
}

// A snapshot as the contract lets a caller see it, with segments placed by their device offset:
// the same for your allocator and for the model when they agree. Rendered only to report.
struct BlockView {
  std::size_t offset, size;
  bool allocated, pending;
  bool operator==(const BlockView&) const = default;
};
struct SegmentView {
  std::size_t at, size;  // at: the base's offset from the device's start
  bool small;
  std::vector<BlockView> blocks;
  bool operator==(const SegmentView&) const = default;
};

std::vector<SegmentView> view(const Allocator& model) {
  std::vector<SegmentView> out;
  for (const auto& seg : model.segments()) {
    SegmentView v{model.device().offset_of(seg.base), seg.size, seg.small, {}};
    for (const auto& b : seg.blocks)
      v.blocks.push_back({b.offset, b.size, b.state == State::allocated, b.state == State::pending});
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<SegmentView> view(const std::vector<alloclab::test::caching::SegmentInfo>& snapshot, const Device& device) {
  std::vector<SegmentView> out;
  for (const auto& seg : snapshot) {
    SegmentView v{device.offset_of(seg.base), seg.size, seg.small_pool, {}};
    for (const auto& b : seg.blocks) v.blocks.push_back({b.offset, b.size, b.allocated, b.pending});
    out.push_back(std::move(v));
  }
  return out;
}

std::string shown(const SegmentView& seg) {
  std::string s = "{at device offset " + std::to_string(seg.at) + ", " + std::to_string(seg.size) + " bytes, " +
                  (seg.small ? "small" : "large") + " pool:";
  for (const BlockView& b : seg.blocks) {
    const char* state = b.allocated ? (b.pending ? "allocated and pending" : "allocated") : b.pending ? "pending" : "free";
    s += " [" + std::to_string(b.offset) + "+" + std::to_string(b.size) + " " + state + "]";
  }
  return s + "}";
}

// ---- one call on your header, with the heap armed to fail -------------------------------------

enum class Ending { returned, out_of_memory, bad_alloc, invalid_argument, other };

std::string name(Ending e) {
  switch (e) {
    case Ending::returned: return "returns";
    case Ending::out_of_memory: return "throws alloclab::OutOfMemoryError";
    case Ending::bad_alloc: return "throws std::bad_alloc (not an OutOfMemoryError)";
    case Ending::invalid_argument: return "throws std::invalid_argument";
    case Ending::other: return "throws something else";
  }
  return "?";
}

struct Run {
  Ending ending = Ending::returned;
  bool fired = false;     // the armed heap allocation was reached, and refused
  long heap_kept = 0;     // heap blocks in use after the call minus before
  std::array<char, 512> what{};
};

// Runs `call` while the `fail`-th heap allocation inside it is refused (0: none), and says how
// it ended. Nothing here takes heap memory of its own between the two counts of the heap.
template <class Call>
Run run_call(long fail, Call&& call) {
  Run r;
  const long before = alloclab::test::news_in_use();
  {
    alloclab::test::FailingNew failing(fail);
    try {
      call();
    } catch (const alloclab::test::caching::OutOfMemoryError& e) {
      r.ending = Ending::out_of_memory;
      const char* what = e.what();
      for (std::size_t i = 0; i + 1 < r.what.size() && what[i] != '\0'; ++i) r.what[i] = what[i];
    } catch (const std::invalid_argument&) {
      r.ending = Ending::invalid_argument;
    } catch (const std::bad_alloc&) {
      r.ending = Ending::bad_alloc;
    } catch (...) {
      r.ending = Ending::other;
    }
    r.fired = fail != 0 && failing.fired();
  }
  r.heap_kept = alloclab::test::news_in_use() - before;
  return r;
}

// The decimal numbers of a message, in order.
std::vector<std::size_t> numbers_in(const char* text) {
  std::vector<std::size_t> out;
  for (const char* c = text; *c != '\0';) {
    if (*c < '0' || *c > '9') {
      ++c;
      continue;
    }
    std::size_t n = 0;
    bool overflow = false;
    for (; *c >= '0' && *c <= '9'; ++c) {
      const auto digit = static_cast<std::size_t>(*c - '0');
      if (n > (SIZE_MAX - digit) / 10) overflow = true;
      n = n * 10 + digit;
    }
    if (!overflow) out.push_back(n);
  }
  return out;
}

// Whether `wanted` appear in `numbers` in that order, other numbers between them allowed.
bool in_order(const std::vector<std::size_t>& numbers, const std::vector<std::size_t>& wanted) {
  std::size_t w = 0;
  for (std::size_t n : numbers)
    if (w < wanted.size() && n == wanted[w]) ++w;
  return w == wanted.size();
}

// ---- the meanings, in the contract's words ------------------------------------------------------

constexpr const char* kAllocateLayout =
    "before anything else the pending blocks whose events are all done are freed and merged; then the request "
    "takes the smallest free block of its stream and pool that fits, the lowest address among equals, or one new "
    "segment when none fits; the block is split when the rest is at least 512 bytes (small pool) or more than 1 "
    "MiB (large pool)";
constexpr const char* kDeallocateLayout =
    "a freed block merges with its free neighbours in its own segment (never with a pending one); one used on "
    "other streams becomes pending instead, merging with nothing; a refused free changes nothing";
constexpr const char* kNoBlockChanges =
    "this call changes no block: pending blocks are freed only by allocate (n > 0) and empty_cache";
constexpr const char* kEmptyCacheLayout =
    "empty_cache first synchronizes and frees every pending block when there is one, then returns to the device "
    "every segment that holds no allocated or pending block";
constexpr const char* kHeapFailureLayout =
    "a call that fails on the heap changes nothing, except what allocate and empty_cache do for themselves "
    "before the request: the pending blocks they freed stay free, and what the retry's empty_cache returned "
    "stays returned";

class Session {
 public:
  Session()
      : t_("TestDevice device(64 * MiB); CachingAllocator<TestDevice> a(device); int local = 0;"),
        device_(kBudget, device_memory()),
        model_(Device(kBudget, kModelBase)) {
    yours_.emplace(device_);
  }

  void run(const Op& op) {
    switch (op.kind) {
      case Op::allocate: return allocate(op);
      case Op::deallocate: return deallocate(op);
      case Op::record_stream: return record_stream(op);
      case Op::complete:
        device_.complete(op.stream);
        model_.device().complete(op.stream);
        t_.call("device.complete(" + std::to_string(op.stream) + ");",
                "stream " + std::to_string(op.stream) + " runs what was queued on it");
        return compare(kNoBlockChanges);
      case Op::synchronize:
        device_.synchronize();
        model_.device().synchronize();
        t_.call("device.synchronize();", "every stream runs what was queued on it");
        return compare(kNoBlockChanges);
      case Op::empty_cache: return empty_cache(op);
      case Op::set_limit: {
        const std::size_t limit = op.n == kNoLimit ? SIZE_MAX : model_.device().in_use() + op.n * MiB;
        device_.set_limit(limit);
        model_.device().set_limit(limit);
        t_.call("device.set_limit(" + (limit == SIZE_MAX ? std::string("SIZE_MAX") : size_text(limit)) + ");",
                "the device refuses what would take it beyond that");
        return compare(kNoBlockChanges);
      }
    }
  }

  // The allocator goes out of scope.
  void end() {
    const std::size_t syncs = device_.synchronize_calls();
    t_.call("}  // a goes out of scope: its destructor runs");
    yours_.reset();
    t_.same("device.synchronize_calls() during the destructor", static_cast<std::size_t>(model_.destructor_synchronizes()),
            device_.synchronize_calls() - syncs,
            "the destructor synchronizes once first when blocks are pending (a stream may still read them), and "
            "not at all when none are, as empty_cache");
    t_.same("device.live_allocations() after the destructor", std::size_t{0}, device_.live_allocations(),
            "the destructor returns every segment to the device, whether its blocks are allocated, pending or free");
    t_.same("device.bad_frees()", std::size_t{0}, device_.bad_frees(),
            "the allocator gives the device back only segments it got from it, each once");
  }

 private:
  struct Handle {
    std::string name;
    std::uintptr_t model;  // the address the model handed out
    void* yours;
  };

  // The pointers that fit a target: `live` the allocated blocks, `recorded` those of them used
  // on other streams, `freed` the pointers whose block is neither allocated nor pending any more,
  // `pending` the pending ones.
  std::vector<const Handle*> handles(Target target) const {
    std::vector<const Handle*> out;
    for (const Handle& h : handles_) {
      const bool allocated = model_.block_at(h.model, State::allocated);
      const bool waiting = model_.block_at(h.model, State::pending);
      const bool fits = target == live || target == interior ? allocated
                        : target == recorded                 ? model_.recorded(h.model)
                        : target == pending                  ? waiting
                                                             : !allocated && !waiting;
      if (fits) out.push_back(&h);
    }
    if (out.empty() && target == recorded) return handles(live);
    // A pointer handed out twice (freed, then reused) names one block: keep its newest name.
    std::vector<const Handle*> unique;
    for (std::size_t i = out.size(); i-- > 0;) {
      bool seen = false;
      for (const Handle* u : unique) seen = seen || u->model == out[i]->model;
      if (!seen) unique.insert(unique.begin(), out[i]);
    }
    return unique;
  }

  // The pointer a deallocate or record_stream passes, as the transcript writes it; false when
  // no pointer fits the target (the op is left out).
  struct Pointer {
    std::string text;
    std::uintptr_t model;
    void* yours;
  };
  std::optional<Pointer> pointer(const Op& op) const {
    switch (static_cast<Target>(op.target)) {
      case null: return Pointer{"nullptr", 0, nullptr};
      case foreign: return Pointer{"&local", 1, &local};
      default: break;
    }
    const auto fitting = handles(static_cast<Target>(op.target));
    if (fitting.empty()) return std::nullopt;
    const Handle& h = *fitting[fitting.size() - 1 - op.pick % fitting.size()];
    if (op.target == interior)
      return Pointer{"static_cast<char*>(" + h.name + ") + 256", h.model + 256, static_cast<char*>(h.yours) + 256};
    return Pointer{h.name, h.model, h.yours};
  }

  static std::string with_failure(const Op& op, const Run& r) {
    if (!r.fired) return "";
    return "with alloclab::test::FailingNew heap(" + std::to_string(op.fail) + ") around it, the heap refuses the " +
           "call's allocation number " + std::to_string(op.fail) + "; yours " + name(r.ending);
  }

  // round_size of the request just made, where it has one.
  void same_round_size(std::size_t n) {
    if (n <= SIZE_MAX - 511 && round_size(n) != Yours::round_size(n))
      t_.same("CachingAllocator<TestDevice>::round_size(" + size_text(n) + ")", round_size(n), Yours::round_size(n),
              "round_size(n) is n rounded up to a multiple of 512, and at least 512");
  }

  void allocate(const Op& op) {
    const std::string p = "p" + std::to_string(++names_);
    const std::string call = "void* " + p + " = a.allocate(" + size_text(op.n) +
                             (op.stream != 0 ? ", " + std::to_string(op.stream) : "") + ");";
    const std::size_t malloc_calls = device_.malloc_calls(), syncs = device_.synchronize_calls();
    void* got = nullptr;
    const Run r = run_call(op.fail, [&] { got = yours_->allocate(op.n, op.stream); });
    if (op.n == 0) {
      t_.call(call, "nullptr");
      same_round_size(op.n);
      if (r.ending != Ending::returned)
        t_.same(call, name(Ending::returned), name(r.ending), "allocate(0) returns nullptr and changes nothing");
      if (got != nullptr) t_.same(p + " == nullptr", true, false, "allocate(0) returns nullptr and changes nothing");
      t_.same("heap blocks allocate(0) kept", 0L, r.heap_kept, "allocate(0) changes nothing, the heap included");
      return compare("allocate(0) changes nothing, not even the pending blocks that are ready");
    }
    if (r.fired && r.ending == Ending::bad_alloc) {
      t_.call(call, with_failure(op, r));
      same_round_size(op.n);
      accept_heap_failure(op, r, device_.malloc_calls() - malloc_calls, device_.synchronize_calls() - syncs);
      return;
    }
    const std::size_t model_calls = model_.device().malloc_calls();
    const std::vector<SegmentView> layout_before = view(model_);
    const Allocation m = model_.allocate(op.n, op.stream);
    const std::string expected =
        m.out_of_memory ? name(Ending::out_of_memory) : "device offset " + std::to_string(model_.device().offset_of(m.address));
    t_.call(call, r.fired ? expected + "; " + with_failure(op, r) : expected);
    same_round_size(op.n);
    const Ending wanted = m.out_of_memory ? Ending::out_of_memory : Ending::returned;
    if (wanted != r.ending)
      t_.same(call, name(wanted), name(r.ending),
            m.out_of_memory
                ? (op.n > kLargestRequest
                       ? "a request whose rounding, to 512 bytes or its segment's to 2 MiB, would overflow throws "
                         "alloclab::OutOfMemoryError at once, without calling the device"
                       : "no free block fits and the device refuses the segment twice, before and after the retry's "
                         "empty_cache, so the call throws alloclab::OutOfMemoryError")
                : "a request of at least one byte that a free block or a new segment can hold returns a block");
    if (m.out_of_memory) {
      const auto numbers = numbers_in(r.what.data());
      if (!in_order(numbers, {op.n, m.allocated, m.reserved})) {
        t_.differ("e.what()",
                  "a message that gives " + std::to_string(op.n) + ", then " + std::to_string(m.allocated) +
                      ", then " + std::to_string(m.reserved),
                  "\"" + std::string(r.what.data()) + "\"",
                  "what() gives the request as the caller passed it, then allocated_bytes and reserved_bytes as they "
                  "are when it throws (after the retry's empty_cache), in decimal, in that order");
      }
      if (layout_before == view(model_)) {
        t_.same("heap blocks the call kept", 0L, r.heap_kept,
                "a call that throws keeps no heap memory it took for the request: a block record made before the "
                "device call is given back when the device refuses");
      }
    } else {
      if (got == nullptr)
        t_.same(p + " == nullptr", false, true,
                "a request that can be served returns a block; one that cannot throws, never returns nullptr");
      if (model_.device().offset_of(m.address) != device_.offset_of(got))
        t_.same("device.offset_of(" + p + ")", model_.device().offset_of(m.address), device_.offset_of(got),
                kAllocateLayout);
      handles_.push_back({p, m.address, got});
    }
    if (!r.fired) {
      t_.same("device.malloc_calls() during this call", model_.device().malloc_calls() - model_calls,
              device_.malloc_calls() - malloc_calls,
              "a request that no free block fits asks the device for one segment, and once more after emptying the "
              "cache if it was refused; a request served from the cache, or too large to round, asks nothing");
    }
    compare(kAllocateLayout);
  }

  void deallocate(const Op& op) {
    const auto ptr = pointer(op);
    if (!ptr) return;
    const std::string call = "a.deallocate(" + ptr->text + ");";
    const Run r = run_call(op.fail, [&] { yours_->deallocate(ptr->yours); });
    if (r.fired && r.ending == Ending::bad_alloc) {
      t_.call(call, with_failure(op, r));
      return accept_heap_failure(op, r, 0, 0);
    }
    const bool refused = op.target != null && !model_.deallocate(ptr->model);
    const std::string expected = refused ? name(Ending::invalid_argument) : "";
    t_.call(call, r.fired ? (refused ? expected + "; " : "") + with_failure(op, r) : expected);
    const Ending wanted = refused ? Ending::invalid_argument : Ending::returned;
    if (wanted != r.ending)
      t_.same(call, name(wanted), name(r.ending),
            op.target == null ? "deallocate(nullptr) does nothing"
            : refused ? "a pointer this allocator did not hand out, an interior pointer, one already freed or a "
                        "pending block is refused with std::invalid_argument, and nothing changes"
                      : "deallocate of a block handed out and not freed frees it");
    if (refused) {
      t_.same("heap blocks the refused call kept", 0L, r.heap_kept,
              "a call that throws keeps no heap memory it took, and changes nothing");
    }
    compare(kDeallocateLayout);
  }

  void record_stream(const Op& op) {
    const auto ptr = pointer(op);
    if (!ptr) return;
    const int stream = (model_.stream_of(ptr->model) + op.stream) % kStreams;
    const std::string call = "a.record_stream(" + ptr->text + ", " + std::to_string(stream) + ");";
    const Run r = run_call(op.fail, [&] { yours_->record_stream(ptr->yours, stream); });
    if (r.fired && r.ending == Ending::bad_alloc) {
      t_.call(call, with_failure(op, r));
      return accept_heap_failure(op, r, 0, 0);
    }
    const bool refused = op.target == null || !model_.record_stream(ptr->model, stream);
    t_.call(call, r.fired ? with_failure(op, r) : refused ? name(Ending::invalid_argument) : "");
    const Ending wanted = refused ? Ending::invalid_argument : Ending::returned;
    if (wanted != r.ending)
      t_.same(call, name(wanted), name(r.ending),
            refused ? "record_stream of anything but a block handed out and not freed (nullptr, a pointer from "
                      "elsewhere, an interior pointer, a freed or pending block) throws std::invalid_argument and "
                      "changes nothing"
                    : "record_stream of a live block records the stream; its own stream, or one recorded before, "
                      "changes nothing");
    if (refused) {
      t_.same("heap blocks the refused call kept", 0L, r.heap_kept,
              "a call that throws keeps no heap memory it took, and changes nothing");
    }
    compare("record_stream changes no block: the events are recorded at the free");
  }

  void empty_cache(const Op& op) {
    const std::size_t syncs = device_.synchronize_calls();
    const Run r = run_call(op.fail, [&] { yours_->empty_cache(); });
    if (r.fired && r.ending == Ending::bad_alloc) {
      t_.call("a.empty_cache();", with_failure(op, r));
      return accept_heap_failure(op, r, 0, device_.synchronize_calls() - syncs);
    }
    t_.call("a.empty_cache();", with_failure(op, r));
    model_.empty_cache();
    if (r.ending != Ending::returned) t_.same("a.empty_cache()", name(Ending::returned), name(r.ending), "empty_cache returns");
    compare(kEmptyCacheLayout);
  }

  // Your call threw std::bad_alloc when the heap refused an allocation inside it. It must have
  // changed nothing but the housekeeping the contract lets stay: for allocate, the ready pending
  // blocks it freed first and, on the retry's path, what its empty_cache did; for empty_cache,
  // the pending blocks it freed after synchronizing. What yours shows decides how far it got;
  // the model checks that this is a point the contract allows, and goes there too.
  void accept_heap_failure(const Op& op, const Run& r, std::size_t malloc_calls, std::size_t syncs) {
    const auto snapshot = yours_->snapshot();
    auto still_pending = [&](const PendingBlock& b) {
      for (const auto& seg : snapshot) {
        if (device_.offset_of(seg.base) != model_.device().offset_of(b.base)) continue;
        for (const auto& info : seg.blocks)
          if (info.offset == b.offset && info.size == b.size && info.pending) return true;
      }
      return false;
    };
    std::vector<PendingBlock> freed_blocks;
    for (const PendingBlock& b : model_.pending_blocks())
      if (!still_pending(b)) freed_blocks.push_back(b);
    auto where = [&](const PendingBlock& b) {
      return "the pending block at offset " + std::to_string(b.offset) + " of the segment at device offset " +
             std::to_string(model_.device().offset_of(b.base));
    };
    t_.same("device.synchronize_calls() during this call", syncs == 0 ? std::size_t{0} : std::size_t{1}, syncs,
            "a call synchronizes at most once");
    Allocator after = model_;
    bool changed = !freed_blocks.empty();
    const bool may_retry = op.kind == Op::allocate && [&] {
      Allocator ready_freed = model_;
      ready_freed.free_ready_pending();
      return ready_freed.needs_retry(op.n, op.stream);
    }();
    if (syncs == 0) {
      for (const PendingBlock& b : freed_blocks)
        if (!b.ready)
          t_.differ(where(b), "pending", "freed",
                    "a pending block whose events are not all done is freed only after synchronize()");
      for (const PendingBlock& b : freed_blocks) after.free_pending_at(b.base, b.offset);
    } else {
      if (op.kind == Op::allocate) {
        if (!may_retry)
          t_.differ("device.synchronize_calls() during this call", "0", "1",
                    "only the retry after a refusal synchronizes, and this request fits a free block of its stream "
                    "and pool, or the device has room for its segment");
        for (const PendingBlock& b : model_.pending_blocks())
          if (b.ready && still_pending(b))
            t_.differ(where(b), "freed", "pending",
                      "every allocate with n > 0 first frees the pending blocks whose events are all done, before "
                      "the retry synchronizes");
        after.free_ready_pending();
      }
      if (op.kind != Op::allocate && op.kind != Op::empty_cache)
        t_.differ("device.synchronize_calls() during this call", "0", std::to_string(syncs),
                  "only empty_cache, and the retry after a refusal, synchronize");
      if (!after.has_pending())
        t_.differ("device.synchronize_calls() during this call", "0", "1",
                  "with nothing pending there is nothing to wait for: empty_cache, and the retry, do not synchronize");
      after.device().synchronize();
      for (const PendingBlock& b : freed_blocks) after.free_pending_at(b.base, b.offset);
    }
    if (op.kind == Op::allocate) {
      std::vector<std::uintptr_t> returned;
      for (const auto& seg : after.segments()) {
        bool kept = false;
        for (const auto& info : snapshot) kept = kept || device_.offset_of(info.base) == after.device().offset_of(seg.base);
        if (!kept) returned.push_back(seg.base);
      }
      if (!returned.empty() || malloc_calls >= 2) {
        if (!may_retry)
          t_.differ("device.malloc_calls() during this call", "at most 1", std::to_string(malloc_calls),
                    "only a refused request empties the cache and asks the device again, and this one fits a free "
                    "block of its stream and pool, or the device has room for its segment");
        if (after.has_pending())
          t_.differ("pending_bytes() when the retry returned segments", "0", std::to_string(after.pending_bytes()),
                    "the retry's empty_cache synchronizes and frees every pending block before it returns the "
                    "wholly free segments");
        if (returned != after.wholly_free_segments())
          t_.differ("the segments the failed call returned to the device", std::to_string(after.wholly_free_segments().size()),
                    std::to_string(returned.size()),
                    "the retry's empty_cache returns every segment that holds no allocated or pending block, or, "
                    "when it fails on the heap while it frees the pending blocks, none");
        after.return_free_segments();
        changed = true;
      }
      if (malloc_calls >= 2) after.count_retry();
      if (malloc_calls > 2)
        t_.differ("device.malloc_calls() during this call", "at most 2", std::to_string(malloc_calls),
                  "the device is asked once, and once more after the cache was emptied");
    }
    model_ = after;
    if (!changed) {
      t_.same("heap blocks the failed call kept", 0L, r.heap_kept,
              "a call that fails on the heap changes nothing, the heap included: every heap block it took (a block "
              "record, a key, a map entry, room in a vector) is given back before the exception leaves it");
    }
    compare(kHeapFailureLayout);
  }

  // Every observer the contract offers, on your allocator and on the model.
  void compare(const char* layout_meaning) {
    const auto model = view(model_);
    const auto yours = view(yours_->snapshot(), device_);
    if (model != yours) {
      t_.same("a.snapshot().size()", model.size(), yours.size(),
              "snapshot() lists every segment the allocator holds from the device, by base address");
      for (std::size_t i = 0; i < model.size(); ++i)
        if (!(model[i] == yours[i]))
          t_.differ("a.snapshot()[" + std::to_string(i) + "]", shown(model[i]), shown(yours[i]), layout_meaning);
    }
    const auto& m = model_.stats();
    const alloclab::test::caching::CacheStats s = yours_->stats();
    t_.same("a.stats().allocated_bytes", m.allocated_bytes, s.allocated_bytes,
            "allocated_bytes is the sum of the allocated blocks' whole sizes; a pending block is not allocated");
    t_.same("a.stats().reserved_bytes", m.reserved_bytes, s.reserved_bytes,
            "reserved_bytes is the sum of the segments' sizes, pending blocks included");
    t_.same("a.stats().peak_allocated_bytes", m.peak_allocated_bytes, s.peak_allocated_bytes,
            "peak_allocated_bytes is the largest allocated_bytes ever; a call that throws leaves it as it was");
    t_.same("a.stats().peak_reserved_bytes", m.peak_reserved_bytes, s.peak_reserved_bytes,
            "peak_reserved_bytes is the largest reserved_bytes ever; a segment given back on a heap failure never "
            "counted");
    t_.same("a.stats().device_mallocs", m.device_mallocs, s.device_mallocs,
            "device_mallocs counts the device calls that gave a segment the allocator kept");
    t_.same("a.stats().device_frees", m.device_frees, s.device_frees,
            "device_frees counts the segments empty_cache, and the retry's empty_cache, returned");
    t_.same("a.stats().cache_hits", m.cache_hits, s.cache_hits,
            "cache_hits counts the requests served from a free block, without a device call");
    t_.same("a.stats().oom_retries", m.oom_retries, s.oom_retries,
            "oom_retries counts the second device calls, made after a refusal emptied the cache");
    t_.same("a.pending_bytes()", model_.pending_bytes(), yours_->pending_bytes(),
            "pending_bytes() is the sum of the pending blocks' sizes: freed, used on other streams, waiting for "
            "their events");
    t_.same("device.in_use()", model_.device().in_use(), device_.in_use(),
            "the device holds exactly the allocator's segments");
    t_.same("device.live_allocations()", model_.device().live_allocations(), device_.live_allocations(),
            "one device allocation per segment, none lost");
    for (int stream = 0; stream < kStreams; ++stream)
      if (model_.device().events_recorded_on(stream) != device_.events_recorded_on(stream))
        t_.same("device.events_recorded_on(" + std::to_string(stream) + ")", model_.device().events_recorded_on(stream),
              device_.events_recorded_on(stream),
              "the free of a block used on other streams records one event on each of them, however often it was "
              "recorded; nothing else records an event");
    t_.same("device.synchronize_calls()", model_.device().synchronize_calls(), device_.synchronize_calls(),
            "empty_cache, and the retry after a refusal, synchronize once when blocks are pending and never when "
            "none are; nothing else synchronizes");
    t_.same("device.bad_frees()", std::size_t{0}, device_.bad_frees(),
            "the allocator gives the device back only segments it got from it, each once");
    t_.same("device.bad_event_queries()", std::size_t{0}, device_.bad_event_queries(),
            "the allocator asks only about events the device recorded");
  }

  Transcript t_;
  Device device_;
  std::optional<Yours> yours_;
  Allocator model_;
  std::vector<Handle> handles_;
  int names_ = 0;
};

}  // namespace model_run

void run(const std::vector<Op>& ops) {
  model_run::Session session;
  for (const Op& op : ops) session.run(op);
  session.end();
}

}  // namespace caching_model
