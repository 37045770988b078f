// Precompiled once per build tree and shared by every test binary (REUSE_FROM), so an
// edit of an exercise header recompiles only its tests, not GoogleTest (nor RapidCheck, whose
// header every model stage includes: 0.4 s less on each edit), nor the standard headers the
// exercises and their tests include (parsed once here instead of once per translation unit).
// A header under test still includes what it uses: the benchmarks and `serve` build it without.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <latch>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

// RapidCheck only where a model stage compiles: a ThreadSanitizer tree compiles none (the model
// stages are single-threaded; CMakeLists.txt), and RapidCheck is a third of this header's build.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ALLOCLAB_PCH_WITHOUT_MODELS
#endif
#endif
#if !defined(__SANITIZE_THREAD__) && !defined(ALLOCLAB_PCH_WITHOUT_MODELS)
#include <rapidcheck.h>
#endif
#undef ALLOCLAB_PCH_WITHOUT_MODELS
