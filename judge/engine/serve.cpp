// alloclab_serve: serves one trace with one block manager and prints what it measured as one
// JSON object. `python3 judge/judge.py serve` runs it and draws the timeline.
//
//   alloclab_serve [--trace chat|tiny] [--manager prefix|paged|reserve|virtual] [--model default|tiny]
//                  [--seed S] [--kv-blocks N] [--no-plain] [--roofline] [--progress]
//
// --roofline measures this machine's memory bandwidth and matmul rate first (about a second) and
// sets the decode steps' achieved rates against them.
//
// Exit status 0 with the JSON object; 2 when an argument is refused (a line on standard error
// says why); 3 when the run stopped (a block manager threw, or the engine's own check of its
// answers failed: standard error says which call and why).
//
// Heap allocations are counted here, by replacing the global operator new: the engine's
// headers do not know about it, they only read the counter through a function pointer.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "roofline.hpp"

namespace {

std::atomic<std::uint64_t> g_heap_allocations{0};

void* counted(std::size_t n, std::size_t align) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n) : std::aligned_alloc(align, alloclab::engine::round_up(n, align));
  return p;
}
void* counted_or_throw(std::size_t n, std::size_t align) {
  void* p = counted(n, align);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using namespace alloclab::engine;

std::uint64_t heap_allocations() { return g_heap_allocations.load(std::memory_order_relaxed); }

void print_progress(int finished, int total) {
  std::fprintf(stderr, "progress %d %d\n", finished, total);
  std::fflush(stderr);
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "alloclab_serve: %s\n", why.c_str());
  std::exit(2);
}

int block_tokens_for(std::string_view trace) { return trace == "tiny" ? 4 : 16; }

/// The blocks the largest request of the trace needs on its own under `manager`: a budget
/// below it can never serve that request.
int blocks_needed(const Trace& t, ManagerKind k, int block_tokens) {
  int most = 0;
  for (const TraceRequest& r : t.requests) {
    const int prompt = static_cast<int>(r.prompt.size());
    most = std::max(most, blocks_to_serve(k, prompt, r.new_tokens, prompt + t.max_new_tokens, r.samples, block_tokens));
  }
  return most;
}

/// The KV budget of the default runs, in blocks: exactly what the trace's largest request needs
/// under `reserve` (for `chat`, three samples of its prompt, each provisioned for 256 new tokens),
/// tight enough that requests queue and the paged managers preempt. Every manager can serve the
/// trace on it, so that --compare sets them side by side on one budget; blocks_needed()
/// refuses a smaller one.
int default_kv_blocks(const Trace& t, int block_tokens) { return blocks_needed(t, ManagerKind::reserve, block_tokens); }

/// A digest of every request's tokens (FNV-1a over the tokens and each sample's length): two runs
/// that generated the same tokens have the same digest, so a caller can compare runs made with
/// --no-plain against one that was compared with the plain engine.
std::uint64_t tokens_digest(const Outputs& outputs) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ull;
  };
  for (const auto& request : outputs)
    for (const auto& sample : request) {
      mix(sample.size());
      for (const int t : sample) mix(static_cast<std::uint32_t>(t));
    }
  return h;
}

/// `text` as a JSON string, quotes included.
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <class T>
void print_array(const char* key, const std::vector<T>& values, const char* format, bool last = false) {
  std::printf("\"%s\": [", key);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) std::printf(",");
    std::printf(format, static_cast<double>(values[i]));
  }
  std::printf(last ? "]" : "], ");
}

void print_int_array(const char* key, const std::vector<StepRecord>& tl, auto field, bool last = false) {
  std::printf("\"%s\": [", key);
  for (std::size_t i = 0; i < tl.size(); ++i) std::printf(i ? ",%lld" : "%lld", static_cast<long long>(field(tl[i])));
  std::printf(last ? "]" : "], ");
}

/// What the command line asks for.
struct Args {
  std::string_view trace = "chat", manager = "prefix", model = "default";
  int kv_blocks = -1;  // -1: default_kv_blocks
  std::uint64_t seed = 7;
  bool plain = true, progress = false, roofline = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](const char* what) -> std::string_view {
      if (i + 1 >= argc) usage(std::string(what) + " needs a value");
      return argv[++i];
    };
    if (arg == "--trace") {
      a.trace = value("--trace");
      if (a.trace != "chat" && a.trace != "tiny") usage("--trace must be chat or tiny, not '" + std::string(a.trace) + "'");
    } else if (arg == "--manager") {
      a.manager = value("--manager");
      if (!manager_by_name(a.manager)) usage("--manager must be prefix, paged, reserve or virtual, not '" + std::string(a.manager) + "'");
    } else if (arg == "--model") {
      a.model = value("--model");
      if (!model_by_name(a.model)) usage("--model must be default or tiny, not '" + std::string(a.model) + "'");
    } else if (arg == "--kv-blocks") {
      const std::string v(value("--kv-blocks"));
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0 || n > 1'000'000) usage("--kv-blocks must be a positive number of blocks, not '" + v + "'");
      a.kv_blocks = static_cast<int>(n);
    } else if (arg == "--seed") {
      const std::string v(value("--seed"));
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-') usage("--seed must be a whole number, not '" + v + "'");
      a.seed = static_cast<std::uint64_t>(n);
    } else if (arg == "--no-plain") {
      a.plain = false;
    } else if (arg == "--roofline") {
      a.roofline = true;
    } else if (arg == "--progress") {
      a.progress = true;
    } else {
      usage("unknown argument '" + std::string(arg) + "'");
    }
  }
  return a;
}

/// The engine's options for `a`, refused (exit status 2) when the budget cannot serve the trace.
EngineOptions options_for(const Args& a, const Trace& trace) {
  const ManagerKind manager = *manager_by_name(a.manager);
  EngineOptions o;
  o.manager = manager;
  o.block_tokens = block_tokens_for(a.trace);
  o.kv_blocks = a.kv_blocks > 0 ? a.kv_blocks : default_kv_blocks(trace, o.block_tokens);
  const int needed = blocks_needed(trace, manager, o.block_tokens);
  if (o.kv_blocks < needed)
    usage("--kv-blocks " + std::to_string(o.kv_blocks) + " cannot serve the largest request of '" + std::string(a.trace) +
          "' under " + manager_name(manager) + ": it needs " + std::to_string(needed));
  o.heap_count = heap_allocations;
  o.make_virtual = make_virtual_manager;
  if (a.progress) o.on_finish = print_progress;
  return o;
}

/// What a served run produced: its tokens, and how many of them and of the requests are done.
struct Served {
  Outputs outputs;
  long generated = 0;
  int finished = 0;  // requests whose every sample has all its tokens
};

Served summarize_outputs(Outputs outputs, const Trace& trace) {
  Served s{std::move(outputs)};
  for (const auto& request : s.outputs)
    for (const auto& sample : request) s.generated += static_cast<long>(sample.size());
  for (std::size_t r = 0; r < s.outputs.size(); ++r) {
    bool all = true;
    for (const auto& sample : s.outputs[r]) all = all && static_cast<int>(sample.size()) == trace.requests[r].new_tokens;
    s.finished += all ? 1 : 0;
  }
  return s;
}

void print_latency(const Latency& l) {
  std::printf("\"latency\": {");
  print_array("ttft_steps", l.ttft_steps, "%.0f");
  print_array("ttft_seconds", l.ttft_seconds, "%.4f");
  print_array("tpot_steps", l.tpot_steps, "%.3f");
  print_array("tpot_seconds", l.tpot_seconds, "%.5f", true);
  std::printf("}, ");
}

void print_time_split(const TimeSplit& t, const ModelConfig& config, const Ceilings* ceilings) {
  std::printf("\"time_split\": {\"prefill_steps\": %d, \"prefill_seconds\": %.3f, \"prefill_tokens\": %ld, "
              "\"decode_steps\": %d, \"decode_seconds\": %.3f, \"decode_tokens\": %ld}, ",
              t.prefill_steps, t.prefill_seconds, t.prefill_tokens, t.decode_steps, t.decode_seconds, t.decode_tokens);
  if (!ceilings) {
    std::printf("\"roofline\": null, ");
    return;
  }
  const DecodeDemand d = decode_demand(config, t.decode_steps, t.decode_step_rows, t.decode_step_context);
  const double secs = t.decode_seconds > 0 ? t.decode_seconds : 1;
  std::printf("\"roofline\": {\"peak_bytes_per_second\": %.4g, \"peak_flops_per_second\": %.4g, "
              "\"decode_bytes_per_second\": %.4g, \"decode_flops_per_second\": %.4g, \"bytes_per_decode_step\": %.4g, "
              "\"flops_per_decode_step\": %.4g, \"rows_per_decode_step\": %.4g}, ",
              ceilings->bytes_per_second, ceilings->flops_per_second, d.bytes / secs, d.flops / secs,
              t.decode_steps ? d.bytes / t.decode_steps : 0.0, t.decode_steps ? d.flops / t.decode_steps : 0.0,
              t.decode_steps ? static_cast<double>(t.decode_step_rows) / t.decode_steps : 0.0);
}

void print_allocators(const AllocatorUse& u) {
  std::printf("\"allocators\": {\"arena_arrays\": %ld, \"arena_resets\": %ld, \"arena_peak_bytes\": %zu, "
              "\"arena_capacity_bytes\": %zu, \"pool_created\": %ld, \"pool_peak_live\": %zu, "
              "\"pool_heap_allocations\": %" PRIu64 ", \"caching_heap_allocations\": %" PRIu64 ", "
              "\"kv_buffer_bytes\": %zu, \"step_lists_peak_bytes\": %zu, \"step_lists_upstream_bytes\": %zu, "
              "\"ring_bytes\": %zu, \"ring_peak_step_bytes\": %zu, \"ring_capacity_bytes\": %zu, \"evictions\": %zu}, ",
              u.arena_arrays, u.arena_resets, u.arena_peak_bytes, u.arena_capacity_bytes, u.pool_created, u.pool_peak_live,
              u.pool_heap_allocations, u.caching_heap_allocations, u.kv_buffer_bytes, u.step_lists_peak_bytes,
              u.step_lists_upstream_bytes, u.ring_bytes, u.ring_peak_step_bytes, u.ring_capacity_bytes, u.evictions);
}

void print_memory(const KvMemoryUse& m) {
  std::printf("\"memory\": {\"map_calls_per_step\": %.3f, \"unmap_calls_per_step\": %.3f, "
              "\"minor_faults_per_step\": %.3f, \"committed_peak_bytes\": %zu, \"committed_after_bytes\": %zu, "
              "\"committed_after_sleep_bytes\": ",
              m.map_calls_per_step, m.unmap_calls_per_step, m.minor_faults_per_step, m.committed_peak_bytes,
              m.committed_after_bytes);
  if (m.committed_after_sleep_bytes < 0)
    std::printf("null}, ");
  else
    std::printf("%lld}, ", m.committed_after_sleep_bytes);
}

void print_timeline(const std::vector<StepRecord>& tl) {
  std::printf("\"timeline\": {");
  print_int_array("running_blocks", tl, [](const StepRecord& r) { return r.running_blocks; });
  print_int_array("cached_blocks", tl, [](const StepRecord& r) { return r.cached_blocks; });
  print_int_array("free_blocks", tl, [](const StepRecord& r) { return r.free_blocks; });
  print_int_array("batch", tl, [](const StepRecord& r) { return r.batch; });
  print_int_array("preempted", tl, [](const StepRecord& r) { return r.preempted; });
  print_int_array("reserved_bytes", tl, [](const StepRecord& r) { return r.reserved_bytes; });
  print_int_array("allocated_bytes", tl, [](const StepRecord& r) { return r.allocated_bytes; }, true);
  std::printf("}");
}

/// The run's JSON object. `plain`: the plain engine's figures, when it ran (`matches`: whether
/// its tokens equal the served ones).
void print_json(const Args& a, const Trace& trace, const ModelConfig& config, const EngineOptions& o,
                const Served& served, const RunStats& s, const RunStats* plain, const char* matches,
                const Ceilings* ceilings) {
  const long generated = served.generated;
  std::printf("{\"requests\": %zu, \"finished\": %d, \"generated_tokens\": %ld, ", trace.requests.size(), served.finished, generated);
  std::printf("\"tokens_per_second\": %.2f, \"mean_batch\": %.3f, \"peak_running\": %d, \"preemptions\": %d, ",
              s.seconds > 0 ? static_cast<double>(generated) / s.seconds : 0.0, s.mean_batch, s.peak_running, s.preemptions);
  std::printf("\"prefix_hit_rate\": %.4f, \"kv_utilization\": %.4f, \"copies\": %zu, \"device_mallocs\": %zu, ",
              s.prefix_hit_rate, s.kv_utilization, s.copies, s.device_mallocs);
  std::printf("\"heap_allocations_per_step\": %.3f, ", s.heap_allocations_per_step);
  std::printf("\"heap_per_step\": {\"engine\": %.3f, \"kv_cache_manager\": %.3f, \"allocators\": %.3f}, ",
              s.heap.engine, s.heap.kv_cache_manager, s.heap.allocators);
  if (plain)
    std::printf("\"plain_heap_allocations_per_step\": %.3f, ", plain->heap_allocations_per_step);
  else
    std::printf("\"plain_heap_allocations_per_step\": null, ");
  std::printf("\"tokens_digest\": \"%016" PRIx64 "\", ", tokens_digest(served.outputs));
  std::printf("\"matches_plain_engine\": %s, \"leak\": %s, \"manager\": \"%s\", \"trace\": \"%s\", ", matches,
              s.leak.empty() ? "null" : json_string(s.leak).c_str(), manager_name(o.manager), trace.name);
  std::printf("\"model\": {\"name\": \"%s\", \"layers\": %d, \"hidden\": %d, \"heads\": %d, \"kv_heads\": %d, "
              "\"intermediate\": %d, \"vocab\": %d, \"weight_bytes\": %zu}, ",
              config.name, config.layers, config.hidden, config.heads, config.kv_heads, config.intermediate, config.vocab,
              config.weight_bytes());
  std::printf("\"kv_blocks\": %d, \"block_tokens\": %d, \"max_seqs\": %d, \"seed\": %" PRIu64 ", \"steps\": %d, "
              "\"seconds\": %.3f, ", o.kv_blocks, o.block_tokens, o.max_seqs, a.seed, s.steps, s.seconds);
  // CPU time too: on a machine shared with other work, wall-clock tokens/s follows the load;
  // the engine's two threads never run at once, so on an idle machine the two agree.
  std::printf("\"cpu_seconds\": %.3f, \"tokens_per_cpu_second\": %.2f, ", s.cpu_seconds,
              s.cpu_seconds > 0 ? static_cast<double>(generated) / s.cpu_seconds : 0.0);
  print_latency(s.latency);
  print_time_split(s.split, config, ceilings);
  print_allocators(s.allocators);
  print_memory(s.memory);
  print_timeline(s.timeline);
  std::printf("}\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const ModelConfig& config = *model_by_name(a.model);
  const Trace trace = make_trace(a.trace, config.vocab, a.seed);
  const EngineOptions o = options_for(a, trace);
  const Ceilings ceilings = a.roofline ? measure_ceilings() : Ceilings{};
  const Model model(config);
  RunStats s;
  Outputs outputs;
  try {
    ServedEngine engine(model, trace, o);
    outputs = engine.run(s);
  } catch (const std::exception& e) {
    // A manager's exception names its call (ManagerError); the engine's own checks say what they
    // found. Either way the run is over, and standard error says why.
    std::fprintf(stderr, "alloclab_serve: serving the %s trace with the %s manager stopped: %s\n", trace.name,
                 manager_name(o.manager), e.what());
    return 3;
  }
  RunStats p;
  const char* matches = "null";
  if (a.plain) {
    const Outputs expected = run_plain(model, trace, &p, heap_allocations);
    matches = expected == outputs ? "true" : "false";
  }
  const Served served = summarize_outputs(std::move(outputs), trace);
  print_json(a, trace, config, o, served, s, a.plain ? &p : nullptr, matches, a.roofline ? &ceilings : nullptr);
  return 0;
}
