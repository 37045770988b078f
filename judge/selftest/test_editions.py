"""The Chinese edition's checks: a page that follows an older English text is stale, and a page
whose skeleton differs (headings, anchors, code, inline code, figures, links out, tables) is named
with what differs. The kit's own pages are proven by the course linter, which `check` runs."""
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from lab.maintainer import editions
from lab.model.catalog import ROOT

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
