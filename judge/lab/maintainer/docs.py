"""`docs`: the site a learner reads, rendered with Doxygen: the README as the main page, one page
per chapter with its hints and its self-check folded in after the task, and the exercises'
contracts (the skeletons' doc comments). The reference solutions are not in it; the
maintainer's site (`docs --maintainer`) documents them instead, with their sources.

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
from pathlib import Path

from . import browser
from .markdown import LINK, SCHEME, outside_code
from ..core import process
from ..core.build import BUILD_ROOT
from ..learner import quiz
from ..model.catalog import ROOT, Catalog, CatalogError, Exercise
from ..model.errors import UsageError

OUT = BUILD_ROOT / "docs"
MAINTAINER_OUT = BUILD_ROOT / "docs-maintainer"
THEME = Path("/usr/share/doxygen-awesome-css")
# A picture of a chapter page as the browser check saw it, for people to look at.
SCREENSHOT = OUT / "chapter.png"

_LEVEL_NAMES = {"concept": "the idea", "approach": "the approach", "code": "the code"}
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_GLOBAL_NAME = re.compile(r"(?<![\w>)\]])::\w")
_TEST_NAME = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
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


def build_docs(catalog: Catalog, maintainer: bool = False, out: Path | None = None) -> tuple[bool, str]:
    """Builds the site into out/html; any Doxygen warning is a failure. Returns (ok, what went wrong)."""
    if missing():
        return False, missing()
    out = (out or (MAINTAINER_OUT if maintainer else OUT)).resolve()
    try:
        inputs = stage(catalog, out / "src", maintainer)
    except (CatalogError, OSError) as err:
        return False, f"cannot prepare the pages: {err}"
    shutil.rmtree(out / "html", ignore_errors=True)  # a page of an earlier build must not linger
    config = out / "Doxyfile"
    config.write_text(_config(out, inputs, maintainer), encoding="utf-8")
    result = process.run(["doxygen", str(config)], cwd=ROOT, timeout=300, keep_bytes=100_000)
    warnings = result.stderr.text().strip()
    if result.returncode != 0 or warnings:
        return False, warnings or result.stdout.text()[-2000:] or f"doxygen exited with {result.returncode}"
    _figures_as_images(out / "html")
    leaked = sorted(s for s in documented_sources(out / "html") if s.startswith("solutions/"))
    if leaked and not maintainer:
        return False, f"the learner's site documents the reference solutions: {', '.join(leaked)}"
    return True, ""


def check_in_browser(catalog: Catalog, out: Path = OUT) -> tuple[bool, str]:
    """Loads every page of a built site in headless chromium; keeps a screenshot of the first chapter."""
    if not browser.executable():
        return False, "chromium is not installed: sudo apt-get install chromium"
    chapter = f"ch{catalog.exercises[0].id:02d}.html" if catalog.exercises else "index.html"
    try:
        problems = browser.check_site(out / "html", screenshot=(chapter, out / SCREENSHOT.name))
    except browser.BrowserError as err:
        return False, f"the browser check could not run: {err}"
    return not problems, "\n".join(problems)


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

def stage(catalog: Catalog, src: Path, maintainer: bool) -> list[Path]:
    """Writes the site's Markdown pages into src and returns every input Doxygen reads, in the order
    the site lists them: the README, the chapters, the instructors' guide (and the maintainers'),
    then the headers."""
    shutil.rmtree(src, ignore_errors=True)
    pages = ["README.md"] + [ex.chapter.relative_to(ROOT).as_posix() for ex in catalog.exercises]
    pages.append("docs/instructors.md")
    if maintainer:
        pages.append("docs/authoring.md")
    chapters = {ex.chapter.relative_to(ROOT).as_posix(): ex for ex in catalog.exercises}
    inputs = []
    for page in pages:
        text = (ROOT / page).read_text(encoding="utf-8")
        if page in chapters:
            text = with_help(text, chapters[page])
        staged = src / page
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_text(for_doxygen(text, page, set(pages)), encoding="utf-8")
        inputs.append(staged)
    headers = [ex.solution_file if maintainer else ex.exercise_file for ex in catalog.exercises]
    return inputs + headers


def _config(out: Path, inputs: list[Path], maintainer: bool) -> str:
    quoted = " \\\n    ".join(f'"{p}"' for p in inputs)
    header_dirs = " ".join(f'"{p.parent}"' for p in inputs if p.suffix == ".hpp")
    sources = "YES" if maintainer else "NO"
    figures = ROOT / "chapters" / "figures"
    return (f'@INCLUDE = "{ROOT / "docs" / "Doxyfile"}"\n'
            f'OUTPUT_DIRECTORY = "{out}"\n'
            f'INPUT = {quoted}\n'
            f'USE_MDFILE_AS_MAINPAGE = "{inputs[0]}"\n'
            f'STRIP_FROM_PATH = "{out / "src"}" "{ROOT}"\n'
            f'STRIP_FROM_INC_PATH = {header_dirs}\n'
            f'SOURCE_BROWSER = {sources}\n'
            f'VERBATIM_HEADERS = {sources}\n' +
            (f'IMAGE_PATH = "{figures}"\n' if figures.is_dir() else ""))


def _outside_code(text: str, change) -> str:
    """Applies change() to every line outside fenced code blocks."""
    lines = text.splitlines(keepends=True)
    return "".join(change(line) if prose else line for line, prose in zip(lines, outside_code(lines)))


def for_doxygen(text: str, page: str, site: set[str]) -> str:
    """A page's Markdown as Doxygen 1.9 needs it to render what the code host renders.

    A link to another page of the site stays (with an anchor, it becomes a reference to that
    anchor's label); a link to any other file of the kit becomes its path in plain text, since the
    site holds no such file; web links and images are left alone. Bold text becomes <b>, because
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
            if (ROOT / rel).exists():
                return f"`{rel}`" if label.strip("`") == rel else f"{label} (`{rel}`)"
            return m.group(0)  # a link to nothing: the browser check names it

        converted = LINK.sub(link, _BOLD.sub(r"<b>\1</b>", _global_names(_CODE_SPAN.sub(hide, text))))
        return re.sub(r"\0(\d+)\0", lambda m: _code(_CODE_SPAN.fullmatch(spans[int(m.group(1))])), converted)

    return _outside_code(text, line)


def with_help(text: str, exercise: Exercise) -> str:
    """The chapter with its hints and its quiz added at the end of "The task", before "After you pass"
    (at the end of a chapter that has neither heading)."""
    lines = text.splitlines(keepends=True)
    headings = [(i, line[3:].strip()) for i, (line, prose) in enumerate(zip(lines, outside_code(lines)))
                if prose and line.startswith("## ")]
    at = len(lines)
    after = [i for i, title in headings if title.startswith("After you pass")]
    task = [i for i, title in headings if title.startswith("The task")]
    if after:
        at = after[0]
    elif task:
        at = next((i for i, _ in headings if i > task[0]), len(lines))
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines[:at]) + help_section(exercise) + "\n" + "".join(lines[at:])


def help_section(exercise: Exercise) -> str:
    """The hints, stage by stage and level by level, and the self-check, every answer folded."""
    label = f"ch{exercise.id:02d}"
    out = [f"### Hints, stage by stage {{#{label}-hints}}\n",
           f"`python3 judge/judge.py hint {exercise.id}` gives the next hint for the first test that fails: "
           "that test's own hints when it has some, then its stage's. "
           "Every hint is here too, folded so that none is read by accident: each stage's first hint names "
           "the idea, the second the approach, only the last the code. Open one at a time.\n"]
    for st in exercise.stages:
        goal = f" Passing it means: {_text(st.goal)}." if st.goal else ""
        out.append(f"<b>Stage {st.number}, {_text(st.title)}.</b>{goal}\n")
        for i, hint in enumerate(st.stage_hints, start=1):
            level = _LEVEL_NAMES.get(hint.level, hint.level)
            out.append(f"<details><summary>Hint {i} of {len(st.stage_hints)}: {level}</summary>"
                       f"{_text(hint.text)}</details>\n")
        for test in st.hinted_tests:
            own = st.hints_for(test)
            out.append(f"<i>For the test {st.suite}.{_text(test)}:</i>\n")
            for i, hint in enumerate(own, start=1):
                level = _LEVEL_NAMES.get(hint.level, hint.level)
                out.append(f"<details><summary>{st.suite}.{_text(test)}, hint {i} of {len(own)}: {level}</summary>"
                           f"{_text(hint.text)}</details>\n")
    questions = quiz.load(exercise) if exercise.quiz_file.is_file() else []
    if questions:
        out.append(f"### Check yourself {{#{label}-quiz}}\n")
        out.append(f"`python3 judge/judge.py quiz {exercise.id}` asks these in the terminal and keeps your "
                   "score. Answer before you unfold.\n")
        for n, q in enumerate(questions, start=1):
            out.append(f"**Question {n}.** {_text(q.ask)}\n")
            if q.choices:
                out.append("".join(f"{i}. {_text(c)}\n" for i, c in enumerate(q.choices, start=1)))
                right = int(q.answer)
                answer = f"{right}, {_text(q.choices[right - 1])}" if 0 < right <= len(q.choices) else str(right)
            else:
                answer = _number(q.answer) + (f" (± {_number(q.tolerance)})" if q.tolerance else "")
            out.append(f"<details><summary>Answer</summary><b>{answer}</b>. {_text(q.explain)}</details>\n")
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


def _code(span: re.Match) -> str:
    """A code span as Doxygen shows it faithfully. Doxygen reads a `::` that opens a name, even in
    code, as a request to link to that name, drops the `::` and warns: such a span goes to the page
    as HTML instead. So does a test's name (`Suite.Test`), with a place to break the line after the
    dot, so that a table column of test names can be narrow without breaking a name mid-word."""
    code = span.group(2).strip()
    if _TEST_NAME.fullmatch(code):
        suite, test = code.split(".")
        return f"\\htmlonly<code>{suite}.<wbr/>{test}</code>\\endhtmlonly"
    if _GLOBAL_NAME.search(code):
        return f"\\htmlonly<code>{html.escape(code, quote=False)}</code>\\endhtmlonly"
    return span.group(0)


def _escape(text: str) -> str:
    return re.sub(r"([\\@<>&#%])", r"\\\1", text)


def _global_names(text: str) -> str:
    """Text with every `::` that opens a name escaped, which Doxygen would otherwise take for a link."""
    return _GLOBAL_NAME.sub(lambda m: "\\" + m.group(0), text)


def docs_command(args, catalog: Catalog) -> bool:
    ok, detail = build_docs(catalog, args.maintainer, args.out)
    if ok:
        out = (args.out or (MAINTAINER_OUT if args.maintainer else OUT)).resolve()
        where = out / "html" / "index.html"
        print(f"The {'maintainer' if args.maintainer else 'learner'}'s site is in "
              f"{where.relative_to(ROOT) if where.is_relative_to(ROOT) else where}")
        return True
    if missing():
        raise UsageError(detail)
    print(detail)
    return False
