// Where the model stage's pools get their memory: a heap of the stage's own (an OwnHeap of
// failing_new.hpp), which puts each block the header takes inside a call either above or below
// every block it gave before, as the sequence drew (Start::below). Where malloc puts a chunk
// depends on what the process did before: a pool that assumes the heap's addresses only grow (a
// chunk list kept sorted by appending) failed with one selection of stages and passed with
// another, and its shrunk sequence, replayed, passed. Here the placement is part of the sequence:
// a failure fails again when replayed, whatever ran before, and shrinking keeps only the
// placements it needs.
//
// It keeps AddressSanitizer's eyes: everything around a block is poisoned, a gap as large as the
// block (64 bytes to 4 KiB) separates two blocks, as the sanitizer's redzones do, and a block given back
// is poisoned and never handed out again within the sequence. Each block starts filled with
// 0xbe, the byte AddressSanitizer's malloc fills with, so what a pool reads from memory it never
// wrote is the same in every run. A block it cannot serve (larger than an eighth of its room, or
// none left) goes to malloc as before.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <sys/mman.h>

#include "failing_new.hpp"
#include "pool_test_support.hpp"

namespace pool_model {

class ModelHeap final : public alloclab::test::OwnHeap {
 public:
  /// A block given inside the current call: its size, and whether it went below the others.
  struct Given {
    std::size_t bytes;
    bool below;
  };

  /// The stage's heap, set as operator new's own at the first use. Never destroyed: operator
  /// delete may give it a block back at any later time, during the program's exit too.
  static ModelHeap& get() {
    static ModelHeap& heap = *new ModelHeap;
    return heap;
  }

  /// Starts a sequence: the blocks of the last one are forgotten, and the n-th block asked for
  /// inside a call goes below every block before it when `below[n]` is set (else above; past the
  /// end of `below`, above, as a heap whose addresses only grow would).
  void start(const std::vector<bool>& below) {
    poison(low_, high_ - low_);
    low_ = high_ = middle();
    below_ = below;
    next_ = 0;
    blocks_ = 0;
  }

  /// While a Call lives, operator new takes its blocks from this heap; the blocks of the call
  /// are listed in `given()` until the next one starts.
  class Call {
   public:
    Call() : heap_(get()) {
      heap_.given_count_ = 0;
      heap_.active_.store(true, std::memory_order_relaxed);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() { heap_.active_.store(false, std::memory_order_relaxed); }

   private:
    ModelHeap& heap_;
  };

  /// The blocks given inside the last call, in order (the first kLogged of them).
  std::vector<Given> given() const { return {given_.begin(), given_.begin() + std::min(given_count_, kLogged)}; }

  // Every operator new of the program asks, and nearly all outside a call: that answer stays a
  // load and a return, apart from the work of placing a block (whose locals cost AddressSanitizer
  // a frame of its own on every call).
  void* take(std::size_t n, std::size_t align) noexcept override {
    if (!active_.load(std::memory_order_relaxed) || room_ == nullptr) return nullptr;
    return place(n, align);
  }

  bool give_back(void* p) noexcept override {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    if (room_ == nullptr || at < base() || at >= base() + kRoom) return false;
    // A block not live here (given back twice, or never given) is left to free(), whose
    // AddressSanitizer reports it as it would any bad free.
    for (std::size_t i = blocks_; i-- > 0;) {
      if (blocks_list_[i].at != at || blocks_list_[i].bytes == 0) continue;
      poison(at, blocks_list_[i].bytes);
      blocks_list_[i].bytes = 0;
      return true;
    }
    return false;
  }

 private:
  static constexpr std::size_t kRoom = std::size_t{32} << 20;  // 16 MiB on each side of the middle
  static constexpr std::size_t kBlocks = 4096;                  // blocks a sequence may take
  static constexpr std::size_t kLogged = 16;                    // blocks of one call listed in given()

  // Puts n bytes above or below every block before them, as the sequence drew, a gap away.
  [[gnu::noinline]] void* place(std::size_t n, std::size_t align) noexcept {
    if (n > kRoom / 8 || blocks_ == kBlocks) return nullptr;
    const bool below = next_ < below_.size() && below_[next_];
    ++next_;
    align = std::max(align, alignof(std::max_align_t));
    const std::uintptr_t gap = n < 64 ? 64 : n > 4096 ? 4096 : n;
    std::uintptr_t at = 0;
    if (below) {
      if (low_ - base() < gap + n + align) return nullptr;
      at = (low_ - gap - n) / align * align;
      low_ = at;
    } else {
      at = (high_ + gap + align - 1) / align * align;
      if (base() + kRoom - at < n) return nullptr;
      high_ = at + n;
    }
    unpoison(at, n);
    std::memset(reinterpret_cast<void*>(at), 0xbe, n);
    blocks_list_[blocks_++] = {at, n};
    if (given_count_ < kLogged) given_[given_count_] = {n, below};
    ++given_count_;
    return reinterpret_cast<void*>(at);
  }

  struct Block {
    std::uintptr_t at;
    std::size_t bytes;  // 0 once given back
  };

  // The room is mapped, not taken with malloc: LeakSanitizer scans every block of the heap for
  // pointers at the program's exit, and would read all of it.
  ModelHeap() {
    void* room = mmap(nullptr, kRoom, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (room == MAP_FAILED) return;  // take() then finds no room, and every block goes to malloc
    room_ = static_cast<unsigned char*>(room);
    low_ = high_ = middle();
    poison(base(), kRoom);
    alloclab::test::use_own_heap(this);
  }

  std::uintptr_t base() const { return reinterpret_cast<std::uintptr_t>(room_); }
  std::uintptr_t middle() const { return base() + kRoom / 2; }

  static void poison(std::uintptr_t at, std::size_t n) {
    alloclab::test::pool::poison(reinterpret_cast<const void*>(at), n);
  }
  static void unpoison(std::uintptr_t at, std::size_t n) {
    alloclab::test::pool::unpoison(reinterpret_cast<const void*>(at), n);
  }

  unsigned char* room_ = nullptr;  // never unmapped: a block of it may be given back at any later time
  std::uintptr_t low_ = 0, high_ = 0;
  std::vector<bool> below_;
  std::size_t next_ = 0;
  std::atomic<bool> active_{false};  // other threads of the test program ask too, and get malloc
  std::array<Block, kBlocks> blocks_list_{};
  std::size_t blocks_ = 0;
  std::array<Given, kLogged> given_{};
  std::size_t given_count_ = 0;
};

}  // namespace pool_model
