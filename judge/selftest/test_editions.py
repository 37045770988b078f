"""The Chinese edition's checks: a page that follows an older English text is stale, and a page
whose skeleton differs (headings, anchors, code, inline code, figures, links out, tables) is named
with what differs. The kit's own pages are proven by the course linter, which `check` runs."""
import shutil
import unittest
from pathlib import Path

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


if __name__ == "__main__":
    unittest.main()
