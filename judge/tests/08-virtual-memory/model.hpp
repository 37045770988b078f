// The contiguous KV cache's contract as the simplest code that can be right, physical memory
// included: every granule's reference count, bytes and committed pages as plain vectors, every
// slot of the reservation as the granule it maps, the sequences in the order they were admitted,
// the idle slices in the order they went idle. The model stage (stage7_model.cpp) runs every
// call on this and on the header under test, the caller's writes and reads of token bytes
// included, and compares what the contract lets a caller observe, down to the bytes the system
// has committed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace vm_model {

/// How a call ended, as the contract tells endings apart.
enum class Ending { done, refused, invalid_argument, logic_error };

class Cache {
 public:
  struct Seq {
    int id;
    std::size_t slice, tokens;
  };

  /// The caller checks the sizes: every one positive, the granule a multiple of the page.
  Cache(std::size_t page, std::size_t granule_bytes, std::size_t num_granules, std::size_t max_sequences,
        std::size_t max_tokens, std::size_t token_bytes)
      : page_(page), granule_(granule_bytes), max_tokens_(max_tokens), token_bytes_(token_bytes),
        slice_granules_((max_tokens * token_bytes + granule_bytes - 1) / granule_bytes),
        refs_(num_granules, 0), bytes_(new unsigned char[num_granules * granule_bytes]()),
        writer_(new std::uint32_t[num_granules * granule_bytes]()),
        touched_(num_granules * (granule_bytes / page), false), slot_of_(max_sequences * slice_granules_),
        holder_(max_sequences) {}

  Ending admit(int r, std::size_t tokens) {
    if (sleeping_) return Ending::logic_error;
    if (find(r) || tokens > max_tokens_) return Ending::invalid_argument;
    const std::size_t need = granules_for(tokens);
    const auto slice = free_slice(0, need);
    if (!slice || !can_fill(*slice, 0, need, 0)) return Ending::refused;
    seqs_.push_back({r, *slice, tokens});
    take(*slice, r);
    fill(*slice, 0, need);
    return Ending::done;
  }

  Ending grow(int r, std::size_t tokens) {
    if (sleeping_) return Ending::logic_error;
    Seq* s = found(r);
    if (!s || tokens > max_tokens_ || tokens < s->tokens) return Ending::invalid_argument;
    const std::size_t from = granules_for(s->tokens), to = granules_for(tokens);
    if (!can_fill(s->slice, from, to, 0)) return Ending::refused;
    fill(s->slice, from, to);
    s->tokens = tokens;
    return Ending::done;
  }

  Ending fork(int parent, int child) {
    if (sleeping_) return Ending::logic_error;
    const Seq* found = find(parent);
    if (!found || find(child)) return Ending::invalid_argument;
    const Seq p = *found;
    const std::size_t need = granules_for(p.tokens), full = p.tokens * token_bytes_ / granule_;
    const auto slice = free_slice(full, need);
    // The granules the child's slice maps where aliases go are released first: they count as
    // free for the partly filled slot.
    if (!slice || !can_fill(*slice, full, need, mapped_among(*slice, 0, full))) return Ending::refused;
    seqs_.push_back({child, *slice, p.tokens});
    take(*slice, child);
    for (std::size_t i = 0; i < full; ++i) {
      if (slot_of_[slot(*slice, i)]) release_granule(unmap(slot(*slice, i)));
      const std::size_t g = *slot_of_[slot(p.slice, i)];
      ++refs_[g];
      map(slot(*slice, i), g);
    }
    fill(*slice, full, need);
    if (full < need) copy_granule(*slot_of_[slot(p.slice, full)], *slot_of_[slot(*slice, full)]);
    return Ending::done;
  }

  Ending release(int r) {
    if (sleeping_) return Ending::logic_error;
    const Seq* found = find(r);
    if (!found) return Ending::invalid_argument;
    const std::size_t slice = found->slice;
    for (std::size_t i = 0; i < slice_granules_; ++i) {
      const auto g = slot_of_[slot(slice, i)];
      if (g && refs_[*g] > 1) release_granule(unmap(slot(slice, i)));
    }
    std::erase_if(seqs_, [r](const Seq& s) { return s.id == r; });
    holder_[slice].reset();
    idle_.push_back(slice);
    return Ending::done;
  }

  Ending trim(std::size_t& given_back) {
    if (sleeping_) return Ending::logic_error;
    given_back = 0;
    for (const std::size_t slice : idle_)
      for (std::size_t i = 0; i < slice_granules_; ++i)
        if (slot_of_[slot(slice, i)]) {
          release_granule(unmap(slot(slice, i)));
          ++given_back;
        }
    return Ending::done;
  }

  Ending sleep(const std::vector<int>& keep) {
    if (sleeping_) return Ending::logic_error;
    for (const int r : keep)
      if (!find(r)) return Ending::invalid_argument;
    // One record per granule the held slices map, in the order of the lowest slot mapping it.
    asleep_.clear();
    for (std::size_t s = 0; s < slot_of_.size(); ++s) {
      if (!slot_of_[s] || !holder_[s / slice_granules_]) continue;
      auto it = std::find_if(asleep_.begin(), asleep_.end(), [&](const Asleep& a) { return a.granule == *slot_of_[s]; });
      if (it == asleep_.end()) it = asleep_.insert(asleep_.end(), Asleep{*slot_of_[s], {}, false, {}, {}});
      it->slots.push_back(s);
    }
    for (const int r : keep) {
      const Seq& q = *find(r);
      for (std::size_t i = 0; i < granules_for(q.tokens); ++i) {
        Asleep& a = *std::find_if(asleep_.begin(), asleep_.end(),
                                  [&](const Asleep& x) { return x.granule == *slot_of_[slot(q.slice, i)]; });
        if (a.kept) continue;
        a.kept = true;
        touch(a.granule, 0, granule_);  // the host copy reads it whole
        a.bytes.assign(byte_at(a.granule, 0), byte_at(a.granule, 0) + granule_);
        a.writers.assign(writer_at(a.granule, 0), writer_at(a.granule, 0) + granule_);
      }
    }
    for (std::size_t s = 0; s < slot_of_.size(); ++s)
      if (slot_of_[s]) release_granule(unmap(s));
    sleeping_ = true;
    return Ending::done;
  }

  Ending wake() {
    if (!sleeping_) return Ending::logic_error;
    if (num_free() < asleep_.size()) return Ending::refused;
    for (const Asleep& a : asleep_) {
      const std::size_t g = *create();
      refs_[g] = a.slots.size();
      for (const std::size_t s : a.slots) map(s, g);
      if (a.kept) {
        touch(g, 0, granule_);  // the restore writes it whole
        std::memcpy(byte_at(g, 0), a.bytes.data(), granule_);
        std::memcpy(writer_at(g, 0), a.writers.data(), granule_ * sizeof(std::uint32_t));
      }
    }
    asleep_.clear();
    sleeping_ = false;
    return Ending::done;
  }

  /// The caller writes token `p` of `r` whole: byte k is `pattern(w, k)`.
  void write(int r, std::size_t p, std::uint32_t w) {
    for_token(r, p, [&](std::size_t g, std::size_t at, std::size_t k, std::size_t n) {
      unsigned char* b = byte_at(g, at);
      std::uint32_t* by = writer_at(g, at);
      for (std::size_t i = 0; i < n; ++i) b[i] = pattern(w, k + i), by[i] = w;
    });
  }
  /// The bytes of token `p` of `r` as the caller reads them, and the write each came from (0 for none).
  void read(int r, std::size_t p, std::vector<unsigned char>& bytes, std::vector<std::uint32_t>& writers) {
    bytes.resize(token_bytes_);
    writers.resize(token_bytes_);
    for_token(r, p, [&](std::size_t g, std::size_t at, std::size_t k, std::size_t n) {
      std::memcpy(bytes.data() + k, byte_at(g, at), n);
      std::memcpy(writers.data() + k, writer_at(g, at), n * sizeof(std::uint32_t));
    });
  }
  static unsigned char pattern(std::uint32_t w, std::size_t k) { return static_cast<unsigned char>((w * 97 + k * 7) % 255 + 1); }

  /// Another user of the same physical memory takes a granule, or gives one back.
  std::optional<std::size_t> create() {
    for (std::size_t g = 0; g < refs_.size(); ++g)
      if (refs_[g] == 0) {
        refs_[g] = 1;
        return g;
      }
    return std::nullopt;
  }
  void release_granule(std::size_t g) {
    if (--refs_[g] != 0) return;
    // A punched hole: nothing committed, zeros when it is created again.
    std::memset(byte_at(g, 0), 0, granule_);
    std::memset(writer_at(g, 0), 0, granule_ * sizeof(std::uint32_t));
    std::fill(touched_.begin() + static_cast<std::ptrdiff_t>(g * pages()),
              touched_.begin() + static_cast<std::ptrdiff_t>((g + 1) * pages()), false);
  }

  const Seq* find(int r) const {
    for (const Seq& s : seqs_)
      if (s.id == r) return &s;
    return nullptr;
  }
  const std::vector<Seq>& sequences() const { return seqs_; }
  const std::vector<std::optional<std::size_t>>& slots() const { return slot_of_; }
  const std::vector<std::size_t>& idle() const { return idle_; }
  std::optional<int> holder(std::size_t slice) const { return holder_[slice]; }
  std::size_t refcount(std::size_t g) const { return refs_[g]; }
  std::size_t num_granules() const { return refs_.size(); }
  std::size_t num_free() const { return static_cast<std::size_t>(std::count(refs_.begin(), refs_.end(), 0)); }
  std::size_t committed_bytes() const {
    return static_cast<std::size_t>(std::count(touched_.begin(), touched_.end(), true)) * page_;
  }
  std::size_t mapped_granules() const {
    return static_cast<std::size_t>(std::count_if(slot_of_.begin(), slot_of_.end(), [](const auto& g) { return g.has_value(); }));
  }
  std::size_t idle_granules() const {
    std::size_t n = 0;
    for (const std::size_t slice : idle_) n += mapped_among(slice, 0, slice_granules_);
    return n;
  }
  bool asleep() const { return sleeping_; }
  /// One map per slot that gets a granule, one unmap per slot that loses one: a mapping is a
  /// system call, and the contract changes no slot it does not need to.
  std::size_t map_calls() const { return map_calls_; }
  std::size_t unmap_calls() const { return unmap_calls_; }
  std::size_t slice_granules() const { return slice_granules_; }
  std::size_t granules_for(std::size_t tokens) const { return (tokens * token_bytes_ + granule_ - 1) / granule_; }
  std::size_t slot(std::size_t slice, std::size_t i) const { return slice * slice_granules_ + i; }
  std::size_t max_tokens() const { return max_tokens_; }
  std::size_t pages() const { return granule_ / page_; }
  bool touched(std::size_t g, std::size_t page) const { return touched_[g * pages() + page]; }

 private:
  struct Asleep {
    std::size_t granule;              // the granule before sleep
    std::vector<std::size_t> slots;   // every slot that mapped it
    bool kept;                        // a kept sequence needs it: its bytes are restored
    std::vector<unsigned char> bytes;
    std::vector<std::uint32_t> writers;
  };

  Seq* found(int r) { return const_cast<Seq*>(find(r)); }
  unsigned char* byte_at(std::size_t g, std::size_t at) { return bytes_.get() + g * granule_ + at; }
  std::uint32_t* writer_at(std::size_t g, std::size_t at) { return writer_.get() + g * granule_ + at; }
  void touch(std::size_t g, std::size_t from, std::size_t to) {
    for (std::size_t p = from / page_; p * page_ < to; ++p) touched_[g * pages() + p] = true;
  }
  void copy_granule(std::size_t from, std::size_t to) {
    touch(from, 0, granule_);
    touch(to, 0, granule_);
    std::memcpy(byte_at(to, 0), byte_at(from, 0), granule_);
    std::memcpy(writer_at(to, 0), writer_at(from, 0), granule_ * sizeof(std::uint32_t));
  }
  // Calls `each(granule, offset in it, index in the token, bytes)` for each run of token `p` of
  // `r` that lies in one granule, marking the pages it touches committed.
  template <class Each>
  void for_token(int r, std::size_t p, Each&& each) {
    const Seq& s = *find(r);
    for (std::size_t k = 0; k < token_bytes_;) {
      const std::size_t b = p * token_bytes_ + k, g = *slot_of_[slot(s.slice, b / granule_)], at = b % granule_;
      const std::size_t n = std::min(token_bytes_ - k, granule_ - at);  // the token's bytes in this granule
      touch(g, at, at + n);
      each(g, at, k, n);
      k += n;
    }
  }

  void map(std::size_t s, std::size_t g) {
    slot_of_[s] = g;
    ++map_calls_;
  }
  std::size_t unmap(std::size_t s) {
    const std::size_t g = *slot_of_[s];
    slot_of_[s].reset();
    ++unmap_calls_;
    return g;
  }
  std::size_t mapped_among(std::size_t slice, std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t i = from; i < to; ++i) n += slot_of_[slot(slice, i)].has_value();
    return n;
  }
  std::optional<std::size_t> free_slice(std::size_t from, std::size_t to) const {
    std::optional<std::size_t> best;
    for (std::size_t slice = 0; slice < holder_.size(); ++slice)
      if (!holder_[slice] && (!best || mapped_among(slice, from, to) > mapped_among(*best, from, to))) best = slice;
    return best;
  }
  bool can_fill(std::size_t slice, std::size_t from, std::size_t to, std::size_t freed) const {
    std::size_t lacking = (to - from) - mapped_among(slice, from, to), have = num_free() + freed;
    for (const std::size_t idle : idle_)
      if (idle != slice) have += mapped_among(idle, 0, slice_granules_);
    return lacking <= have;
  }
  void fill(std::size_t slice, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (slot_of_[slot(slice, i)]) continue;
      if (num_free() == 0) reclaim_one(slice);
      map(slot(slice, i), *create());
    }
  }
  // The highest mapped slot of the slice idle longest, never the one being filled.
  void reclaim_one(std::size_t filling) {
    for (const std::size_t idle : idle_) {
      if (idle == filling) continue;
      for (std::size_t i = slice_granules_; i-- > 0;)
        if (slot_of_[slot(idle, i)]) return release_granule(unmap(slot(idle, i)));
    }
  }
  void take(std::size_t slice, int r) {
    holder_[slice] = r;
    std::erase(idle_, slice);
  }

  std::size_t page_, granule_, max_tokens_, token_bytes_, slice_granules_;
  std::vector<std::size_t> refs_;
  std::unique_ptr<unsigned char[]> bytes_;   // every granule's bytes, one after another
  std::unique_ptr<std::uint32_t[]> writer_;  // per byte, the write it holds (0: none since the granule was created)
  std::vector<bool> touched_;          // per page of every granule: committed
  std::vector<std::optional<std::size_t>> slot_of_;
  std::vector<std::optional<int>> holder_;
  std::vector<std::size_t> idle_;  // idle longest first
  std::vector<Seq> seqs_;          // in the order they were admitted
  std::vector<Asleep> asleep_;
  bool sleeping_ = false;
  std::size_t map_calls_ = 0, unmap_calls_ = 0;
};

}  // namespace vm_model
