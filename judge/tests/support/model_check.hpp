// The model stage: random sequences of an exercise's calls, made on the header under test and on
// a small executable specification (the exercise's `model.hpp`) side by side. After every call
// each observer the contract offers is compared; the first that differs fails the sequence, and
// RapidCheck shrinks it to the shortest sequence that still fails before the learner sees it.
//
// A model test is written in three parts, each exercise's `stageN_model.cpp` shows them:
//   - an `Op`: one call of the contract with its arguments, as plain numbers, and a generator of
//     them (`rc::gen::exec` drawing with model_draws.hpp) that includes the misuse the contract
//     defines;
//   - a function that runs one sequence of ops on a fresh object and on the model, writing each
//     call into a `Transcript` as the C++ a learner would type, and comparing every observer with
//     `Transcript::same` after each call;
//   - `ALLOCLAB_MODEL_TEST`, which runs the sequences under a fixed seed and reports the shrunk one.
//
// Handles (a pointer, a request id, a marker) are chosen by index among the ones the model says
// are live, so that a sequence stays meaningful when shrinking deletes a call before it.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace alloclab::test::model {

/// How a call ended, as far as the contract tells endings apart.
enum class Outcome { returned, invalid_argument, out_of_range, bad_alloc, logic_error, other_exception };

inline std::string_view name(Outcome o) {
  switch (o) {
    case Outcome::returned: return "returns";
    case Outcome::invalid_argument: return "throws std::invalid_argument";
    case Outcome::out_of_range: return "throws std::out_of_range";
    case Outcome::bad_alloc: return "throws std::bad_alloc";
    case Outcome::logic_error: return "throws another std::logic_error";
    case Outcome::other_exception: return "throws something else";
  }
  return "?";
}

/// Runs `call()` and says how it ended. `std::bad_array_new_length` counts as `std::bad_alloc`,
/// which it is.
template <class Call>
Outcome outcome_of(Call&& call) {
  try {
    std::forward<Call>(call)();
    return Outcome::returned;
  } catch (const std::invalid_argument&) {
    return Outcome::invalid_argument;
  } catch (const std::out_of_range&) {
    return Outcome::out_of_range;
  } catch (const std::logic_error&) {
    return Outcome::logic_error;
  } catch (const std::bad_alloc&) {
    return Outcome::bad_alloc;
  } catch (...) {
    return Outcome::other_exception;
  }
}

/// A value as the transcript prints it: numbers, booleans, strings and containers of them.
template <class T>
std::string shown(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else {
    return rc::toString(value);
  }
}

/// One sequence's calls, as C++ that pastes into a scratch file, and the check of every
/// observer after them. `same` fails the sequence at the first difference, naming the observer,
/// both answers, and what the model's answer means in the contract's words.
class Transcript {
 public:
  /// `setup`: the declarations that come before the first call (`alloclab::Arena a(64);`).
  explicit Transcript(std::string setup) { lines_.push_back(std::move(setup)); }

  /// A call as the learner would write it; `note` (optional) says what it returned or threw.
  void call(std::string line, std::string note = "") {
    lines_.push_back(note.empty() ? std::move(line) : std::move(line) + "  // " + note);
    ++calls_;
  }

  /// Adds a remark to the last call's line (what it returned, say).
  void note(const std::string& remark) { lines_.back() += (lines_.back().find("  // ") == std::string::npos ? "  // " : "; ") + remark; }

  /// Fails the sequence unless the header's answer equals the model's.
  template <class T>
  void same(std::string_view observer, const T& model, const T& yours, std::string_view meaning) {
    if (!(model == yours)) differ(observer, shown(model), shown(yours), meaning);
  }

  /// Fails the sequence unless the call ended as the model says it must.
  void same(std::string_view call, Outcome model, Outcome yours, std::string_view meaning) {
    if (model != yours) differ(call, std::string(name(model)), std::string(name(yours)), meaning);
  }

  /// Fails the sequence with the two answers of `observer`.
  [[noreturn]] void differ(std::string_view observer, const std::string& model, const std::string& yours,
                           std::string_view meaning) const {
    std::ostringstream out;
    out << "after " << (calls_ == 1 ? "this call" : "these " + std::to_string(calls_) + " calls") << ":\n";
    for (const std::string& line : lines_) out << "    " << line << "\n";
    out << observer << ": the model says " << model << ", your header " << yours << ".\n"
        << "The model's answer means: " << meaning << ".";
    // What RC_FAIL throws, without the file and line it would add: the learner reads the calls.
    throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, out.str());
  }

  std::size_t calls() const { return calls_; }

 private:
  std::vector<std::string> lines_;
  std::size_t calls_ = 0;
};

/// The seed of this run: RC_PARAMS's `seed=` when it is set (`judge.py test N --seed S` sets
/// it), else a fixed one, so that judging the same header twice shows the same sequence.
inline std::uint64_t seed() {
  constexpr std::uint64_t kDefaultSeed = 1;
  const char* params = std::getenv("RC_PARAMS");
  if (params == nullptr || std::string_view(params).find("seed=") == std::string_view::npos) return kDefaultSeed;
  return rc::detail::configuration().testParams.seed;
}

/// How many sequences a model test runs, and how long they grow.
struct Budget {
  int sequences = 200;
  int max_size = 60;  // RapidCheck's size: about the longest sequence generated
};

/// Runs `property` (a callable without arguments that draws what it needs, as every model test's
/// does) over `budget`'s sequences with this run's seed, and fails the current GoogleTest test
/// with the shrunk sequence, its difference and how to replay it.
///
/// RapidCheck runs the shrunk sequence once more to describe it. A header whose answers depend on
/// more than the calls (bytes it never wrote, where the heap put a block, what an earlier sequence
/// left behind) may pass that run, and RapidCheck then describes the failure as "no exceptions
/// thrown": no calls, nothing to act on. So the sequences are watched as they run, and such a
/// failure is reported with the sequence as it first failed, before shrinking, and says so.
template <class Property>
void check(const char* file, int line, int exercise, Budget budget, Property&& property) {
  rc::detail::TestParams params;
  params.seed = seed();
  // `noshrink=1` in RC_PARAMS: `check` only asks whether a known mistake fails, not for its
  // shortest sequence, and shrinking replays the sequence hundreds of times.
  params.disableShrinking = rc::detail::configuration().testParams.disableShrinking;
  params.maxSuccess = budget.sequences;
  params.maxSize = budget.max_size;
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(test->test_suite_name()) + "/" + test->name();
  metadata.description = test->name();
  std::string first_failure;  // the first failing sequence's description, as it was found
  bool last_failed = false;   // whether the last sequence run failed: RapidCheck's last run is the one it reports
  const auto failed = [&](std::string description) {
    if (first_failure.empty()) first_failure = std::move(description);
    last_failed = true;
  };
  auto watched = [&] {
    last_failed = false;
    try {
      property();
    } catch (const rc::detail::CaseResult& result) {
      if (result.type == rc::detail::CaseResult::Type::Failure) failed(result.description);
      throw;
    } catch (const rc::GenerationFailure&) {  // a sequence RapidCheck discards
      throw;
    } catch (const std::exception& e) {
      failed(std::string("with an exception that left the sequence: ") + e.what());
      throw;
    } catch (...) {
      failed("with something thrown that is not a std::exception");
      throw;
    }
  };
  const auto result = rc::detail::checkTestable(watched, metadata, params);
  const std::string replay = ": `python3 judge/judge.py test " + std::to_string(exercise) + " --seed " +
                             std::to_string(params.seed) + "` runs the same sequences again (RC_PARAMS=\"seed=" +
                             std::to_string(params.seed) + "\" for the test program alone)";
  if (result.template is<rc::detail::FailureResult>() && !last_failed) {
    GTEST_MESSAGE_AT_(file, line, "", ::testing::TestPartResult::kNonFatalFailure)
        << "Your header and the model disagree " << first_failure
        << "\nThat is the sequence as it first failed, not shrunk: the shortest sequence that failed while it "
           "was shrunk passed when it ran again, so your header's answers depend on more than the calls (bytes it "
           "never wrote, where the heap put a block, or what an earlier sequence left behind)."
        << "\nSeed " << params.seed << replay << ".";
  } else if (result.template is<rc::detail::FailureResult>()) {
    const auto& failure = result.template get<rc::detail::FailureResult>();
    GTEST_MESSAGE_AT_(file, line, "", ::testing::TestPartResult::kNonFatalFailure)
        << "Your header and the model disagree " << failure.description << "\nSeed " << params.seed << replay
        << ".";
  } else if (result.template is<rc::detail::GaveUpResult>()) {
    ADD_FAILURE() << "The model test gave up (" << result.template get<rc::detail::GaveUpResult>().description
                  << "): a bug in the test, not in your header.";
  } else if (result.template is<rc::detail::Error>()) {
    ADD_FAILURE() << "The model test could not run: " << result.template get<rc::detail::Error>().description;
  }
}

}  // namespace alloclab::test::model

/// A model test: `body` is a lambda that RapidCheck calls with freshly generated values.
#define ALLOCLAB_MODEL_TEST(Suite, Name, exercise, budget, ...) \
  TEST(Suite, Name) { ::alloclab::test::model::check(__FILE__, __LINE__, exercise, budget, __VA_ARGS__); }
