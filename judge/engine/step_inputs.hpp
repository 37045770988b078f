// A step's inputs: its metadata built in the arena (exercise 01), then packed into one block of
// the ring (exercise 06) for the model runner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "arena.hpp"
#include "arithmetic.hpp"
#include "block_managers.hpp"
#include "model.hpp"
#include "ring_allocator.hpp"
#include "sequence.hpp"

namespace alloclab::engine {

/// What the sampler must do with one row of logits: `count` samples, numbered from
/// `first_sample`, written to `sampled[out...]`.
struct SampleJob {
  std::uint64_t seed;
  int first_sample, count, position, out;
};

/// One step's inputs, as the model runner receives them: a header and arrays in the ring.
struct StepInput {
  BatchView batch;
  const SampleJob* jobs;
  int job_count;
  const KvCopy* copies;
  int copy_count;
  std::uint64_t checkpoint;  // the ring position after this step's bytes
};

/// A step's metadata, in the arena: built by the scheduler, dead once the step is packed.
struct StepMetadata {
  int rows = 0, seqs = 0, table_ints = 0;
  int *tokens, *positions, *slots, *seq_of_row;  // per row
  int *tables, *table_at, *logit_rows;            // every block table, end to end; per sequence
  SampleJob* jobs;                                // per sequence
  float** bases = nullptr;                        // per sequence, a contiguous manager's KV (no tables then)
  int arrays = 0;                                 // arrays taken from the arena for this step
};

namespace detail {

/// The block table of `seq`, refused when a block lies outside the KV buffer: attention reads
/// the KV through these numbers, and one outside would read memory that is not KV at all.
inline std::span<const int> checked_table(const BlockManager& m, int seq, int kv_blocks) {
  const std::span<const int> table = m.block_table(seq);
  for (const int b : table)
    if (b < 0 || b >= kv_blocks)
      throw std::logic_error("ServedEngine: block_table(" + std::to_string(seq) + ") lists block " + std::to_string(b) +
                             ", outside the " + std::to_string(kv_blocks) + " blocks of the KV buffer");
  return table;
}

/// The slot mapping, as the manager answers it: the row's K and V are written there, and read
/// back through the block table, so a slot and a table that disagree change a token.
inline int checked_slot(const BlockManager& m, int seq, int position, int slot_end) {
  const int slot = m.slot(seq, position);
  if (slot < 0 || slot >= slot_end)
    throw std::logic_error("ServedEngine: slot(" + std::to_string(seq) + ", " + std::to_string(position) + ") is " +
                           std::to_string(slot) + ", outside the KV buffer's " + std::to_string(slot_end) +
                           " token slots");
  return slot;
}

}  // namespace detail

/// The metadata of a step that decodes `decode` (their last token each) and computes `prefill`
/// (each prompt from its first uncached token): one row per token, one block table and one
/// sampling job per sequence. Allocated from `arena`, to be reset once the step is done. A
/// contiguous manager's sequences have a base each instead of a block table, and a row's slot is
/// its position.
inline StepMetadata describe_step(Arena& arena, const BlockManager& m, std::span<Sequence* const> decode,
                                  std::span<Sequence* const> prefill, int kv_blocks, int block_tokens) {
  StepMetadata d;
  const bool contiguous = m.contiguous();
  d.rows = static_cast<int>(decode.size());
  for (const Sequence* s : prefill) d.rows += static_cast<int>(s->tokens.size()) - s->computed;
  d.seqs = static_cast<int>(decode.size() + prefill.size());
  if (!contiguous) {
    for (const Sequence* s : decode) d.table_ints += static_cast<int>(m.block_table(s->id).size());
    for (const Sequence* s : prefill) d.table_ints += static_cast<int>(m.block_table(s->id).size());
  }

  const auto rows = static_cast<std::size_t>(d.rows), seqs = static_cast<std::size_t>(d.seqs);
  d.tokens = arena.alloc_array<int>(rows);
  d.positions = arena.alloc_array<int>(rows);
  d.slots = arena.alloc_array<int>(rows);
  d.seq_of_row = arena.alloc_array<int>(rows);
  d.tables = arena.alloc_array<int>(static_cast<std::size_t>(std::max(d.table_ints, 1)));
  d.table_at = arena.alloc_array<int>(seqs);
  d.logit_rows = arena.alloc_array<int>(seqs);
  d.jobs = arena.alloc_array<SampleJob>(seqs);
  d.arrays = 8;  // the eight arrays above
  if (contiguous) {
    d.bases = arena.alloc_array<float*>(seqs);
    ++d.arrays;
  }
  int row = 0, t = 0, si = 0, out = 0;
  const int slot_end = kv_blocks * block_tokens;
  auto add_seq = [&](const Sequence* s, int from) {
    d.table_at[si] = t;
    if (contiguous) {
      d.bases[si] = m.contiguous_kv(s->id);
      if (d.bases[si] == nullptr)
        throw std::logic_error("ServedEngine: the contiguous manager gave request " + std::to_string(s->id) +
                               " no KV memory");
    } else {
      const std::span<const int> table = detail::checked_table(m, s->id, kv_blocks);
      std::copy(table.begin(), table.end(), d.tables + t);
      t += static_cast<int>(table.size());
    }
    const int len = static_cast<int>(s->tokens.size());
    for (int p = from; p < len; ++p, ++row) {
      d.tokens[row] = s->tokens[static_cast<std::size_t>(p)];
      d.positions[row] = p;
      d.slots[row] = contiguous ? p : detail::checked_slot(m, s->id, p, slot_end);
      d.seq_of_row[row] = si;
    }
    d.logit_rows[si] = row - 1;
    d.jobs[si] = {s->seed, s->sample, s->forks_pending, len, out};
    out += s->forks_pending;
    ++si;
  };
  for (const Sequence* s : decode) add_seq(s, static_cast<int>(s->tokens.size()) - 1);
  for (const Sequence* s : prefill) add_seq(s, s->computed);
  return d;
}

/// The upload: the metadata and the step's block copies, packed into one contiguous block of
/// `ring` (of `ring_bytes`), which the runner reads and reclaims; `copies` is emptied. The
/// runner reclaims each step's bytes before the scheduler builds the next step, so a refusal
/// can only mean a step larger than the whole ring.
inline const StepInput* pack_step(RingBumpAllocator& ring, std::size_t ring_bytes, const StepMetadata& d,
                                  std::vector<KvCopy>& copies, float* kv, const KVLayout& layout) {
  const auto rows = static_cast<std::size_t>(d.rows), seqs = static_cast<std::size_t>(d.seqs);
  const std::size_t ints = 4 * rows + static_cast<std::size_t>(d.table_ints) + seqs;
  const std::size_t bytes = sizeof(StepInput) + seqs * (sizeof(SeqKV) + sizeof(SampleJob)) + ints * sizeof(int) +
                            copies.size() * sizeof(KvCopy) + 256;
  void* block = ring.allocate(bytes, 64);
  if (block == nullptr)
    throw std::logic_error("ServedEngine: a step's inputs of " + std::to_string(bytes) + " bytes do not fit the ring of " +
                           std::to_string(ring_bytes));
  auto* base = static_cast<std::byte*>(block);
  std::size_t at = sizeof(StepInput);
  auto put = [&]<class T>(const T* src, std::size_t count) {
    at = round_up(at, alignof(T));
    std::byte* dst = base + at;
    if (count) std::memcpy(dst, src, count * sizeof(T));
    at += count * sizeof(T);
    return reinterpret_cast<T*>(dst);
  };
  auto* in = reinterpret_cast<StepInput*>(base);
  const int* tokens = put(d.tokens, rows);
  const int* positions = put(d.positions, rows);
  const int* slots = put(d.slots, rows);
  const int* seq_of_row = put(d.seq_of_row, rows);
  const int* tables = put(d.tables, static_cast<std::size_t>(d.table_ints));
  const int* logit_rows = put(d.logit_rows, seqs);
  in->jobs = put(d.jobs, seqs);
  in->copies = put(copies.data(), copies.size());
  SeqKV* seq_kv = put(static_cast<const SeqKV*>(nullptr), 0);
  for (std::size_t i = 0; i < seqs; ++i)
    seq_kv[i] = d.bases ? SeqKV{d.bases[i], nullptr} : SeqKV{kv, tables + d.table_at[i]};
  in->batch = {d.rows, tokens, positions, slots, seq_of_row, seq_kv, layout, d.seqs, logit_rows};
  in->job_count = d.seqs;
  in->copy_count = static_cast<int>(copies.size());
  in->checkpoint = ring.checkpoint();
  copies.clear();
  return in;
}

}  // namespace alloclab::engine
