// The engine's own guards: what it refuses before it serves, what the reserving manager does
// with a call it cannot answer, and its two threads, which `judge.py check` runs under
// ThreadSanitizer. These are about the kit's code, not a learner's, so they are not a stage:
// `check` builds them on the references and runs them.
//
// Why the two threads are judged here and not in exercise 07's stage 4: the scheduler thread
// alone calls the manager, and copies every answer (block tables, slots, copies) into the step's
// inputs before it hands them over; the model-runner thread reads only those inputs. Neither
// thread touches the learner's manager while the other runs, so a race ThreadSanitizer could
// find in that pipeline is the engine's, the same whatever manager serves.
//
// What they leave to others: a manager whose slot or block table points outside the KV buffer
// is stopped by the engine before the model runs, and the known mistakes of exercise 07 served
// by `check` prove it; a step larger than the ring cannot be made with these options.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"

namespace {

using namespace alloclab::engine;

const Model& tiny_model() {
  static const Model model(kTinyModel);
  return model;
}

EngineOptions roomy() {
  EngineOptions o;
  o.kv_blocks = 256;
  o.block_tokens = 4;
  o.max_batch_tokens = 64;
  o.max_seqs = 16;
  o.two_threads = false;
  return o;
}

Trace one_request(int prompt_tokens, int new_tokens, int samples) {
  Trace t{"one", {}, new_tokens};
  t.requests.push_back({0, std::vector<int>(static_cast<std::size_t>(prompt_tokens), 7), new_tokens, samples, 1});
  return t;
}

/// The message of the std::invalid_argument that building the engine throws; empty if none.
std::string refusal(const Trace& trace, const EngineOptions& o) {
  try {
    ServedEngine engine(tiny_model(), trace, o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(EngineRefuses, ARequestThatReachesPastTheModelsLastPosition) {
  const int last = kTinyModel.max_positions - 1;
  EXPECT_EQ(refusal(one_request(kTinyModel.max_positions - 8, 8, 1), roomy()), "")
      << "a request that ends at position " << last << ", the model's last, fits";
  const std::string why = refusal(one_request(kTinyModel.max_positions - 8, 9, 1), roomy());
  EXPECT_NE(why.find("reaches position " + std::to_string(last + 1)), std::string::npos)
      << "A request one token longer would read a rotary position the model does not have; the engine must refuse it "
         "when it is built, naming the position, not fail mid-run. It said: \""
      << why << "\"";
}

TEST(EngineRefuses, MoreParallelSamplesThanItRunsAtOnce) {
  EngineOptions o = roomy();
  o.max_seqs = 2;
  EXPECT_NE(refusal(one_request(8, 4, 3), o).find("3 samples; max_seqs is 2"), std::string::npos)
      << "Three samples fork at admission and run together: with max_seqs 2 the request could never be admitted.";
}

TEST(EngineRefuses, ABudgetOrABatchOfNothing) {
  for (auto blank : {&EngineOptions::kv_blocks, &EngineOptions::block_tokens, &EngineOptions::max_batch_tokens,
                     &EngineOptions::max_seqs}) {
    EngineOptions o = roomy();
    o.*blank = 0;
    EXPECT_NE(refusal(one_request(8, 4, 1), o).find("must be positive"), std::string::npos)
        << "Options of zero must be refused before any member is sized from them.";
  }
}

TEST(EngineServes, ForkedSamplesCountAgainstMaxSeqs) {
  const Trace trace = make_trace("tiny", kTinyModel.vocab);
  int most_samples = 0;
  for (const TraceRequest& r : trace.requests) most_samples = std::max(most_samples, r.samples);
  ASSERT_GT(most_samples, 1) << "the tiny trace was meant to fork";
  EngineOptions o = roomy();
  o.max_seqs = most_samples;
  ServedEngine engine(tiny_model(), trace, o);
  RunStats stats;
  const Outputs out = engine.run(stats);
  for (std::size_t r = 0; r < trace.requests.size(); ++r)
    for (const auto& sample : out[r])
      ASSERT_EQ(sample.size(), static_cast<std::size_t>(trace.requests[r].new_tokens)) << "request " << r << " was not served whole";
  EXPECT_LE(stats.peak_running, o.max_seqs)
      << "A request's samples fork at admission: the admission must count them all, or the batch outgrows max_seqs.";
}

TEST(EngineThreads, TwoThreadsThroughTheRingMatchThePlainEngine) {
  // The scheduler writes each step's inputs into the ring, the model runner reads them on its
  // own thread and reclaims them: under a budget that preempts and evicts, every token must
  // still be the plain engine's, with no race between the two.
  const Trace trace = make_trace("tiny", kTinyModel.vocab);
  const Outputs plain = run_plain(tiny_model(), trace);
  for (const ManagerKind kind : {ManagerKind::reserve, ManagerKind::paged, ManagerKind::prefix}) {
    EngineOptions o = roomy();
    o.manager = kind;
    if (kind != ManagerKind::reserve) o.kv_blocks = 16;   // 16 blocks of 4 tokens: about three requests at once
    o.two_threads = true;
    ServedEngine engine(tiny_model(), trace, o);
    RunStats stats;
    EXPECT_EQ(engine.run(stats), plain) << manager_name(kind)
                                        << ": the two-thread engine's tokens differ from the plain engine's";
    EXPECT_EQ(engine.blocks_in_use(), 0);
    if (kind != ManagerKind::reserve) {  // braces: GoogleTest's EXPECT_ is an if-else of its own
      EXPECT_GT(stats.preemptions, 0) << "the budget was meant to preempt";
    }
  }
}

TEST(EngineThreads, TheVirtualManagerMatchesThePlainEngine) {
  // Exercise 08's contiguous cache, read by attention at base + position * stride: its tokens
  // must be the plain engine's on a budget tight enough to preempt, with forks (the cache copies
  // the partly filled granule itself), every granule released or kept for reuse once the trace
  // is served, and nothing committed after sleep.
  const Trace trace = make_trace("tiny", kTinyModel.vocab);
  const Outputs plain = run_plain(tiny_model(), trace);
  for (const bool two_threads : {false, true}) {
    EngineOptions o = roomy();
    o.manager = ManagerKind::virtual_memory;
    o.make_virtual = make_virtual_manager;
    o.kv_blocks = 16;  // eight granules of a page each: 2 KiB blocks share a page
    o.two_threads = two_threads;
    ServedEngine engine(tiny_model(), trace, o);
    RunStats stats;
    EXPECT_EQ(engine.run(stats), plain) << "the virtual manager's tokens differ from the plain engine's";
    EXPECT_EQ(stats.leak, "");
    EXPECT_GT(stats.preemptions, 0) << "the budget was meant to preempt";
    EXPECT_GT(engine.manager_stats().copies, 0U) << "the tiny trace's forks were meant to copy a partly filled granule";
    EXPECT_GT(stats.memory.committed_peak_bytes, 0U);
    EXPECT_EQ(stats.memory.committed_after_sleep_bytes, 0) << "sleep must give every granule back";
  }
}

TEST(EngineRefuses, TheVirtualManagerWithoutItsMaker) {
  EngineOptions o = roomy();
  o.manager = ManagerKind::virtual_memory;
  EXPECT_NE(refusal(one_request(8, 4, 1), o).find("make_virtual"), std::string::npos)
      << "A program that does not link virtual_manager.cpp cannot serve with the virtual manager, and must say so.";
}

TEST(ReserveManagerCalls, NameAnUnknownSequenceWithInvalidArgument) {
  ReserveManager m(8, 4);
  const std::vector<int> prompt(5, 1);
  ASSERT_EQ(m.admit(0, prompt, 8, 1), 0);
  std::vector<KvCopy> copies;
  EXPECT_THROW(m.release(1), std::invalid_argument);
  EXPECT_THROW((void)m.append_token(1, 3, copies), std::invalid_argument);
  EXPECT_THROW(m.fork(1, 2, copies), std::invalid_argument);
  EXPECT_THROW((void)m.block_table(1), std::invalid_argument);
  EXPECT_THROW((void)m.slot(1, 0), std::invalid_argument);
  EXPECT_THROW((void)m.held_blocks(1), std::invalid_argument);
  EXPECT_EQ(m.num_free_blocks(), 6) << "a call that throws changes nothing";
  m.release(0);
  EXPECT_THROW(m.release(0), std::invalid_argument) << "a released sequence is unknown: a second release must not "
                                                       "give its blocks back twice";
  EXPECT_EQ(m.audit(1), "");
}

TEST(ReserveManagerCalls, RefuseAPositionOutsideTheSequence) {
  ReserveManager m(8, 4);
  const std::vector<int> prompt(5, 1);
  ASSERT_EQ(m.admit(0, prompt, 8, 1), 0);
  EXPECT_EQ(m.slot(0, 4), m.block_table(0)[1] * 4);
  EXPECT_THROW((void)m.slot(0, 5), std::out_of_range) << "position 5 of a 5-token sequence has no KV yet";
  EXPECT_THROW((void)m.slot(0, -1), std::out_of_range);
}

}  // namespace
