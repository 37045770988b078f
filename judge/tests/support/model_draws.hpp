// What a model stage's generators draw with, inside `rc::gen::exec` or a model test's body: a
// number, one value of a few, one choice of a few by weight. A generator is then plain code that
// draws its call's arguments one after another (each exercise's `stageN_model.cpp` shows it).
// Composing RapidCheck's generators instead (`rc::gen::weightedOneOf` of `rc::gen::map`s and
// `rc::gen::construct`s) instantiates its templates anew for each composition: twice the time to
// compile a model stage's generators, seconds of a first judge. Included by the generators' files
// alone, which an edit of the header under test never recompiles.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <initializer_list>
#include <vector>

namespace alloclab::test::model {

/// A value of [lo, hi) whose range grows with RapidCheck's size, as the sequences do
/// (`rc::gen::inRange`). Shrinks towards `lo`.
template <class T>
T in_range(T lo, T hi) {
  return *rc::gen::inRange<T>(lo, hi);
}

/// A value of [lo, hi), each as likely whatever RapidCheck's size (`in_range` draws only near
/// `lo` while the size, which grows the sequences, is small). Shrinks towards `lo`.
template <class T>
T uniform_in(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

/// The index of one of some choices, each taken as often as its weight. Shrinks towards the
/// first choice an index at a time, not through a number that maps to an index: most of that
/// number's shrinks would give the same index, and each replays the whole sequence.
inline std::size_t choice(std::initializer_list<std::size_t> weights) {
  return *rc::Gen<std::size_t>([weights = std::vector<std::size_t>(weights)](const rc::Random& random, int) {
    std::size_t total = 0;
    for (const std::size_t weight : weights) total += weight;
    auto roll = static_cast<std::size_t>(rc::Random(random).next() % total);
    std::size_t index = 0;
    while (roll >= weights[index]) roll -= weights[index++];
    return rc::shrinkable::shrinkRecur(index, [](std::size_t i) { return rc::shrink::towards<std::size_t>(i, 0); });
  });
}

/// One of `values`, each as likely. Shrinks towards the first.
template <class T>
T one_of(std::initializer_list<T> values) {
  return values.begin()[uniform_in<std::size_t>(0, values.size())];
}

}  // namespace alloclab::test::model
