// Stage 7 — against the model: random sequences of admit, grow, fork, release, trim, sleep (with
// a random keep list) and wake over a small PhysicalMemory, misuse included, with the caller's
// writes and reads of whole tokens through data(r) and another user of the same memory taking
// and giving back granules, run on your header and on model.hpp side by side (model_run.cpp).
// After every call each sequence's slice, length and data(r), which granule every slot maps,
// every granule's reference count, the bytes every read returns and the bytes the system has
// committed must agree. This file only generates the sequences: it includes no header under
// test, so an edit of virtual_memory.hpp never recompiles it.
#include <array>
#include <cstddef>
#include <vector>

#include "model_calls.hpp"
#include "model_check.hpp"
#include "model_draws.hpp"

namespace stage7_model {

using alloclab::test::model::choice;
using alloclab::test::model::uniform_in;
using vm_model::kOverMax;
using vm_model::kShrink;
using vm_model::kUnknown;
using vm_model::Op;
using K = Op::Kind;

// Neither a call's kind nor the request it names shrinks: a sequence shrinks by losing calls, and
// by the sizes of the calls it keeps. Trying each kind and each request in place of every call
// would replay the sequence hundreds of times more, for a sequence no shorter.
template <class Draw>
auto fixed(Draw draw) {
  return *rc::gen::noShrink(rc::gen::exec(draw));
}

int pick() {
  return fixed([] { return choice({14, 1}) == 0 ? uniform_in(0, kUnknown) : kUnknown; });
}

rc::Gen<Op> ops() {
  return rc::gen::exec([] {
    constexpr std::array kinds{K::admit, K::grow,  K::fork, K::release, K::trim, K::sleep,
                               K::wake,  K::write, K::read, K::hold,    K::drop};
    const K kind = kinds[fixed([] { return choice({6, 8, 3, 4, 1, 1, 4, 4, 4, 1, 1}); })];
    const int which = pick();
    switch (kind) {
      case K::admit: return Op{kind, which, choice({12, 1}) == 0 ? uniform_in(0, 9) : kOverMax};
      case K::grow: {
        const std::size_t how = choice({12, 1, 1});
        return Op{kind, which, how == 0 ? uniform_in(0, 7) : how == 1 ? kShrink : kOverMax};
      }
      case K::fork: return Op{kind, which, pick()};
      case K::sleep: return Op{kind, choice({8, 1}) == 0 ? 0 : kUnknown, uniform_in(0, 16)};
      case K::write:
      case K::read: return Op{kind, which, uniform_in(0, 16)};
      case K::drop: return Op{kind, 0, uniform_in(0, 4)};
      default: return Op{kind, which, 0};
    }
  });
}

ALLOCLAB_MODEL_TEST(VmModel, EveryCallAgreesWithTheModel, 8, (alloclab::test::model::Budget{200, 200}), [] {
  vm_model::Setup setup{};
  setup.granule_pages = 1 + choice({3, 1, 1});
  setup.granule_eighths = uniform_in<std::size_t>(2, 8);
  setup.sequences = 1 + choice({1, 2, 3, 3});
  setup.max_tokens = uniform_in<std::size_t>(1, 13);
  // Eighths of a page: 2 is a quarter, 3 a token that straddles pages and granules, 8 a page, 10 more.
  setup.token_eighths = std::array<std::size_t, 5>{2, 3, 4, 8, 10}[choice({2, 3, 2, 2, 1})];
  const auto sequence = *rc::gen::container<std::vector<Op>>(ops());
  vm_model::run(setup, sequence);
})

}  // namespace stage7_model
