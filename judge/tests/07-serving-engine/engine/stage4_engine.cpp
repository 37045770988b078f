// Stage 4 — the engine: a small trace served by the engine of judge/engine/ with your
// KVCacheManager underneath, every token checked against the plain engine (no paging, no
// sharing, no cache, no memory limit). The budget of KV blocks is tight, so that requests
// are preempted and recomputed and cached blocks are evicted: the paths where a block given
// to the wrong request, or freed while still in use, shows up as a wrong token.
//
// This file does not include your header: the engine reaches your manager through
// judge/engine/paged_manager.cpp alone, so an edit of your header recompiles that file, not
// the engine.
#include <vector>

#include "alloclab_test.hpp"
#include "engine.hpp"

namespace stage4_engine {

using namespace alloclab::engine;

const Model& tiny_model() {
  static const Model model(kTinyModel);
  return model;
}

const Trace& tiny_trace() {
  static const Trace trace = make_trace("tiny", kTinyModel.vocab);
  return trace;
}

const Outputs& plain_outputs() {
  static const Outputs out = run_plain(tiny_model(), tiny_trace());
  return out;
}

struct Served {
  Outputs outputs;
  RunStats stats;
  KvCacheStats manager;
  int blocks_in_use;
  std::size_t live_sequences;
};

Served serve(ManagerKind kind, int kv_blocks, bool two_threads, const Trace& trace = tiny_trace()) {
  EngineOptions o;
  o.manager = kind;
  o.kv_blocks = kv_blocks;
  o.block_tokens = 4;
  o.max_batch_tokens = 64;
  o.max_seqs = 16;
  o.two_threads = two_threads;
  ServedEngine engine(tiny_model(), trace, o);
  Served s;
  s.outputs = engine.run(s.stats);
  s.manager = engine.manager_stats();
  s.blocks_in_use = engine.blocks_in_use();
  s.live_sequences = engine.live_sequences();
  return s;
}

// 16 blocks of 4 tokens: about three requests at a time, so the engine preempts and evicts.
constexpr int kTightBlocks = 16;

/// The first (request, sample) whose tokens differ, as a readable message.
std::string first_difference(const Outputs& got, const Outputs& want) {
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t s = 0; s < want[r].size(); ++s) {
      const auto& g = got[r][s];
      const auto& w = want[r][s];
      if (g == w) continue;
      std::size_t i = 0;
      while (i < g.size() && i < w.size() && g[i] == w[i]) ++i;
      return "request " + std::to_string(r) + ", sample " + std::to_string(s) + ": token " + std::to_string(i) +
             " differs (" + std::to_string(g.size()) + " tokens served, " + std::to_string(w.size()) + " expected)";
    }
  return "none";
}

TEST(Engine, MatchesPlainWithPrefixCachingUnderPreemptionAndEviction) {
  const Served s = serve(ManagerKind::prefix, kTightBlocks, false);
  ASSERT_EQ(s.outputs, plain_outputs())
      << "With prefix caching on, the served tokens differ from the plain engine's at " << first_difference(s.outputs, plain_outputs())
      << ". The model and sampler are batch-invariant, so a different token means the attention read a wrong K or V: a "
         "prefix hit on a block whose content is not that prefix, a block handed to two requests, a block reused while "
         "still in use, or a slot that does not match the block table.";
  EXPECT_GT(s.stats.preemptions, 0) << "The budget was meant to force preemption; the check above proved less than intended.";
  EXPECT_GT(s.manager.evictions, 0u) << "The budget was meant to force evictions of cached blocks; none happened.";
  EXPECT_GT(s.manager.hit_tokens, 0u)
      << "Every tiny request starts with one of two system prompts, yet admit never found a cached prefix: "
         "prefix caching saves no work.";
}

TEST(Engine, MatchesPlainWithoutPrefixCachingUnderPreemption) {
  const Served s = serve(ManagerKind::paged, kTightBlocks, false);
  ASSERT_EQ(s.outputs, plain_outputs())
      << "With prefix caching off, the served tokens differ from the plain engine's at " << first_difference(s.outputs, plain_outputs())
      << ": a block handed to two requests, a block reused while still in use, a copy-on-write not reported (the fork's "
         "children then write into their parent's block), or a slot that does not match the block table.";
  EXPECT_GT(s.stats.preemptions, 0) << "The budget was meant to force preemption; the check above proved less than intended.";
  EXPECT_EQ(s.manager.hit_tokens, 0u) << "With prefix caching off, admit must never report cached tokens.";
}

TEST(Engine, HoldsNoBlockOnceEveryRequestIsDone) {
  for (const ManagerKind kind : {ManagerKind::prefix, ManagerKind::paged}) {
    const Served s = serve(kind, kTightBlocks, false);
    EXPECT_EQ(s.blocks_in_use, 0) << manager_name(kind)
                                  << ": every request has finished and been released, yet num_free_blocks() is "
                                  << kTightBlocks - s.blocks_in_use << " of " << kTightBlocks
                                  << ". A block that is never given back is KV memory lost for the life of the server.";
    EXPECT_EQ(s.live_sequences, 0u);
    EXPECT_EQ(s.stats.leak, "") << manager_name(kind) << ": once every request was done, the engine's audit of your "
                                << "manager found: " << s.stats.leak;
  }
}

TEST(Engine, ParallelSamplesShareTheirPromptBlocks) {
  // One request, a 42-token prompt (11 blocks of 4, the last half full, so that each
  // sample's first token is a copy-on-write), 3 samples of 6 tokens each.
  Trace t{"fork", {}, 6};
  TraceRequest r{0, {}, 6, 3, 99};
  for (int i = 0; i < 42; ++i) r.prompt.push_back((i * 37 + 11) % kTinyModel.vocab);
  t.requests.push_back(r);
  const Outputs want = run_plain(tiny_model(), t);
  const Served s = serve(ManagerKind::paged, 64, false, t);
  ASSERT_EQ(s.outputs, want) << "The three samples of one request differ from the plain engine's, which copies the "
                                "prompt's KV for each sample: the fork or its copy-on-write is wrong ("
                             << first_difference(s.outputs, want) << ").";
  int peak = 0;
  for (const StepRecord& step : s.stats.timeline) peak = std::max(peak, step.running_blocks);
  // Shared: 11 prompt blocks + at most 2 more per sample. Three private copies: 3 x 13.
  EXPECT_LE(peak, 11 + 3 * 2) << "Three samples of a 42-token prompt held " << peak
                              << " blocks at once: fork must share the parent's blocks (retain them), not copy them. "
                                 "Sharing is what lets parallel sampling cost one prompt's memory instead of three.";
  EXPECT_GT(s.manager.copies, 0u) << "The samples' first tokens go into the prompt's shared, half-full last block: "
                                     "each writer needs its private copy first.";
  EXPECT_EQ(s.blocks_in_use, 0) << "Blocks still held after the forked samples finished.";
}

TEST(Engine, APromptHitsOnlyItsWholePrefixAndComputesItsLastToken) {
  // Blocks of 4 tokens A, B, C, D, E. Request 0: A B C D. Request 1, later: the same 16
  // tokens (every block cached, yet the last token must be computed). Request 2: B C E, whose
  // first block has the content of request 0's second block but not its prefix: its K and V
  // were computed at other positions after other tokens, so it must not be a hit.
  auto block = [](int seed) {
    std::vector<int> b;
    for (int i = 0; i < 4; ++i) b.push_back((seed * 53 + i * 29 + 7) % kTinyModel.vocab);
    return b;
  };
  auto cat = [](std::initializer_list<std::vector<int>> parts) {
    std::vector<int> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const auto A = block(1), B = block(2), C = block(3), D = block(4), E = block(5);
  Trace t{"prefix", {}, 8};
  t.requests.push_back({0, cat({A, B, C, D}), 8, 1, 1});
  t.requests.push_back({3, cat({A, B, C, D}), 8, 1, 2});
  t.requests.push_back({3, cat({B, C, E, {9, 10}}), 8, 1, 3});
  const Outputs want = run_plain(tiny_model(), t);
  const Served s = serve(ManagerKind::prefix, 64, false, t);
  ASSERT_EQ(s.outputs, want)
      << "Tokens differ from the plain engine's at " << first_difference(s.outputs, want)
      << ". A cached block may stand only for its whole prefix (its tokens and every token before it): the same four "
         "tokens after a different beginning have different K and V.";
  EXPECT_EQ(s.manager.hit_tokens, 12u) << "Request 1 repeats request 0's 16 tokens: 3 blocks hit (12 tokens), not "
                                          "4, because the last prompt token is always computed; request 2 hits none.";
}

TEST(Engine, TwoThreadsThroughTheRingMatchPlain) {
  // The scheduler thread writes each step's inputs into the ring; the model-runner thread
  // reads them, runs the step, and reclaims them. Only the scheduler calls your manager, so
  // this runs under AddressSanitizer; `check` runs the engine's threads under ThreadSanitizer.
  const Served s = serve(ManagerKind::prefix, kTightBlocks, true);
  ASSERT_EQ(s.outputs, plain_outputs()) << "The two-thread engine's tokens differ from the plain engine's at "
                                        << first_difference(s.outputs, plain_outputs()) << ".";
  EXPECT_GT(s.stats.preemptions, 0);
  EXPECT_EQ(s.blocks_in_use, 0);
}

}  // namespace stage4_engine
