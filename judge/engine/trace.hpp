// The workload: seeded traces of chat requests that arrive over time.
#pragma once

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

/// `chat`: 200 requests, 0.75 steps apart on average (faster than any manager serves them, so
/// the queue never runs dry and tokens/s measures the engine, not the arrivals). Every prompt starts with one of four system prompts
/// (64-176 tokens), then a user turn of 16-128 tokens (the cube of a uniform number: short turns
/// likelier, mean 44). Each request is sent with a cap of 256 new tokens (the max_tokens a
/// client sets, not knowing how long the answer will be) and generates 32-128 of them, the
/// same skew (mean 56), before its stand-in for EOS, as chat answers do; one in ten asks for
/// 3 parallel samples. The engine sees only the cap until the answer ends: that is what the
/// reserving manager must provision for, and what paging does not.
///
/// `tiny`: 12 requests over a handful of steps, two system prompts, short turns, for tests.
[[nodiscard]] inline Trace make_trace(std::string_view name, int vocab, std::uint64_t seed = 7) {
  const bool tiny = name == "tiny";
  SplitMix rng(seed ^ (tiny ? 0x7141ull : 0xC4A7ull));
  Trace t{tiny ? "tiny" : "chat", {}, tiny ? 16 : 256};
  const int systems = tiny ? 2 : 4;
  std::vector<std::vector<int>> system(static_cast<std::size_t>(systems));
  for (auto& s : system) {
    s.resize(static_cast<std::size_t>(tiny ? rng.range(8, 16) : rng.range(64, 176)));
    for (int& tok : s) tok = static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab));
  }
  const int count = tiny ? 12 : 200;
  int step = 0;
  for (int i = 0; i < count; ++i) {
    TraceRequest r;
    step += tiny ? rng.range(0, 2) : rng.range(0, 1) + (rng.range(0, 3) == 0 ? 1 : 0);
    r.arrival_step = step;
    r.prompt = system[static_cast<std::size_t>(rng.range(0, systems - 1))];
    // The cube of a uniform number skews lengths short, as chat turns and answers are.
    const float u = rng.unit();
    const int turn = tiny ? rng.range(2, 10) : 16 + static_cast<int>(u * u * u * 112.0f);
    for (int j = 0; j < turn; ++j) r.prompt.push_back(static_cast<int>(rng.next() % static_cast<std::uint64_t>(vocab)));
    const float g = rng.unit();
    r.new_tokens = tiny ? rng.range(4, t.max_new_tokens) : 32 + static_cast<int>(g * g * g * 96.0f);
    r.samples = (tiny ? i % 4 == 1 : rng.range(0, 9) == 0) ? 3 : 1;
    r.seed = rng.next();
    t.requests.push_back(std::move(r));
  }
  return t;
}

}  // namespace alloclab::engine
