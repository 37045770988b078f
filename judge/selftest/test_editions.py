"""The Chinese edition's checks: a page that follows an older English text is stale, and a page
whose skeleton differs (headings, anchors, code, inline code, figures, links out, tables) is named
with what differs. The kit's own pages are proven by the course linter, which `check` runs."""
import shutil
import tempfile
import tomllib
import unittest
from dataclasses import replace
from pathlib import Path
from unittest import mock

from lab.maintainer import editions
from lab.model import catalog as cat
from lab.model.catalog import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures"

ENGLISH = """# Title {#t}

Prose with `code()` and a [source](https://example.org/x).

![A figure](figures/a.svg)

| a | b |
|---|---|
| 1 | `x` |

```cpp
int main() {}
```
"""
CHINESE = """# 标题 {#t}

中文，含 `code()` 和一个[来源](https://example.org/x)。

![一幅图](../figures/a.svg)

| 甲 | 乙 |
|---|---|
| 1 | `x` |

```cpp
int main() {}
```
"""


class EditionTest(unittest.TestCase):
    def setUp(self):
        self.root = ROOT / "build" / "selftest-editions"
        shutil.rmtree(self.root, ignore_errors=True)
        (self.root / "zh").mkdir(parents=True)
        self.page = editions.Edition(self.root / "page.md", self.root / "zh" / "page.md")
        self.page.english.write_text(ENGLISH, encoding="utf-8")
        self.addCleanup(shutil.rmtree, self.root, True)

    def chinese(self, text: str, sha: str | None = None) -> list[str]:
        name = self.page.english.relative_to(ROOT).as_posix()
        sha = sha or editions.digest(self.page.english)
        self.page.chinese.write_text(f"<!-- follows {name} sha256:{sha} -->\n\n{text}", encoding="utf-8")
        return editions.page_problems(self.page)

    def test_a_faithful_page_passes(self):
        self.assertEqual(self.chinese(CHINESE), [])

    def test_a_code_span_may_be_wrapped_differently(self):
        self.page.english.write_text(ENGLISH.replace("with `code()`", "with `code(a,\n  b)`"), encoding="utf-8")
        self.assertEqual(self.chinese(CHINESE.replace("`code()`", "`code(a, b)`")), [])

    def test_a_page_whose_english_changed_is_stale(self):
        found = self.chinese(CHINESE, sha="0" * 64)
        self.assertEqual(len(found), 1)
        self.assertIn("stale", found[0])

    def test_a_page_without_its_first_line_is_named(self):
        self.page.chinese.write_text(CHINESE, encoding="utf-8")
        self.assertIn("first line", editions.page_problems(self.page)[0])

    def test_each_difference_of_skeleton_is_named(self):
        cases = {
            "anchor": CHINESE.replace("{#t}", "{#title}"),
            "headings": CHINESE + "\n## 多出的一节\n",
            "code block": CHINESE.replace("int main() {}", "int main() { return 0; }"),
            "inline code": CHINESE.replace("`code()`", "code()"),
            "figures": CHINESE.replace("../figures/a.svg", "../figures/b.svg"),
            "links out": CHINESE.replace("https://example.org/x", "https://example.org/y"),
            "tables": CHINESE.replace("| 1 | `x` |", "| 1 | `x` |\n| 2 | 3 |"),
        }
        for what, text in cases.items():
            found = self.chinese(text)
            self.assertEqual(len(found), 1, f"{what}: {found}")
            self.assertIn(what.split()[0], found[0], what)


class CatalogEditionTest(unittest.TestCase):
    """judge/catalog.zh.toml against judge/catalog.toml, on mini.catalog.toml and its translation."""

    def setUp(self):
        self.exercise = cat.load(FIXTURES / "mini.catalog.toml").exercises[0]
        self.zh = (FIXTURES / "mini.catalog.zh.toml").read_text(encoding="utf-8")

    def problems(self, text: str) -> list[str]:
        return editions.exercise_problems(self.exercise, tomllib.loads(text)["exercise"][0])

    def test_a_faithful_translation_passes(self):
        self.assertEqual(self.problems(self.zh), [], "the fixture pair is faithful: nothing may be reported")

    def test_each_difference_is_named_with_its_place(self):
        cases = {
            "stale": (self.zh.replace('follows = "sha256:', 'follows = "sha256:0'), ": stale"),
            "title": (self.zh.replace('title = "arena 分配器"', 'title = ""'), ": no title"),
            "suites": (self.zh.replace('suite = "ArenaAlignment"', 'suite = "ArenaAligned"'), "suites"),
            "goal's code": (self.zh.replace("`allocate` 移动游标", "allocate 移动游标"), ", stage 1 (ArenaBasics): its goal"),
            "hint count": (self.zh.replace('    { level = "approach", text = "交出游标之前先把它向上取整。" },\n', ""),
                           ", stage 2 (ArenaAlignment): 3 hint(s) where the English has 4"),
            "level": (self.zh.replace('level = "concept", text = "对齐对', 'level = "approach", text = "对齐对'),
                      ", stage 2 (ArenaAlignment), hint 2: level 'approach'"),
            "tests": (self.zh.replace('tests = ["RoundsUp"]', 'tests = ["Rounds"]'),
                      ", stage 2 (ArenaAlignment), hint 1: tests ['Rounds']"),
            "hint's code": (self.zh.replace("`(used_ + a - 1) & ~(a - 1)`", "`used_ + a`"),
                            ", stage 2 (ArenaAlignment), hint 4: its inline code"),
            "empty hint": (self.zh.replace("哪个数说明下一个块从哪里开始？", ""), ", stage 1 (ArenaBasics), hint 1: no text"),
        }
        for what, (text, said) in cases.items():
            self.assertNotEqual(text, self.zh, f"{what}: the case changes nothing in the fixture")
            found = self.problems(text)
            self.assertEqual(len(found), 1, f"{what}: one problem, not {found}")
            self.assertIn(said, found[0], f"{what}: the problem does not say where or what: {found[0]}")

    def test_staleness_says_the_exact_follows_to_write(self):
        found = self.problems(self.zh.replace('follows = "sha256:', 'follows = "sha256:0'))
        self.assertIn(f'write follows = "sha256:{cat.words_digest(self.exercise)}"', found[0])

    def test_editing_one_exercise_marks_only_that_one_stale(self):
        english = cat.load().exercises
        digests = [cat.words_digest(ex) for ex in english]
        edited = replace(english[1], summary=english[1].summary + " More.")
        self.assertNotEqual(cat.words_digest(edited), digests[1], "an edited summary changes its exercise's digest")
        self.assertEqual(len(set(digests)), len(digests), "each exercise has a digest of its own")
        moved = replace(english[1], difficulty="hard", header="other.hpp")
        self.assertEqual(cat.words_digest(moved), digests[1], "what is not translated does not make it stale")

    def test_the_catalog_file_is_named_when_missing_or_short(self):
        catalog = cat.load(FIXTURES / "mini.catalog.toml")
        missing = editions.catalog_problems(catalog, FIXTURES / "none.zh.toml")
        self.assertIn("none.zh.toml is missing", missing[0])
        root = ROOT / "build" / "selftest-editions-catalog"
        root.mkdir(parents=True, exist_ok=True)
        self.addCleanup(shutil.rmtree, root, True)
        empty = root / "catalog.zh.toml"
        empty.write_text("format_version = 2\n", encoding="utf-8")
        found = editions.catalog_problems(catalog, empty)
        self.assertEqual(len(found), 1, found)
        self.assertIn("exercise 01 (arena) has no [[exercise]] table", found[0])
        self.assertIn(f'follows = "sha256:{cat.words_digest(catalog.exercises[0])}"', found[0])


class QuizEditionTest(unittest.TestCase):
    """A quiz's Chinese twin, on sample.quiz.toml and sample.zh.quiz.toml."""

    def setUp(self):
        self.root = ROOT / "build" / "selftest-editions-quiz"
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        self.addCleanup(shutil.rmtree, self.root, True)
        self.english = self.root / "sample.quiz.toml"
        shutil.copy(FIXTURES / "sample.quiz.toml", self.english)
        self.exercise = cat.load(FIXTURES / "mini.catalog.toml").exercises[0]
        body = (FIXTURES / "sample.zh.quiz.toml").read_text(encoding="utf-8").split("\n", 1)[1]
        self.line = f"# follows {self.english.relative_to(ROOT).as_posix()} sha256:{editions.digest(self.english)}"
        self.zh = f"{self.line}\n{body}"

    def problems(self, text: str) -> list[str]:
        chinese = self.root / "sample.zh.quiz.toml"
        chinese.write_text(text, encoding="utf-8")
        return editions.quiz_problems(self.exercise, chinese, self.english)

    def test_a_faithful_twin_passes(self):
        self.assertEqual(self.problems(self.zh), [])

    def test_each_difference_is_named(self):
        cases = {
            "stale": (self.zh.replace(self.line, self.line[:-64] + "0" * 64), f"stale: {self.line[len('# follows '):].split()[0]}"),
            "first line": ("\n".join(self.zh.split("\n")[1:]), "its first line must name"),
            "answer": (self.zh.replace("answer = 3096", "answer = 3000"), "question 3: answer = 3000 where the English has 3096"),
            "choices": (self.zh.replace('"新 chunk 的第一个块"]', '"新 chunk 的第一个块", "c"]'), "question 2: 4 choices"),
            "questions": (self.zh.split("[[question]]\nask = \"一个 7B")[0], "3 questions where the English has 4"),
            "code": (self.zh.replace("free(a) 再", "`free(a)` 再"), "question 2: its inline code"),
        }
        for what, (text, said) in cases.items():
            self.assertNotEqual(text, self.zh, f"{what}: the case changes nothing in the fixture")
            found = [p for p in self.problems(text) if "questions; a chapter has" not in p]
            self.assertEqual(len(found), 1, f"{what}: one problem, not {found}")
            self.assertIn(said, found[0], f"{what}: the problem does not say what differs")
        stale = self.problems(self.zh.replace(self.line, self.line[:-64] + "0" * 64))[0]
        self.assertIn(f"make its first line {self.line}", stale, "staleness gives the exact line to write")

    def test_a_missing_twin_is_named_with_its_first_line(self):
        found = editions.quiz_problems(self.exercise, self.root / "none.toml", self.english)
        self.assertEqual(len(found), 1)
        self.assertIn("none.toml is missing", found[0])
        self.assertIn(self.line, found[0])
class PunctuationTest(unittest.TestCase):
    def test_a_space_after_chinese_punctuation_and_an_ascii_comma_are_named(self):
        found = editions.chinese_punctuation_problems({
            "a.md": "把显存还回去； SIMD 缓冲区。\n\n| 甲（注） | 乙 |\n\n```\n代码。 不是正文\n```\n",
            "b.toml": 'x = """\\\n  阶段 1 的 3 条, 阶段 3 的 1 条。"""\n',
            "c": "对齐、 `new` 与 `delete`"})
        self.assertEqual(len(found), 3, found)
        self.assertIn("a.md: a space after full-width punctuation: `把显存还回去； SIMD 缓`", found)
        self.assertTrue(found[1].startswith("b.toml: an ASCII comma between Chinese words"), found)
        self.assertTrue(found[2].startswith("c: a space after"), found)

    def test_the_kits_chinese_has_none(self):
        self.assertEqual(editions.chinese_punctuation_problems(), [])


class FigureTwinTest(unittest.TestCase):
    """A Chinese page shows a figure's Chinese twin (chapters/figures/zh/, the same name) where it
    has one, and the twin counts as the English figure when the skeletons are compared."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        for name in ("chapters/figures/a.svg", "chapters/figures/b.svg", "chapters/figures/zh/a.svg"):
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_text("<svg/>")
        (self.root / "chapters/zh").mkdir()
        self.page = editions.Edition(self.root / "chapters/page.md", self.root / "chapters/zh/page.md")
        self.page.english.write_text("# T\n\n![A](figures/a.svg)\n\n![B](figures/b.svg)\n", encoding="utf-8")
        patch = mock.patch.object(editions, "ROOT", self.root)
        patch.start()
        self.addCleanup(patch.stop)

    def chinese(self, *figures: str) -> list[str]:
        images = "".join(f"\n![图](../figures/{f})\n" for f in figures)
        sha = editions.digest(self.page.english)
        self.page.chinese.write_text(f"<!-- follows chapters/page.md sha256:{sha} -->\n# 标题\n{images}", encoding="utf-8")
        return editions.page_problems(self.page)

    def test_a_twin_stands_for_its_english_figure(self):
        self.assertEqual(self.chinese("zh/a.svg", "b.svg"), [], "b.svg has no twin: the English figure is shown")

    def test_the_english_figure_shown_where_a_twin_exists_is_named(self):
        self.assertEqual(self.chinese("a.svg", "b.svg"),
                         ["it shows chapters/figures/a.svg, which has a Chinese twin: show chapters/figures/zh/a.svg"])

    def test_a_missing_extra_or_misplaced_figure_is_still_named(self):
        for figures in (("zh/a.svg",), ("zh/a.svg", "b.svg", "zh/a.svg"), ("b.svg", "zh/a.svg"), ("zh/b.svg", "b.svg")):
            found = self.chinese(*figures)
            self.assertEqual(len(found), 1, f"{figures}: {found}")
            self.assertIn("its figures differ from the English's", found[0], figures)

    def test_the_mapping_goes_both_ways(self):
        self.assertEqual(editions.twin("chapters/figures/04-pools.svg"), "chapters/figures/zh/04-pools.svg")
        self.assertEqual(editions.english("chapters/figures/zh/04-pools.svg"), "chapters/figures/04-pools.svg")
        self.assertEqual(editions.english("chapters/figures/04-pools.svg"), "chapters/figures/04-pools.svg")


if __name__ == "__main__":
    unittest.main()
