"""`docs`: the site a learner reads, rendered with Doxygen: the README as the main page, one page
per chapter with its hints and its self-check folded in after the task, and the exercises'
contracts (the skeletons' doc comments). The reference solutions are not in it; the
maintainer's site (`docs --maintainer`) documents them instead, with their sources.

The site has two sides, one Doxygen run each, with the same pages: the English in html/, and the
Chinese edition in html/zh/ (README.zh.md as its main page, the Chinese chapters, the Chinese
instructors' guide), whose Doxygen writes its own words (menus, search) in Chinese. Both have the
glossary, which is written in both languages, and the contracts, in the English of the skeletons'
comments. Every page carries a switch, top right, to the same page on the other side, or to its
main page where the page has no twin there.

The chapters are not given to Doxygen as they are: each is copied into the output folder with its
hints and quiz added, its links to files that are not pages of the site turned into plain paths
(the site never links into the repository), and the few constructs Doxygen 1.9 misreads (bold
that opens on code, a name that opens on `::`) written the way it reads them."""
from __future__ import annotations

import html
import os
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from . import browser
from .markdown import IMAGE, LINK, SCHEME, outside_code
from ..core import process
from ..core.build import BUILD_ROOT
from ..learner import quiz
from ..model.catalog import ROOT, ZH, Catalog, CatalogError, Exercise, translated
from ..model.errors import UsageError

OUT = BUILD_ROOT / "docs"
MAINTAINER_OUT = BUILD_ROOT / "docs-maintainer"
THEME = Path("/usr/share/doxygen-awesome-css")
# A picture of a chapter page on each side as the browser check saw it, for people to look at.
SCREENSHOT = OUT / "chapter.png"
SCREENSHOT_ZH = OUT / "chapter.zh.png"
# header.html holds this mark where each page's switch to the other side goes.
SWITCH_MARK = '<a id="edition-switch"></a>'
_LABEL = re.compile(r"^#\s.*\{#([A-Za-z0-9_-]+)\}\s*$", re.M)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_GLOBAL_NAME = re.compile(r"(?<![\w>)\]])::\w")
_TEST_NAME = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
# Emphasis with a character outside ASCII just outside a star, as Chinese writes it: Doxygen shows
# those stars as they are.
_WIDE_EMPHASIS = re.compile(r"(?:(?<=[^\x00-\x7f])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?!\*)"
                            r"|(?<![*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?=[^\x00-\x7f]))")
_SOURCES = re.compile(r"generated from the following files?:\s*<ul>(.*?)</ul>", re.S)
_SVG_OBJECT = re.compile(r'<object type="image/svg\+xml" data="([^"]+)"[^>]*></object>')


def missing() -> str:
    """What must be installed before the site can be built, as a sentence; empty when nothing."""
    if not shutil.which("doxygen"):
        return "doxygen is not installed: sudo apt-get install doxygen"
    if not (THEME / "doxygen-awesome.css").is_file():
        return "the site's theme is not installed: sudo apt-get install doxygen-awesome-css"
    return ""


def available() -> bool:
    return not missing()


@dataclass(frozen=True)
class Side:
    """One language of the site: its Markdown pages (the main page first), the folder under html/
    it is written to, and the words of its own that Doxygen and the pages' help use."""
    lang: str
    folder: str           # "" for the English side, "zh" for the Chinese
    doxygen_language: str
    pages: tuple[str, ...]
    chapters: tuple[tuple[str, Exercise], ...]   # (page, its exercise)
    switch_label: str     # how the other side's switch names this side, in this side's language
    brief: str = ""       # the project's brief in this language, where it is not docs/Doxyfile's


def sides(catalog: Catalog, maintainer: bool = False) -> tuple[Side, Side]:
    en = [ex.chapter.relative_to(ROOT).as_posix() for ex in catalog.exercises]
    zh = [(ZH / ex.chapter.name).relative_to(ROOT).as_posix() for ex in catalog.exercises]
    english = ["README.md", *en, "docs/instructors.md", "docs/glossary.md"] + \
        (["docs/authoring.md"] if maintainer else [])
    return (Side("en", "", "English", tuple(english), tuple(zip(en, catalog.exercises)), "English"),
            Side("zh", "zh", "Chinese", ("README.zh.md", *zh, "docs/zh/instructors.md", "docs/glossary.md"),
                 tuple(zip(zh, catalog.exercises)), "中文",
                 "由你亲手构建、在 sanitizer 下接受评判的 LLM 推理引擎内存分配器"))


def page_file(page: str, side: Side) -> str:
    """The HTML file Doxygen writes a page to: index.html for the main page, else its title's label."""
    if page == side.pages[0]:
        return "index.html"
    label = _LABEL.search((ROOT / page).read_text(encoding="utf-8"))
    return f"{label.group(1)}.html" if label else ""


def build_docs(catalog: Catalog, maintainer: bool = False, out: Path | None = None) -> tuple[bool, str]:
    """Builds the site into out/html, each side in turn; any Doxygen warning is a failure.
    Returns (ok, what went wrong)."""
    if missing():
        return False, missing()
    out = (out or (MAINTAINER_OUT if maintainer else OUT)).resolve()
    shutil.rmtree(out / "html", ignore_errors=True)  # a page of an earlier build must not linger
    both = sides(catalog, maintainer)
    for side, other in (both, both[::-1]):
        work = out / ("src" if side.lang == "en" else f"src-{side.lang}")
        try:   # the contracts are documented on both sides, in the English they are written in
            inputs = stage_side(side, other, work, headers(catalog, maintainer))
        except (CatalogError, OSError) as err:
            return False, f"cannot prepare the pages: {err}"
        config = out / ("Doxyfile" if side.lang == "en" else f"Doxyfile.{side.lang}")
        config.write_text(_config(out, inputs, maintainer, side, work), encoding="utf-8")
        result = process.run(["doxygen", str(config)], cwd=ROOT, timeout=300, keep_bytes=100_000)
        warnings = result.stderr.text().strip()
        if result.returncode != 0 or warnings:
            return False, warnings or result.stdout.text()[-2000:] or f"doxygen exited with {result.returncode}"
        _figures_as_images(out / "html" / side.folder)
        _sidebar_at_load(out / "html" / side.folder)
    for side, other in (both, both[::-1]):
        add_switches(out / "html", side, other)
    leaked = sorted(s for s in documented_sources(out / "html") if s.startswith("solutions/"))
    if leaked and not maintainer:
        return False, f"the learner's site documents the reference solutions: {', '.join(leaked)}"
    return True, ""


def check_in_browser(catalog: Catalog, out: Path = OUT) -> tuple[bool, str]:
    """Loads every page of a built site in headless chromium; keeps a screenshot of the first
    chapter on each side."""
    if not browser.executable():
        return False, "chromium is not installed: sudo apt-get install chromium"
    chapter = f"ch{catalog.exercises[0].id:02d}.html" if catalog.exercises else "index.html"
    shots = [(chapter, out / SCREENSHOT.name), (f"zh/{chapter}", out / SCREENSHOT_ZH.name)]
    problems = switch_problems(out / "html", sides(catalog))
    try:
        problems += browser.check_site(out / "html", screenshots=shots)
    except browser.BrowserError as err:
        return False, f"the browser check could not run: {err}"
    return not problems, "\n".join(problems)


# ---- the switch between the sides --------------------------------------------------------------

def _pages_of(site: Path, side: Side) -> list[Path]:
    """The side's pages built from the header (its search results are not: they have no switch)."""
    return sorted((site / side.folder).glob("*.html"))


def _relative(site: Path, frm: Side, to: Side, name: str) -> str:
    return os.path.relpath(site / to.folder / name, site / frm.folder).replace(os.sep, "/")


def add_switches(site: Path, side: Side, other: Side) -> None:
    """Puts in each page of `side` its link to the same page of `other` (the same file name: both
    runs name a page by its label), or to other's main page where it has no such page."""
    there = {p.name for p in _pages_of(site, other)}
    for page in _pages_of(site, side):
        text = page.read_text(encoding="utf-8")
        if SWITCH_MARK not in text:
            continue
        target = _relative(site, side, other, page.name if page.name in there else "index.html")
        link = (f'<a id="edition-switch" href="{target}" hreflang="{other.lang}" lang="{other.lang}">'
                f'{other.switch_label}</a>')
        page.write_text(text.replace(SWITCH_MARK, link, 1), encoding="utf-8")


_SWITCH = re.compile(r'<a id="edition-switch" href="([^"]*)"')


def switch_problems(site: Path, both: tuple[Side, Side]) -> list[str]:
    """Every page of each side has a switch to the other side, to its twin when it has one, and the
    twin's switch leads back."""
    problems = []
    for side, other in (both, both[::-1]):
        for page in _pages_of(site, side):
            name = page.relative_to(site).as_posix()
            found = _SWITCH.search(page.read_text(encoding="utf-8", errors="replace"))
            if not found:
                problems.append(f"{name}: no switch to the other language")
                continue
            target = (page.parent / found.group(1)).resolve()
            twin = site / other.folder / page.name
            if twin.is_file() and target != twin.resolve():
                problems.append(f"{name}: its switch leads to {found.group(1)}, not to its twin "
                                f"{twin.relative_to(site).as_posix()}")
            elif not twin.is_file() and target != (site / other.folder / "index.html").resolve():
                problems.append(f"{name}: it has no twin, and its switch leads to {found.group(1)}, "
                                "not to the other side's main page")
    return problems


def _figures_as_images(site: Path) -> None:
    """Doxygen embeds an SVG figure as an <object>, which CSS cannot size to the text column and
    keep in proportion; an <img> it can, and it is how the code host shows the same figure."""
    def image(m: re.Match) -> str:
        width = _declared_width(site / m.group(1))
        return f'<img src="{m.group(1)}" alt=""' + (f' style="width: {width}px"' if width else "") + "/>"

    for page in site.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        shown = _SVG_OBJECT.sub(image, text)
        if shown != text:
            page.write_text(shown, encoding="utf-8")


_TREE_DATA = re.compile(r"^var (\w+) =\s*[\[{]", re.M)
_TREE_SCRIPT = '<script type="text/javascript" src="navtree.js"></script>'
# Doxygen's side bar fetches its data (navtreeindexN.js, and a script per folded part of the tree)
# by adding <script> elements once the page has loaded, and draws the tree when they arrive: a
# page is shown, and a screenshot taken, with the side bar still empty. The page loads that data
# with itself instead, and the side bar's fetch finds it there and goes on at once.
_TREE_AT_LOAD = """<script type="text/javascript">
navTreeSubIndices = [{indices}];
(function () {{
  var fetch = getScript;
  getScript = function (name, then, show) {{
    var data = name.substring(name.lastIndexOf('/') + 1).replace(/\\-/g, '_');
    if (typeof window[data] !== 'undefined') then(); else fetch(name, then, show);
  }};
}})();
</script>"""


def _sidebar_at_load(site: Path) -> None:
    """Every page of a side loads its side bar's data with itself, so that the tree is drawn as
    the page loads (see _TREE_AT_LOAD)."""
    data = []
    for script in sorted(site.glob("*.js")):
        found = _TREE_DATA.search(script.read_text(encoding="utf-8", errors="replace"))
        if found and found.group(1) in (script.stem.replace("-", "_"), script.stem.upper()):
            data.append(script.name)
    indices = sorted((n for n in data if re.fullmatch(r"navtreeindex\d+\.js", n)), key=lambda n: int(n[12:-3]))
    if not data:
        return
    loads = "".join(f'\n<script type="text/javascript" src="{name}"></script>' for name in data)
    at_load = _TREE_AT_LOAD.format(indices=", ".join(n[:-3].upper() for n in indices))
    for page in site.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        if _TREE_SCRIPT in text:
            page.write_text(text.replace(_TREE_SCRIPT, _TREE_SCRIPT + loads + "\n" + at_load, 1), encoding="utf-8")


def _declared_width(svg: Path) -> str:
    """The width an SVG asks for in pixels; empty when it gives a viewBox only (it then fills the column)."""
    try:
        width = ET.parse(svg).getroot().get("width", "")
    except (OSError, ET.ParseError):
        return ""
    return width.removesuffix("px") if re.fullmatch(r"\d+(\.\d+)?(px)?", width) else ""


def documented_sources(site: Path) -> set[str]:
    """The source files a built site documents, as its pages name them ("generated from the
    following file"), relative to the kit."""
    found = set()
    for page in site.rglob("*.html"):
        for listed in _SOURCES.findall(page.read_text(encoding="utf-8", errors="replace")):
            found.update(re.sub(r"<[^>]*>", "", item).strip() for item in re.findall(r"<li>(.*?)</li>", listed, re.S))
    return found


# ---- the pages ---------------------------------------------------------------------------------

def headers(catalog: Catalog, maintainer: bool) -> list[Path]:
    """The headers a site documents: the skeletons' contracts, or the maintainer's references."""
    return [ex.solution_file if maintainer else ex.exercise_file for ex in catalog.exercises]


def stage(catalog: Catalog, src: Path, maintainer: bool) -> list[Path]:
    """The English side's inputs (see stage_side), staged into src."""
    english, chinese = sides(catalog, maintainer)
    return stage_side(english, chinese, src, headers(catalog, maintainer))


def stage_side(side: Side, other: Side, src: Path, headers: list[Path]) -> list[Path]:
    """Writes a side's Markdown pages into src and returns every input Doxygen reads, in the order
    the site lists them (its main page first), then the headers. A link to a page of the other
    side becomes a link to that page there."""
    shutil.rmtree(src, ignore_errors=True)
    chapters = dict(side.chapters)
    elsewhere = {page: _relative(Path("/"), side, other, name) for page in other.pages
                 if (name := page_file(page, other))}
    inputs = []
    for page in side.pages:
        # A page's title must be its first line for Doxygen to name the page by its label: the
        # Chinese pages open on the line that names the English text they follow.
        text = _title_first(re.sub(r"\A<!--.*?-->\s*", "", (ROOT / page).read_text(encoding="utf-8"), flags=re.S))
        if page in chapters:
            text = with_help(text, chapters[page], side.lang)
        staged = src / page
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_text(for_doxygen(text, page, set(side.pages), elsewhere), encoding="utf-8")
        inputs.append(staged)
    _stage_figures(src / "figures", side.lang)
    return inputs + headers


def _title_first(text: str) -> str:
    """The page with its title on its first line, where a README puts a link to its twin above it."""
    title = re.search(r"^# .*\n?", text, re.M)
    if not title or title.start() == 0:
        return text
    return title.group(0).rstrip("\n") + "\n\n" + (text[:title.start()] + text[title.end():]).lstrip("\n")


def _stage_figures(folder: Path, lang: str) -> None:
    """The figures a side's pages show: each figure's twin in the side's language where it has one,
    under the English figure's name, which is the name the page's image has once Doxygen copied it.
    Doxygen finds an image by its name in every folder under IMAGE_PATH, so it is given these alone
    (chapters/figures holds both languages' under one name)."""
    figures = ROOT / "chapters" / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    for svg in figures.glob("*.svg"):
        shutil.copyfile(figures / lang / svg.name if (figures / lang / svg.name).is_file() else svg, folder / svg.name)


def _config(out: Path, inputs: list[Path], maintainer: bool, side: Side, work: Path) -> str:
    quoted = " \\\n    ".join(f'"{p}"' for p in inputs)
    header_dirs = " ".join(f'"{p.parent}"' for p in inputs if p.suffix == ".hpp")
    sources = "YES" if maintainer else "NO"
    figures = work / "figures"
    return (f'@INCLUDE = "{ROOT / "docs" / "Doxyfile"}"\n'
            f'OUTPUT_DIRECTORY = "{out}"\n'
            f'HTML_OUTPUT = "{Path("html") / side.folder}"\n'
            f'OUTPUT_LANGUAGE = {side.doxygen_language}\n'
            + (f'PROJECT_BRIEF = "{side.brief}"\n' if side.brief else "") +
            f'INPUT = {quoted}\n'
            f'USE_MDFILE_AS_MAINPAGE = "{inputs[0]}"\n'
            f'STRIP_FROM_PATH = "{work}" "{ROOT}"\n'
            f'STRIP_FROM_INC_PATH = {header_dirs}\n'
            f'SOURCE_BROWSER = {sources}\n'
            f'VERBATIM_HEADERS = {sources}\n' +
            (f'IMAGE_PATH = "{figures}"\n' if figures.is_dir() else ""))


def _outside_code(text: str, change) -> str:
    """Applies change() to every line outside fenced code blocks."""
    lines = text.splitlines(keepends=True)
    return "".join(change(line) if prose else line for line, prose in zip(lines, outside_code(lines)))


def for_doxygen(text: str, page: str, site: set[str], elsewhere: dict[str, str] | None = None) -> str:
    """A page's Markdown as Doxygen 1.9 needs it to render what the code host renders.

    A link to another page of the site stays (with an anchor, it becomes a reference to that
    anchor's label); a link to a page of the other side (`elsewhere`: its path in the kit, and
    its file from this side's folder) leads there; a link to any other file of the kit becomes its path in plain text, since the
    site holds no such file; web links are left alone, and an image is named by its file name alone,
    which Doxygen finds in the side's figures (it shows a path that climbs with `../` as it is). Bold text becomes <b>, because
    Doxygen shows the stars of a `**` that opens on a code span. A heading's code spans become
    plain text, because Doxygen shows the tags of code in a heading as text."""
    def line(text: str) -> str:
        if text.startswith("#"):
            text = _CODE_SPAN.sub(lambda m: m.group(2).strip(), text)
        spans: list[str] = []

        def hide(m: re.Match) -> str:
            spans.append(m.group(0))
            return f"\0{len(spans) - 1}\0"

        def shown(hidden: str) -> str:
            return re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], hidden)

        def link(m: re.Match) -> str:
            label, target = shown(m.group(1)), m.group(2)
            if SCHEME.match(target) or target.startswith(("#", "@")):
                return m.group(0)
            path, _, anchor = target.partition("#")
            rel = os.path.normpath(os.path.join(os.path.dirname(page), path)).replace(os.sep, "/")
            if rel in site:
                return f"[{label}](@ref {anchor})" if anchor else m.group(0)
            if rel in (elsewhere or {}):
                return f"[{label}]({elsewhere[rel]}{'#' + anchor if anchor else ''})"
            if (ROOT / rel).exists():
                return f"`{rel}`" if label.strip("`") == rel else f"{label} (`{rel}`)"
            return m.group(0)  # a link to nothing: the browser check names it

        def image(m: re.Match) -> str:
            target = m.group(1)
            if SCHEME.match(target):
                return m.group(0)
            return m.group(0).replace(f"]({target})", f"]({target.rsplit('/', 1)[-1]})")

        converted = IMAGE.sub(image, LINK.sub(link, _emphasis(_BOLD.sub(r"<b>\1</b>", _global_names(_CODE_SPAN.sub(hide, text))))))

        def code(m: re.Match) -> str:
            wide = m.start() > 0 and not converted[m.start() - 1].isascii()
            return _code(_CODE_SPAN.fullmatch(spans[int(m.group(1))]), wide)

        return re.sub(r"\0(\d+)\0", code, converted)

    return _outside_code(text, line)


def with_help(text: str, exercise: Exercise, lang: str = "en") -> str:
    """The chapter with its hints and its quiz added at the end of "The task", before "After you pass"
    (at the end of a chapter that has neither heading). Both editions keep the English headings'
    anchors, which is how the places are found in a Chinese page."""
    lines = text.splitlines(keepends=True)
    label = f"ch{exercise.id:02d}"
    headings = [(i, line[3:].strip()) for i, (line, prose) in enumerate(zip(lines, outside_code(lines)))
                if prose and line.startswith("## ")]
    at = len(lines)
    after = [i for i, title in headings if title.startswith("After you pass") or f"{{#{label}-after}}" in title]
    task = [i for i, title in headings if title.startswith("The task") or f"{{#{label}-task}}" in title]
    if after:
        at = after[0]
    elif task:
        at = next((i for i, _ in headings if i > task[0]), len(lines))
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines[:at]) + help_section(exercise, lang) + "\n" + "".join(lines[at:])


# The help's own words on each side. The hints and questions themselves come from the catalog and
# the quiz files of the side's language (judge/catalog.zh.toml and chapters/zh/ for the Chinese).
WORDS = {
    "en": {
        "hints": "Hints, stage by stage",
        "hints_intro": "`python3 judge/judge.py hint {id}` gives the next hint for the first test that fails: "
                       "that test's own hints when it has some, then its stage's. "
                       "Every hint is here too, folded so that none is read by accident: each stage's first hint "
                       "names the idea, the second the approach, only the last the code. Open one at a time.",
        "stage": "<b>Stage {n}, {title}.</b>", "goal": " Passing it means: {goal}.",
        "hint": "Hint {i} of {n}: {level}", "for_test": "<i>For the test {test}:</i>",
        "test_hint": "{test}, hint {i} of {n}: {level}",
        "levels": {"concept": "the idea", "approach": "the approach", "code": "the code"},
        "quiz": "Check yourself",
        "quiz_intro": "`python3 judge/judge.py quiz {id}` asks these in the terminal and keeps your "
                      "score. Answer before you unfold.",
        "question": "**Question {n}.**", "answer": "Answer",
    },
    "zh": {
        "hints": "分阶段提示",
        "hints_intro": "`python3 judge/judge.py hint {id}` 给出第一个失败的测试的下一条提示：该测试有自己的提示时先给"
                       "它自己的，然后给它所在阶段的。所有提示也都列在这里，折叠起来，以免无意中读到：每个阶段的第一条"
                       "提示点出思路，第二条给出解法，只有最后一条给出代码。请一次只打开一条。",
        "stage": "<b>第 {n} 阶段，{title}。</b>", "goal": "通过它意味着：{goal}。",
        "hint": "提示 {i}/{n}：{level}", "for_test": "<i>测试 {test} 的提示：</i>",
        "test_hint": "{test}，提示 {i}/{n}：{level}",
        "levels": {"concept": "思路", "approach": "解法", "code": "代码"},
        "quiz": "自测",
        "quiz_intro": "`python3 judge/judge.py quiz {id}` 在终端里逐题提问并记下你的得分。先作答，再展开答案。",
        "question": "**第 {n} 题。**", "answer": "答案",
    },
}


def help_section(exercise: Exercise, lang: str = "en") -> str:
    """The hints, stage by stage and level by level, and the self-check, every answer folded."""
    w = WORDS[lang]
    exercise = translated(exercise, language=lang)
    label = f"ch{exercise.id:02d}"
    out = [f"### {w['hints']} {{#{label}-hints}}\n", w["hints_intro"].format(id=exercise.id) + "\n"]
    for st in exercise.stages:
        goal = w["goal"].format(goal=_text(st.goal)) if st.goal else ""
        out.append(w["stage"].format(n=st.number, title=_text(st.title)) + goal + "\n")
        for i, hint in enumerate(st.stage_hints, start=1):
            level = w["levels"].get(hint.level, hint.level)
            out.append(f"<details><summary>{w['hint'].format(i=i, n=len(st.stage_hints), level=level)}</summary>"
                       f"{_text(hint.text)}</details>\n")
        for test in st.hinted_tests:
            own = st.hints_for(test)
            name = f"{st.suite}.{_text(test)}"
            out.append(w["for_test"].format(test=name) + "\n")
            for i, hint in enumerate(own, start=1):
                level = w["levels"].get(hint.level, hint.level)
                out.append(f"<details><summary>{w['test_hint'].format(test=name, i=i, n=len(own), level=level)}"
                           f"</summary>{_text(hint.text)}</details>\n")
    questions = quiz.load(exercise, exercise.reader_quiz) if exercise.reader_quiz.is_file() else []
    if questions:
        out.append(f"### {w['quiz']} {{#{label}-quiz}}\n")
        out.append(w["quiz_intro"].format(id=exercise.id) + "\n")
        for n, q in enumerate(questions, start=1):
            out.append(f"{w['question'].format(n=n)} {_text(q.ask)}\n")
            if q.choices:
                out.append("".join(f"{i}. {_text(c)}\n" for i, c in enumerate(q.choices, start=1)))
                right = int(q.answer)
                answer = f"{right}, {_text(q.choices[right - 1])}" if 0 < right <= len(q.choices) else str(right)
            else:
                answer = _number(q.answer) + (f" (± {_number(q.tolerance)})" if q.tolerance else "")
            out.append(f"<details><summary>{w['answer']}</summary><b>{answer}</b>. {_text(q.explain)}</details>\n")
    return "\n".join(out)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _text(text: str) -> str:
    """Catalog text as Doxygen Markdown: code spans kept, and outside them the characters Doxygen
    would read as commands, HTML or links escaped."""
    parts, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        parts.append(_escape(text[last:m.start()]))
        parts.append(m.group(0))
        last = m.end()
    parts.append(_escape(text[last:]))
    return "".join(parts)


def _code(span: re.Match, after_wide: bool = False) -> str:
    """A code span as Doxygen shows it faithfully. Doxygen reads a `::` that opens a name, even in
    code, as a request to link to that name, drops the `::` and warns: such a span goes to the page
    as HTML instead. So does a test's name (`Suite.Test`), with a place to break the line after the
    dot, so that a table column of test names can be narrow without breaking a name mid-word. So
    does a span right after a character outside ASCII, as Chinese puts one after its punctuation:
    Doxygen does not always see a span open there (it shows `（`.ci/install`` as text and warns)."""
    code = span.group(2).strip()
    if after_wide:  # a star as an entity: Doxygen ends an \htmlonly block at a "*/"
        return f"\\htmlonly<code>{html.escape(code, quote=False).replace('*', '&#42;')}</code>\\endhtmlonly"
    if _TEST_NAME.fullmatch(code):
        suite, test = code.split(".")
        return f"\\htmlonly<code>{suite}.<wbr/>{test}</code>\\endhtmlonly"
    if _GLOBAL_NAME.search(code):
        return f"\\htmlonly<code>{html.escape(code, quote=False)}</code>\\endhtmlonly"
    return span.group(0)


def _emphasis(text: str) -> str:
    return _WIDE_EMPHASIS.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", text)


def _escape(text: str) -> str:
    return re.sub(r"([\\@<>&#%])", r"\\\1", text)


def _global_names(text: str) -> str:
    """Text with every `::` that opens a name escaped, which Doxygen would otherwise take for a link."""
    return _GLOBAL_NAME.sub(lambda m: "\\" + m.group(0), text)


def docs_command(args, catalog: Catalog) -> bool:
    ok, detail = build_docs(catalog, args.maintainer, args.out)
    if ok:
        out = (args.out or (MAINTAINER_OUT if args.maintainer else OUT)).resolve()
        where, chinese = out / "html" / "index.html", out / "html" / "zh" / "index.html"
        print(f"The {'maintainer' if args.maintainer else 'learner'}'s site is in "
              f"{where.relative_to(ROOT) if where.is_relative_to(ROOT) else where} "
              f"(in Chinese: {chinese.relative_to(ROOT) if chinese.is_relative_to(ROOT) else chinese})")
        return True
    if missing():
        raise UsageError(detail)
    print(detail)
    return False
