// The stage file that calls the learner's header: each member of the tests' Arena
// (arena_under_test.hpp) calls the learner's member of the same name. An edit of the header
// recompiles this file and header_in_a_second_unit.cpp, and no stage file.
#include "arena.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "arena_under_test.hpp"

namespace alloclab::test::arena {

using LearnersArena = ::alloclab::Arena;

struct Arena::Learners {
  LearnersArena a;
  explicit Learners(std::size_t capacity) : a(capacity) {}
};

Copyability traits_of_the_arena() { return copyability_of<LearnersArena>(); }

// The learner's constructor runs before the pointer owns it, so a constructor that throws leaves
// nothing behind, as it would with the learner's type on the stack.
Arena::Arena(std::size_t capacity) : learners_(std::make_unique<Learners>(capacity)) {}
Arena::~Arena() = default;

void* Arena::allocate(std::size_t n) { return learners_->a.allocate(n); }
void* Arena::allocate(std::size_t n, std::size_t align) { return learners_->a.allocate(n, align); }

template <class T>
T* Arena::alloc_array(std::size_t count) {
  return learners_->a.template alloc_array<T>(count);
}
template char* Arena::alloc_array<char>(std::size_t);
template double* Arena::alloc_array<double>(std::size_t);
template std::uint32_t* Arena::alloc_array<std::uint32_t>(std::size_t);
template std::uint64_t* Arena::alloc_array<std::uint64_t>(std::size_t);
template CacheLine* Arena::alloc_array<CacheLine>(std::size_t);
template Triple* Arena::alloc_array<Triple>(std::size_t);

void Arena::reset() { learners_->a.reset(); }

// The observers are called on a const arena, as a caller holding a const reference would: an
// observer the learner did not declare const does not compile here.
std::size_t Arena::used() const { return std::as_const(learners_->a).used(); }
std::size_t Arena::peak() const { return std::as_const(learners_->a).peak(); }
std::size_t Arena::capacity() const { return std::as_const(learners_->a).capacity(); }
Arena::Marker Arena::mark() const { return {std::as_const(learners_->a).mark().offset}; }
void Arena::rewind(Marker m) { learners_->a.rewind(LearnersArena::Marker{m.offset}); }

}  // namespace alloclab::test::arena
