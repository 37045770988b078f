// The workload: seeded traces of chat requests that arrive over time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "random.hpp"

namespace alloclab::engine {

struct TraceRequest {
  int arrival_step;         // the engine step at which the request arrives
  std::vector<int> prompt;  // a shared system prompt, then the user's turn
  int new_tokens;           // how many tokens it generates: the trace's stand-in for EOS
  int samples;              // parallel samples (n > 1: the prompt is shared by fork)
  std::uint64_t seed;       // the sampler's seed
};

struct Trace {
  const char* name;
  std::vector<TraceRequest> requests;
  int max_new_tokens;  // the cap every request is sent with (an API's max_tokens); EOS comes sooner
};

/// `chat`: exactly 200 requests, 0.75 steps apart on average (faster than any manager serves
/// them, so the queue never runs dry and tokens/s measures the engine, not the arrivals).
///
/// Every prompt starts with one of four system prompts: a persona of whole blocks (64, 64, 96
/// or 128 tokens), then the same 32-token list of tools, as deployed assistants share one
/// tool schema. The tool list's blocks thus hold the same tokens after different personas, and
/// only their whole prefix tells their K and V apart. A user turn of 16-127 tokens follows (the
/// cube of a uniform number: short turns likelier, mean 44); one turn in six ends exactly at a
/// block's end, so that the prompt is a whole number of blocks. One request in ten is a retry: an
/// earlier request's prompt sent again, which a prefix cache finds whole, up to its last token;
/// half of the retries are a client's retry of the very same request (its seed too, so the same
/// answer, token for token), the others a "regenerate" (a new seed). Each request is sent with a cap of 256 new tokens (the
/// max_tokens a client sets, not knowing how long the answer will be) and generates 32-127 of
/// them, the same skew (mean 56), before its stand-in for EOS, as chat answers do; one in ten
/// asks for 3 parallel samples, which fork from the prompt's last, usually partly filled, block.
/// The engine sees only the cap until the answer ends: that is what the reserving manager must
/// provision for, and what paging does not.
///
/// These are the prompts a wrong KV cache manager gets wrong: a key made of a block alone hits
/// the tool list computed after another persona, a retried whole-block prompt tempts a manager
/// to report every token cached, a repeated answer fills blocks whose keys are cached already,
/// and forks write into a shared block.
///
/// `tiny`: 12 requests over a handful of steps, two system prompts, short turns, for tests.
[[nodiscard]] inline Trace make_trace(std::string_view name, int vocab, std::uint64_t seed = 7) {
  const bool tiny = name == "tiny";
  SplitMix rng(seed ^ (tiny ? 0x7141ull : 0xC4A7ull));
  Trace t{tiny ? "tiny" : "chat", {}, tiny ? 16 : 256};
  auto random_tokens = [&](std::vector<int>& into, int n) {
    for (int i = 0; i < n; ++i) into.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab)));
  };
  const int systems = tiny ? 2 : 4;
  std::vector<std::vector<int>> system(static_cast<std::size_t>(systems));
  std::vector<int> tools;
  if (!tiny) random_tokens(tools, 32);
  constexpr int kPersona[] = {64, 64, 96, 128};
  for (std::size_t k = 0; k < system.size(); ++k) {
    random_tokens(system[k], tiny ? rng.range(8, 16) : kPersona[k]);
    system[k].insert(system[k].end(), tools.begin(), tools.end());
  }
  const int count = tiny ? 12 : 200;
  int step = 0;
  for (int i = 0; i < count; ++i) {
    TraceRequest r;
    step += tiny ? rng.range(0, 2) : rng.range(0, 1) + (rng.range(0, 3) == 0 ? 1 : 0);
    r.arrival_step = step;
    const TraceRequest* retried = nullptr;
    if (!tiny && i >= 8 && rng.range(0, 9) == 0) {
      // A retry of one of the last eight requests: the same prompt; half of them also send the
      // same seed and so get the same answer, whose blocks a prefix cache already holds.
      retried = &t.requests[static_cast<std::size_t>(i - rng.range(1, 8))];
      r.prompt = retried->prompt;
    } else {
      r.prompt = system[static_cast<std::size_t>(rng.range(0, systems - 1))];
      // The cube of a uniform number skews lengths short, as chat turns and answers are.
      const float u = rng.unit();
      int turn = tiny ? rng.range(2, 10) : 16 + static_cast<int>(u * u * u * 112.0f);
      if (!tiny && rng.range(0, 5) == 0) turn = std::max(16, turn / 16 * 16);  // the prompt ends a block
      random_tokens(r.prompt, turn);
    }
    const float g = rng.unit();
    r.new_tokens = tiny ? rng.range(4, t.max_new_tokens) : 32 + static_cast<int>(g * g * g * 96.0f);
    r.samples = (tiny ? i % 4 == 1 : rng.range(0, 9) == 0) ? 3 : 1;
    r.seed = rng.next();
    if (retried && r.seed % 2 == 0) {
      r.new_tokens = retried->new_tokens;
      r.samples = retried->samples;
      r.seed = retried->seed;
    }
    t.requests.push_back(std::move(r));
  }
  return t;
}

}  // namespace alloclab::engine
