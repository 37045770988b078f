// Hostile: allocate() starts a process that leaves the test program's process group and
// session (fork, setsid, fork again) and waits forever, keeping the output pipes open, so a
// kill of the group cannot reach it. Then the test aborts. The judge must still end that
// process: nothing the judged code starts may outlive the judge's run.
// Judge: exercise 1, stage 1
// Verdict: failed
// Outcome: crashed
// Report says: SIGABRT
// It strikes only on a request of 4097 bytes, which one test of stage 1 makes: that test
// crashes, and the judge still gives every other test its own verdict.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdlib>

namespace alloclab_hostile {
inline void on_allocate(std::size_t n) {
  if (n != 4097) return;
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      for (;;) pause();
    }
    _exit(0);
  }
  std::abort();
}
inline bool frees_its_buffer() { return true; }
}  // namespace alloclab_hostile

#include "support/arena_base.hpp"
