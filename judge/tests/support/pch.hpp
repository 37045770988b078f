// Precompiled once per build tree and shared by every test binary (REUSE_FROM), so an
// edit of an exercise header recompiles only its tests, not GoogleTest (nor RapidCheck, whose
// header every model stage includes: 0.4 s less on each edit).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <rapidcheck.h>
