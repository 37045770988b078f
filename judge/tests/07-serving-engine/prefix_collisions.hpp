// Runs of tokens that differ, yet a weak 64-bit hash maps to one value: a manager that keys its
// cache by such a digest alone, comparing no tokens, lets one of them hit the other's block.
// A 64-bit hash collides on purpose only where its construction lets one compute a collision:
// these were computed for FNV-1a over each token's 32 bits (the reference's bucket hash) and
// for h = 31 * h + token. For a hash nobody has broken, a birthday search would need about 2^32
// prefixes cached at once, which no test can hold: the chapter says so.
#pragma once

#include <array>

namespace alloclab::test::kv {

struct Collision {
  std::array<int, 3> a, b;
};

inline constexpr std::array<Collision, 2> kCollisions{{
    {{1711372053, 170986702, 12345}, {1804538696, 2025753767, 1591333171}},  // FNV-1a, 64 bits
    {{5, 40, 0}, {6, 9, 0}},                                                 // h = 31 * h + token
}};

}  // namespace alloclab::test::kv
