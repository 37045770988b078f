// A sequence: one sample of one request, from its arrival to its last token, and the queue it
// waits in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "trace.hpp"

namespace alloclab::engine {

/// A sequence's token ids: a row of the engine's token buffer, sized at start-up for the prompt
/// and every token the sample may generate (as vLLM's persistent input batch keeps a row of
/// token ids per request), so that appending never allocates, as a growing vector would.
class TokenRow {
 public:
  TokenRow() = default;
  TokenRow(int* data, int capacity) noexcept : data_(data), capacity_(capacity) {}
  void assign(std::span<const int> from) {
    if (static_cast<int>(from.size()) > capacity_) throw std::logic_error("TokenRow: more tokens than its row holds");
    std::copy(from.begin(), from.end(), data_);
    size_ = static_cast<int>(from.size());
  }
  void push_back(int token) {
    if (size_ == capacity_) throw std::logic_error("TokenRow: more tokens than its row holds");
    data_[size_++] = token;
  }
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(size_); }
  [[nodiscard]] int back() const noexcept { return data_[size_ - 1]; }
  [[nodiscard]] int operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] const int* begin() const noexcept { return data_; }
  [[nodiscard]] const int* end() const noexcept { return data_ + size_; }
  [[nodiscard]] std::span<const int> span() const noexcept { return {data_, static_cast<std::size_t>(size_)}; }

 private:
  int* data_ = nullptr;
  int capacity_ = 0, size_ = 0;
};

/// One sequence: a request's prompt and one sample's generated tokens. Pooled (exercise 02):
/// sequences are made and destroyed all the time, always the same size.
struct Sequence {
  /// A request on arrival: its prompt, in `row` (room for the prompt and every new token), and
  /// all its samples still to fork off once the prompt is computed.
  Sequence(int id_, int request_, const TraceRequest& r, int* row)
      : id(id_), request(request_), sample(0), forks_pending(r.samples), prompt_len(static_cast<int>(r.prompt.size())),
        target_len(prompt_len + r.new_tokens), seed(r.seed), tokens(row, target_len) {
    tokens.assign(r.prompt);
  }

  /// Sample `sample` of `parent`'s request, forked once the prompt is computed: the parent's
  /// tokens so far, copied into `row`, and its progress.
  Sequence(int id_, const Sequence& parent, int sample_, int* row)
      : id(id_), request(parent.request), sample(sample_), forks_pending(1), prompt_len(parent.prompt_len),
        target_len(parent.target_len), seed(parent.seed), tokens(row, target_len), computed(parent.computed),
        first_step(parent.first_step), first_seconds(parent.first_seconds) {
    tokens.assign(parent.tokens.span());
  }

  [[nodiscard]] bool done() const noexcept { return static_cast<int>(tokens.size()) == target_len; }

  int id;               // the block manager's id
  int request, sample;  // which output it produces
  int forks_pending;    // samples still to fork off once the prompt is computed (n, then 1)
  int prompt_len, target_len;
  std::uint64_t seed;
  TokenRow tokens;          // prompt, then generated
  int computed = 0;         // tokens whose K and V are in the cache
  int first_step = -1;      // the step that sampled its first token (-1: not yet), and when it ended
  double first_seconds = 0;
};

/// The waiting sequences, in a ring sized at start-up for every sequence the trace can make:
/// arrivals join at the back, preempted sequences at the front, and neither ever allocates (a
/// std::deque allocates a chunk each time its ends cross one).
class WaitingQueue {
 public:
  explicit WaitingQueue(std::size_t capacity) : ring_(std::max<std::size_t>(capacity, 1)) {}
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] Sequence* front() const noexcept { return ring_[head_]; }
  void push_back(Sequence* s) {
    full();
    ring_[(head_ + size_++) % ring_.size()] = s;
  }
  void push_front(Sequence* s) {
    full();
    head_ = (head_ + ring_.size() - 1) % ring_.size();
    ring_[head_] = s;
    ++size_;
  }
  void pop_front() noexcept {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < size_; ++i) f(ring_[(head_ + i) % ring_.size()]);
  }

 private:
  void full() const {
    if (size_ == ring_.size()) throw std::logic_error("WaitingQueue: more sequences than the trace can make");
  }
  std::vector<Sequence*> ring_;
  std::size_t head_ = 0, size_ = 0;
};

}  // namespace alloclab::engine
