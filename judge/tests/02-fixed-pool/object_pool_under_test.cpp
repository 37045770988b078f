// The test file that calls the learner's ObjectPool<T>: each member of the tests' ObjectPool
// (object_pool_under_test.hpp) calls the learner's member of the same name, for every type the
// tests build and every list of arguments they pass to create().
#include "fixed_pool.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "failing_new.hpp"
#include "object_pool_under_test.hpp"
#include "object_types.hpp"

namespace alloclab::test::pool {

template <class T>
struct ObjectPool<T>::Learners {
  std::optional<::alloclab::ObjectPool<T>> p;
};

namespace {

// Whether the learner's create() takes these arguments, as a test passed them. Named so that a
// compiler that refuses a call says which T and which arguments, as the test's own line did when
// it called the header itself.
template <class T, class... Args>
constexpr bool create_takes = requires(::alloclab::ObjectPool<T>& pool, Args&&... args) {
  pool.create(std::forward<Args>(args)...);
};

}  // namespace

// The learner's constructor runs into a holder the seam already has, so a constructor that throws
// leaves nothing behind, as it would with the learner's type on the stack.
template <class T>
ObjectPool<T>::ObjectPool() : learners_(uncounted_holder<Learners>()) {
  learners_->p.emplace();
}
template <class T>
ObjectPool<T>::ObjectPool(std::size_t objects_per_chunk) : learners_(uncounted_holder<Learners>()) {
  learners_->p.emplace(objects_per_chunk);
}
template <class T>
ObjectPool<T>::~ObjectPool() = default;

template <class T>
template <class... Args>
T* ObjectPool<T>::create(Args&&... args) {
  static_assert(create_takes<T, Args...>,
                "create() must take whatever arguments T's constructor takes, each as given: an rvalue, an "
                "lvalue, a const lvalue, a string literal, or none at all; create_takes<T, Args...> names the T "
                "and the arguments of the tests' call that your create() refuses");
  return learners_->p->create(std::forward<Args>(args)...);
}
template <class T>
void ObjectPool<T>::destroy(T* p) {
  learners_->p->destroy(p);
}
// Called on a const pool, as a caller holding a const reference would: a live() the learner did
// not declare const does not compile here. Its type is the contract's too, since the seam's
// std::size_t would silently take an int.
template <class T>
std::size_t ObjectPool<T>::live() const {
  const ::alloclab::ObjectPool<T>& pool = *learners_->p;
  static_assert(std::is_same_v<decltype(pool.live()), std::size_t>,
                "live() returns std::size_t, as the skeleton declares it: keep its declaration");
  return pool.live();
}

// Stage 3 (stage3_objects.cpp): each create() below is one that a test calls, with its argument
// types as deduced there (an lvalue argument deduces an lvalue reference).
using stage3_objects::Fragile;
using stage3_objects::Probe;
using stage3_objects::Sink;
using stage3_objects::Small;
using stage3_objects::Tracked;
using stage3_objects::Wide;
template class ObjectPool<Tracked>;
template Tracked* ObjectPool<Tracked>::create<int, std::string>(int&&, std::string&&);
template Tracked* ObjectPool<Tracked>::create<int&, std::string>(int&, std::string&&);
template Tracked* ObjectPool<Tracked>::create<int, const char (&)[2]>(int&&, const char (&)[2]);
template Tracked* ObjectPool<Tracked>::create<int, const char (&)[4]>(int&&, const char (&)[4]);
template Tracked* ObjectPool<Tracked>::create<int&, const char (&)[2]>(int&, const char (&)[2]);
template class ObjectPool<Sink>;
template Sink* ObjectPool<Sink>::create<Probe>(Probe&&);
template Sink* ObjectPool<Sink>::create<Probe&>(Probe&);
template Sink* ObjectPool<Sink>::create<const Probe&>(const Probe&);
template class ObjectPool<Fragile>;
template Fragile* ObjectPool<Fragile>::create<bool>(bool&&);
template class ObjectPool<char>;
template char* ObjectPool<char>::create<char>(char&&);
template class ObjectPool<Wide>;
template Wide* ObjectPool<Wide>::create<>();
template class ObjectPool<Small>;
template Small* ObjectPool<Small>::create<Small>(Small&&);
template class ObjectPool<std::vector<int>>;
template std::vector<int>* ObjectPool<std::vector<int>>::create<int, int>(int&&, int&&);

// The model stage (model_run.cpp): the value is a const int lvalue, the Tag comes as an rvalue, an
// lvalue or a const lvalue, a Refuse makes Item's constructor throw, and an int rvalue or no
// argument at all picks another constructor.
using pool_model::Item;
using pool_model::Refuse;
using pool_model::Tag;
template class ObjectPool<Item>;
template Item* ObjectPool<Item>::create<const int&, Tag>(const int&, Tag&&);
template Item* ObjectPool<Item>::create<const int&, Tag&>(const int&, Tag&);
template Item* ObjectPool<Item>::create<const int&, const Tag&>(const int&, const Tag&);
template Item* ObjectPool<Item>::create<const int&, Refuse>(const int&, Refuse&&);
template Item* ObjectPool<Item>::create<const int&, int>(const int&, int&&);
template Item* ObjectPool<Item>::create<>();

}  // namespace alloclab::test::pool
