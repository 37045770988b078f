// Helpers shared by the stages of exercise 03. The stages are compiled as one translation
// unit, so whatever more than one file needs lives here, once.
#pragma once

#include <cstddef>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace alloclab::test {

/// The bytes of a recognisable token: every byte depends on who wrote it (`tag`), its
/// position and its index, so a token copied to the wrong place, or not copied, shows.
inline std::vector<unsigned char> make_token(int tag, int pos, std::size_t bytes) {
  std::vector<unsigned char> t(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    t[i] = static_cast<unsigned char>(tag * 131 + pos * 17 + static_cast<int>(i) * 7 + 1);
  return t;
}

/// True when the `t.size()` bytes at `p` equal `t`; false for nullptr.
inline bool same_bytes(const void* p, const std::vector<unsigned char>& t) {
  return p != nullptr && std::memcmp(p, t.data(), t.size()) == 0;
}

/// "{0, 1, 2}", for failure messages.
inline std::string show(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

inline std::string show(const std::optional<std::vector<int>>& v) {
  return v ? show(*v) : std::string("std::nullopt");
}

}  // namespace alloclab::test
