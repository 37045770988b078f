"""`check`'s stage marks: a test of stage K may call only what the skeleton asks for by stage K."""
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from lab.maintainer import stage_marks

_SKELETON = """\
namespace alloclab {

/// A bump allocator.
class Arena {
 public:
  /// Stage 1: reserve the buffer.
  explicit Arena(std::size_t capacity) {}

  /// Stage 1: hand out n bytes. Stage 4: unpoison them.
  [[nodiscard]] void* allocate(std::size_t n) { return helper(n); }

  /// Stage 2: room for count objects.
  template <class T>
  [[nodiscard]] T* alloc_array(std::size_t count) { return nullptr; }

  /// Stage 3: the largest used() ever seen.
  [[nodiscard]] std::size_t peak() const noexcept { return 0; }

  [[nodiscard]] std::size_t used() const noexcept { return 0; }
};

/// Stage 3: typed objects.
template <class T>
class Typed {
 public:
  T* create() { return nullptr; }
};

}  // namespace alloclab
"""

_STAGE1 = """\
#include "arena.hpp"
TEST(ArenaBasics, Allocates) {
  Arena arena(64);
  (void)arena.allocate(8);
  EXPECT_EQ(arena.used(), 8u);  // peak() in a comment is no call
}

TEST(ArenaBasics, FailedRequestLeavesNoTrace) {
  Arena arena(64);
  EXPECT_EQ(arena.peak(), 0u);
  auto* p = arena.alloc_array<int>(2);
}
"""

_STAGE3 = """\
TEST(ArenaReuse, Peak) {
  Arena arena(64);
  EXPECT_EQ(arena.peak(), 0u);
  Typed<int> typed;
}
"""


class StageMarksTest(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp())
        (self.root / "tests").mkdir()
        (self.root / "arena.hpp").write_text(_SKELETON, encoding="utf-8")
        (self.root / "tests" / "stage1_basics.cpp").write_text(_STAGE1, encoding="utf-8")
        (self.root / "tests" / "stage3_reuse.cpp").write_text(_STAGE3, encoding="utf-8")
        stages = [SimpleNamespace(suite=suite, number=n) for n, suite in enumerate(["ArenaBasics", "ArenaAlignment",
                                                                                 "ArenaReuse", "ArenaModel"], start=1)]
        self.exercise = SimpleNamespace(exercise_file=self.root / "arena.hpp", tests_dir=self.root / "tests",
                                        stages=stages)

    def test_each_member_gets_the_first_stage_its_comment_names(self):
        marks = stage_marks.marks(self.root / "arena.hpp")
        self.assertEqual(marks["allocate"], 1)  # "Stage 1 ... Stage 4": the first
        self.assertEqual(marks["alloc_array"], 2)  # the mark above a template head
        self.assertEqual(marks["peak"], 3)
        self.assertEqual(marks["used"], 1)  # no mark, in a class with none: from the start
        self.assertEqual(marks["Typed"], 3)
        self.assertEqual(marks["create"], 3)  # inherited from its class
        self.assertNotIn("helper", marks)  # a call in a body declares nothing

    def test_a_planted_call_of_a_later_member_is_named_with_its_test_and_line(self):
        found = stage_marks.problems(self.exercise)
        self.assertEqual(len(found), 2, found)
        self.assertIn("stage1_basics.cpp:10: ArenaBasics.FailedRequestLeavesNoTrace (stage 1) uses peak", found[0])
        self.assertIn("marks for stage 3", found[0])
        self.assertIn("stage1_basics.cpp:11: ArenaBasics.FailedRequestLeavesNoTrace (stage 1) uses alloc_array",
                      found[1])

    def test_the_same_call_in_its_own_stage_or_a_later_one_is_fine(self):
        (self.root / "tests" / "stage1_basics.cpp").write_text(_STAGE1.split("TEST(ArenaBasics, Failed")[0],
                                                                encoding="utf-8")
        self.assertEqual(stage_marks.problems(self.exercise), [])


if __name__ == "__main__":
    unittest.main()
