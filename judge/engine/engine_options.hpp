// What the served engine is built with: its KV budget, its batch limits, its threads.
#pragma once

#include <cstdint>
#include <memory>

#include "block_managers.hpp"

namespace alloclab::engine {

struct EngineOptions {
  ManagerKind manager = ManagerKind::prefix;
  int kv_blocks = 0;
  int block_tokens = 16;
  int max_batch_tokens = 512;  // rows per step: decode rows first, then whole prompts
  int max_seqs = 64;           // sequences running at once
  // Blocks kept free at admission, for the running sequences to grow into. vLLM keeps 1 %
  // (`watermark` in its v0 block manager); here a preemption recomputes a whole prompt on one
  // CPU core, so a larger margin pays: it admits a little later and preempts far less.
  int watermark_percent = 8;
  bool two_threads = true;     // the model runner on its own thread, fed through the ring
  std::uint64_t (*heap_count)() = nullptr;       // reads the process's heap allocation counter
  void (*on_finish)(int finished, int total) = nullptr;  // progress
  // How the `virtual` manager is made (make_virtual_manager): only the programs that link
  // virtual_manager.cpp, beside exercise 08's header, can serve with it.
  std::unique_ptr<BlockManager> (*make_virtual)(const VirtualLimits&) = nullptr;
};

}  // namespace alloclab::engine
