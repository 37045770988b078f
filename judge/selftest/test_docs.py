"""The learner's site: chapters get their hints and quiz folded in at the right place, links and bold
text come out as Doxygen needs them, figures are sized images, and the reference solutions stay out."""
import dataclasses
import io
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from lab.model import catalog as cat
from lab.maintainer import docs, doctor
from lab.model.errors import UsageError

CHAPTER = """# Chapter 1 — The arena {#ch01}

Intro.

## The lesson {#ch01-lesson}

```
## After you pass, inside a code block
```

## The task {#ch01-task}

### The stages

## After you pass {#ch01-after}

### The mistakes the tests catch
"""

QUIZ = """[[question]]
ask = "How many shadow bytes describe a 13-byte block at offset 0?"
answer = 2
explain = "One per 8-byte granule, rounded up."

[[question]]
ask = "After free(a) then free(b), which block comes next?"
choices = ["a", "b"]
answer = 2
explain = "The list is LIFO."
"""


def _exercise(tmp: Path) -> cat.Exercise:
    arena = cat.load().exercises[0]
    hints = (cat.Hint("concept", "Which idea applies? Think of <T> & #1 @ 100%."),
             cat.Hint("approach", "Keep `used_`."),
             cat.Hint("code", "Write `n > capacity_ - used_`."))
    stage = cat.Stage(1, "ArenaBasics", "basics", "requests fit or throw", ("asan",), hints)
    (tmp / "quiz.toml").write_text(QUIZ)
    return dataclasses.replace(arena, stages=(stage,))


class HelpSectionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        tmp = Path(self.tmp.name)
        self.exercise = _exercise(tmp)
        patch = mock.patch.object(cat.Exercise, "quiz_file", new=property(lambda ex: tmp / "quiz.toml"))
        patch.start()
        self.addCleanup(patch.stop)
        self.addCleanup(self.tmp.cleanup)

    def test_hints_and_quiz_come_after_the_task_and_before_after_you_pass(self):
        page = docs.with_help(CHAPTER, self.exercise)
        task, hints, quiz, after = (page.index(s) for s in (
            "## The task", "### Hints, stage by stage {#ch01-hints}", "### Check yourself {#ch01-quiz}",
            "## After you pass {#ch01-after}"))
        self.assertLess(task, hints)
        self.assertLess(hints, quiz)
        self.assertLess(quiz, after)
        self.assertIn("## After you pass, inside a code block", page[:task], "a heading in a code block is no heading")

    def test_every_hint_is_folded_and_named_by_its_level_in_order(self):
        page = docs.help_section(self.exercise)
        folded = [line for line in page.splitlines() if line.startswith("<details>")]
        self.assertEqual(len(folded), 3 + 2, "three hints and two answers, each folded")
        for n, level in enumerate(("the idea", "the approach", "the code"), start=1):
            self.assertIn(f"<summary>Hint {n} of 3: {level}</summary>", folded[n - 1])
        self.assertIn("`n > capacity_ - used_`", folded[2], "code spans are kept")
        self.assertIn(r"\<T\> \& \#1 \@ 100\%", folded[0], "text that Doxygen would read as markup is escaped")

    def test_a_hint_for_one_test_is_folded_under_its_stage_with_the_tests_name(self):
        stage = self.exercise.stages[0]
        own = (cat.Hint("concept", "Which request is too big?", ("ThrowsWhenFull",)),
               cat.Hint("code", "Compare first.", ("ThrowsWhenFull",)))
        exercise = dataclasses.replace(self.exercise, stages=(dataclasses.replace(stage, hints=stage.hints + own),))
        page = docs.help_section(exercise)
        folded = [line for line in page.splitlines() if line.startswith("<details>")]
        self.assertIn("<summary>Hint 3 of 3: the code</summary>", folded[2], "the stage's own hints count apart")
        self.assertIn("<i>For the test ArenaBasics.ThrowsWhenFull:</i>", page)
        self.assertIn("<summary>ArenaBasics.ThrowsWhenFull, hint 1 of 2: the idea</summary>Which request", folded[3])
        self.assertIn("<summary>ArenaBasics.ThrowsWhenFull, hint 2 of 2: the code</summary>", folded[4])
        self.assertLess(page.index("ThrowsWhenFull, hint 2"), page.index("### Check yourself"))

    def test_answers_are_folded_with_their_explanation(self):
        page = docs.help_section(self.exercise)
        self.assertIn("1. a\n2. b\n", page, "the choices are listed, numbered as the quiz command numbers them")
        self.assertIn("<summary>Answer</summary><b>2, b</b>. The list is LIFO.</details>", page)
        self.assertIn("<summary>Answer</summary><b>2</b>. One per 8-byte granule, rounded up.</details>", page)

    def test_a_chinese_chapter_gets_its_help_in_chinese_at_the_same_place(self):
        chinese = CHAPTER.replace("## The task {#ch01-task}", "## 任务 {#ch01-task}").replace(
            "## After you pass {#ch01-after}", "## 通过之后 {#ch01-after}")
        page = docs.with_help(chinese, self.exercise, "zh")
        task, hints, quiz, after = (page.index(s) for s in (
            "## 任务", "### 分阶段提示 {#ch01-hints}", "### 自测 {#ch01-quiz}", "## 通过之后 {#ch01-after}"))
        self.assertLess(task, hints, "the help is found by the headings' anchors, which both editions share")
        self.assertLess(hints, quiz)
        self.assertLess(quiz, after)
        self.assertIn("<summary>提示 1/3：思路</summary>", page)
        self.assertIn("<summary>答案</summary>", page)

    def test_the_words_of_the_help_are_the_same_set_in_both_languages(self):
        self.assertEqual(set(docs.WORDS["en"]), set(docs.WORDS["zh"]), "a word of the help lacks its translation")

    def test_a_chapter_without_the_three_parts_gets_its_help_at_the_end(self):
        page = docs.with_help("# Old {#ch01}\n\n## Running the judge\n\nText.", self.exercise)
        self.assertTrue(page.rstrip().endswith("The list is LIFO.</details>"))


class ForDoxygenTest(unittest.TestCase):
    def convert(self, text: str) -> str:
        return docs.for_doxygen(text, "chapters/01-arena.md", {"README.md", "chapters/02-fixed-pool.md"})

    def test_links_to_pages_stay_and_links_to_other_files_become_paths(self):
        self.assertEqual(self.convert("[next](02-fixed-pool.md)"), "[next](02-fixed-pool.md)")
        self.assertEqual(self.convert("[its task](02-fixed-pool.md#ch02-task)"), "[its task](@ref ch02-task)")
        self.assertEqual(self.convert("see [the guide](../docs/authoring.md)"), "see the guide (`docs/authoring.md`)")
        self.assertEqual(self.convert("[`solutions/01-arena/arena.hpp`](../solutions/01-arena/arena.hpp)"),
                         "`solutions/01-arena/arena.hpp`", "no link into the reference, only its path")
        for kept in ("[web](https://example.org/a.md)", "[here](#ch01-task)"):
            self.assertEqual(self.convert(kept), kept)

    def test_an_image_is_named_by_its_file_name_which_doxygen_finds_in_the_figures(self):
        self.assertEqual(self.convert("![figure](figures/01-x.svg)"), "![figure](01-x.svg)")
        self.assertEqual(docs.for_doxygen("![图](../figures/zh/01-x.svg)", "chapters/zh/01-arena.md", set()),
                         "![图](01-x.svg)", "a path that climbs with ../ would be shown as it is")

    def test_a_link_to_a_page_of_the_other_side_leads_there(self):
        elsewhere = {"chapters/zh/02-fixed-pool.md": "zh/ch02.html", "README.zh.md": "zh/index.html"}
        convert = lambda text: docs.for_doxygen(text, "chapters/01-arena.md", {"chapters/01-arena.md"}, elsewhere)
        self.assertEqual(convert("[中文](zh/02-fixed-pool.md#ch02-task)"), "[中文](zh/ch02.html#ch02-task)")
        self.assertEqual(convert("[中文](../README.zh.md)"), "[中文](zh/index.html)")

    def test_chinese_code_and_emphasis_reach_the_page_as_html(self):
        # Doxygen shows the backticks of `（`.ci/install`）` and the stars of `于*相同*的` as they are.
        convert = lambda text: docs.for_doxygen(text, "chapters/zh/01-arena.md", set())
        self.assertEqual(convert("（`.ci/install` 会安装）"),
                         r"（\htmlonly<code>.ci/install</code>\endhtmlonly 会安装）")
        self.assertEqual(convert("（`judge/tests/NN-*/model.hpp`）"),
                         r"（\htmlonly<code>judge/tests/NN-&#42;/model.hpp</code>\endhtmlonly）",
                         "a star inside would let Doxygen read */ as the end of a comment")
        self.assertEqual(convert("位于*相同的地址*。"), "位于<em>相同的地址</em>。")
        self.assertEqual(convert("a *b* c, 2*3*4 and `x`"), "a *b* c, 2*3*4 and `x`", "ASCII text is left to Doxygen")

    def test_bold_that_opens_on_code_becomes_html(self):
        self.assertEqual(self.convert("**`allocate(0)` returns null.** Then"), "<b>`allocate(0)` returns null.</b> Then")
        self.assertEqual(self.convert("`a**b**c`"), "`a**b**c`", "code spans are left alone")

    def test_a_name_that_opens_on_colons_is_shown_as_written(self):
        # Doxygen would take `::operator new` for a link request, drop the colons and warn.
        self.assertEqual(self.convert("`::operator new(n)` or `std::byte`"),
                         r"\htmlonly<code>::operator new(n)</code>\endhtmlonly or `std::byte`")
        self.assertEqual(self.convert("from ::operator new(n) to std::free"), r"from \::operator new(n) to std::free")

    def test_a_test_name_may_break_after_its_dot(self):
        self.assertEqual(self.convert("| `ArenaBasics.ExactFitSucceeds` | `a.b()` |"),
                         r"| \htmlonly<code>ArenaBasics.<wbr/>ExactFitSucceeds</code>\endhtmlonly | `a.b()` |")

    def test_a_headings_code_becomes_plain_text(self):
        # Doxygen 1.9 shows the tags of code in a heading as text: "What <tt>serve</tt> proves".
        self.assertEqual(self.convert("### Where the arena meets `std::pmr` {#meets}\n"),
                         "### Where the arena meets std::pmr {#meets}\n")
        self.assertEqual(self.convert("Text with `std::pmr`\n"), "Text with `std::pmr`\n", "prose keeps its code")

    def test_code_blocks_are_left_alone(self):
        block = "```\n**x** [a](../docs/authoring.md)\n```\n"
        self.assertEqual(self.convert(block), block)


class StageTest(unittest.TestCase):
    def test_the_learner_site_reads_the_skeletons_and_never_the_references(self):
        catalog = cat.load()
        with tempfile.TemporaryDirectory() as tmp:
            learner = docs.stage(catalog, Path(tmp) / "learner", maintainer=False)
            maintainer = docs.stage(catalog, Path(tmp) / "maintainer", maintainer=True)
        solutions = cat.ROOT / "solutions"
        self.assertFalse([p for p in learner if p.is_relative_to(solutions)])
        for ex in catalog.exercises:
            self.assertIn(ex.exercise_file, learner)
            self.assertIn(ex.solution_file, maintainer)
        self.assertFalse([p for p in learner if p.name == "authoring.md"], "the authoring guide is the maintainers'")


class SwitchTest(unittest.TestCase):
    """Every page of each side links to the same page on the other side, or to its main page."""

    def site(self, tmp: str) -> tuple[Path, tuple]:
        html = Path(tmp)
        (html / "zh").mkdir()
        page = f"<html><body>{docs.SWITCH_MARK}<p>text</p></body></html>"
        for name in ("index.html", "ch01.html", "classArena.html", "zh/index.html", "zh/ch01.html", "zh/glossary.html"):
            (html / name).write_text(page, encoding="utf-8")
        both = docs.sides(cat.load())
        for side, other in (both, both[::-1]):
            docs.add_switches(html, side, other)
        return html, both

    def test_each_page_leads_to_its_twin_and_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            html, both = self.site(tmp)
            self.assertIn('<a id="edition-switch" href="zh/ch01.html" hreflang="zh" lang="zh">中文</a>',
                          (html / "ch01.html").read_text())
            self.assertIn('<a id="edition-switch" href="../ch01.html" hreflang="en" lang="en">English</a>',
                          (html / "zh/ch01.html").read_text())
            self.assertIn('href="zh/index.html"', (html / "classArena.html").read_text(),
                          "a page without a twin leads to the other side's main page")
            self.assertIn('href="../index.html"', (html / "zh/glossary.html").read_text())
            self.assertEqual(docs.switch_problems(html, both), [])

    def test_a_page_without_its_switch_or_with_a_wrong_one_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            html, both = self.site(tmp)
            (html / "zh/index.html").write_text("<html><body>no switch</body></html>")
            wrong = (html / "ch01.html").read_text().replace('href="zh/ch01.html"', 'href="zh/index.html"')
            (html / "ch01.html").write_text(wrong)
            self.assertEqual(docs.switch_problems(html, both), [
                "ch01.html: its switch leads to zh/index.html, not to its twin zh/ch01.html",
                "zh/index.html: no switch to the other language"])

    def test_the_header_has_the_place_for_the_switch(self):
        self.assertIn(docs.SWITCH_MARK, (cat.ROOT / "docs" / "header.html").read_text(encoding="utf-8"),
                      "without it no page of the site gets its switch")


class SidebarTest(unittest.TestCase):
    def test_each_page_loads_the_side_bars_data_with_itself(self):
        with tempfile.TemporaryDirectory() as tmp:
            html = Path(tmp)
            (html / "navtreeindex0.js").write_text("var NAVTREEINDEX0 =\n{\n\"index.html\":[0]\n};\n")
            (html / "annotated_dup.js").write_text("var annotated_dup =\n[\n];\n")
            (html / "jquery.js").write_text("/* not the tree's */ var x = [];\n")
            (html / "ch01.html").write_text(f"<head>{docs._TREE_SCRIPT}</head>")
            docs._sidebar_at_load(html)
            page = (html / "ch01.html").read_text()
        self.assertIn('src="annotated_dup.js"', page)
        self.assertIn('src="navtreeindex0.js"', page)
        self.assertNotIn("jquery", page)
        self.assertIn("navTreeSubIndices = [NAVTREEINDEX0];", page)
        self.assertLess(page.index(docs._TREE_SCRIPT), page.index("navTreeSubIndices"),
                        "after navtree.js, whose getScript it replaces")


class StagedFiguresTest(unittest.TestCase):
    def test_each_side_gets_its_own_figures_under_the_english_names(self):
        english, chinese = docs.sides(cat.load())
        figures = cat.ROOT / "chapters" / "figures"
        twin = next(figures.glob("zh/*.svg"), None)
        if twin is None:
            self.skipTest("no figure has a Chinese twin")
        with tempfile.TemporaryDirectory() as tmp:
            for side, other in ((english, chinese), (chinese, english)):
                docs.stage_side(side, other, Path(tmp) / side.lang, [])
                staged = Path(tmp) / side.lang / "figures"
                self.assertEqual(sorted(p.name for p in staged.iterdir()), sorted(p.name for p in figures.glob("*.svg")),
                                 "every figure, once, under its English name")
                self.assertEqual((staged / twin.name).read_bytes(),
                                 (twin if side.lang == "zh" else figures / twin.name).read_bytes(),
                                 f"the {side.lang} side shows the figure in its own language")


class FiguresTest(unittest.TestCase):
    def test_an_svg_becomes_an_image_as_wide_as_it_asks(self):
        with tempfile.TemporaryDirectory() as tmp:
            html = Path(tmp)
            (html / "01-sized.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="90" '
                                               'viewBox="0 0 400 90"/>')
            (html / "01-free.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 900 90"/>')
            (html / "ch01.html").write_text(
                '<div class="image">\n<object type="image/svg+xml" data="01-sized.svg" style="pointer-events: none;">'
                '</object>\n<object type="image/svg+xml" data="01-free.svg" style="pointer-events: none;"></object>')
            docs._figures_as_images(html)
            page = (html / "ch01.html").read_text()
        self.assertIn('<img src="01-sized.svg" alt="" style="width: 400px"/>', page)
        self.assertIn('<img src="01-free.svg" alt=""/>', page)
        self.assertNotIn("<object", page)


@unittest.skipUnless(docs.available(), "doxygen or doxygen-awesome-css is not installed")
class BuildTest(unittest.TestCase):
    def test_the_learner_site_builds_and_documents_the_skeletons_only(self):
        catalog = cat.load()
        with tempfile.TemporaryDirectory() as tmp:
            ok, detail = docs.build_docs(catalog, out=Path(tmp))
            self.assertTrue(ok, detail)
            html = Path(tmp) / "html"
            shown = docs.documented_sources(html)
            self.assertEqual(shown, {ex.exercise_file.relative_to(cat.ROOT).as_posix() for ex in catalog.exercises})
            for ex in catalog.exercises:
                self.assertTrue((html / f"ch{ex.id:02d}.html").is_file(), f"chapter {ex.id} has its page")
            self.assertTrue((html / "doxygen-awesome.css").is_file(), "the theme is in the site")
            for ex in catalog.exercises:
                self.assertTrue((html / "zh" / f"ch{ex.id:02d}.html").is_file(),
                                f"chapter {ex.id}'s Chinese edition has its page, named as the English one")
            self.assertIn("术语表", (html / "zh" / "glossary.html").read_text(encoding="utf-8"))
            english = {p.name for p in html.glob("*.html")}
            chinese = {p.name for p in (html / "zh").glob("*.html")}
            for page in ("glossary.html", "instructors.html", "classalloclab_1_1Arena.html"):
                self.assertIn(page, english & chinese, "both sides have the same pages: the glossary, the "
                              "instructors' guide and the contracts")
            self.assertIn("教师指南", (html / "zh" / "instructors.html").read_text(encoding="utf-8"))
            self.assertIn("navTreeSubIndices = [NAVTREEINDEX0", (html / "zh" / "ch01.html").read_text(encoding="utf-8"),
                          "the side bar's data is loaded with the page")
            self.assertIn("搜索", (html / "zh" / "index.html").read_text(encoding="utf-8"),
                          "Doxygen's own words on the Chinese side are Chinese")
            self.assertEqual(docs.switch_problems(html, docs.sides(catalog)), [])
            self.assertFalse(list((html / "zh").glob("md_*.html")),
                             "a Chinese page named by its path: its title was not its first line")


class DoctorTest(unittest.TestCase):
    def test_the_docs_tools_are_checked_and_their_packages_named(self):
        with mock.patch.object(doctor, "_compiles", return_value=True):  # no compiler runs
            packages = {package for _, package, _ in doctor.checks()}
        self.assertTrue({"doxygen", "doxygen-awesome-css", "chromium"} <= packages)

    def test_the_chinese_font_is_found_by_its_file(self):
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(doctor, "_compiles", return_value=True):
            for present in (True, False):
                font = Path(tmp) / "NotoSansCJK-Regular.ttc"
                if present:
                    font.write_bytes(b"")
                with mock.patch.object(doctor, "CJK_FONT", font):
                    found = {package: ok for _, package, ok in doctor.checks()}
                self.assertEqual(found.get("fonts-noto-cjk"), present,
                                 "doctor names fonts-noto-cjk exactly when its font file is missing")
                font.unlink(missing_ok=True)
        self.assertIn("fonts-noto-cjk", doctor.packages(), "CI installs the font from .ci/packages.txt")
        if shutil.which("dpkg-query"):
            self.assertEqual(doctor.CJK_FONT.is_file(), not doctor.not_installed(["fonts-noto-cjk"]),
                             "the file doctor looks for is the one the package installs")

    def test_what_is_missing_is_one_command_that_installs_it(self):
        fake = [("Doxygen", "doxygen", True), ("The docs' theme", "doxygen-awesome-css", False),
                ("Chromium", "chromium", False)]
        with mock.patch.object(doctor, "checks", return_value=fake), \
                mock.patch("sys.stdout", new_callable=io.StringIO) as out, self.assertRaises(UsageError):
            doctor.doctor_command(None, None)
        self.assertRegex(out.getvalue(), r"with one command:\n  (sudo )?bash \.ci/install\n")
        self.assertIn("apt-get install doxygen-awesome-css chromium", out.getvalue(), "and it says what that installs")


if __name__ == "__main__":
    unittest.main()
