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
#include <rapidcheck.h>
