// A learner's manager, called through the seam: an exception it throws leaves as a ManagerError
// that names the call and its arguments, so that `serve` reports "admit(request 12, a 96-token
// prompt) threw std::invalid_argument: ..." rather than a crash. Shared by the files that include
// a learner's header (paged_manager.cpp, virtual_manager.cpp).
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include "block_manager.hpp"

namespace alloclab::engine::seam {

inline const char* kind_of(const std::exception& e) {
  if (dynamic_cast<const std::invalid_argument*>(&e)) return "std::invalid_argument";
  if (dynamic_cast<const std::out_of_range*>(&e)) return "std::out_of_range";
  if (dynamic_cast<const std::logic_error*>(&e)) return "std::logic_error";
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "std::bad_alloc";
  if (dynamic_cast<const std::runtime_error*>(&e)) return "std::runtime_error";
  return "a std::exception";
}

/// Runs one call of the learner's class `who` ("KVCacheManager"); `said` describes the call, and
/// is only built when it throws.
template <class Call, class Said>
decltype(auto) guarded(const char* who, Call&& call, Said&& said) {
  try {
    return call();
  } catch (const std::exception& e) {
    throw ManagerError(std::string(who) + "::" + said() + " threw " + kind_of(e) + ": " + e.what());
  } catch (...) {
    throw ManagerError(std::string(who) + "::" + said() + " threw something that is not a std::exception");
  }
}

inline std::string request(int seq) { return "request " + std::to_string(seq); }

}  // namespace alloclab::engine::seam
