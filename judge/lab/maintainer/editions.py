"""The Chinese edition beside the English one: each Chinese page names the English text it
follows by its SHA-256, and must keep the English page's skeleton, so that a change to either
shows. A Chinese page is written for its reader, sentence by sentence in its own words, but what a
reader cannot take in other words is the same in both: the headings' levels and anchors, the
code, the inline code, the figures (a figure's Chinese twin, under chapters/figures/zh/, stands
for it), the links out of the kit and the tables' shapes.

`check` runs this through the course linter: a page whose English changed since it was
translated is named as stale, and a difference of skeleton is named with what differs."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..model.catalog import ROOT, Catalog, shown
from .markdown import IMAGE, LINK, SCHEME, outside_code

ZH = ROOT / "chapters" / "zh"
README_ZH = ROOT / "README.zh.md"
# A figure that carries words has its Chinese twin here, under the English figure's name.
FIGURES = "chapters/figures/"
FIGURES_ZH = "chapters/figures/zh/"
GLOSSARY = ROOT / "docs" / "glossary.md"
FOLLOWS = re.compile(r"^<!-- follows (\S+) sha256:([0-9a-f]{64}) -->$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\{#([A-Za-z0-9_-]+)\}\s*$")
# A code span may run over a line break, never over a blank line.
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)


@dataclass(frozen=True)
class Edition:
    english: Path
    chinese: Path


def editions(catalog: Catalog) -> list[Edition]:
    """Every English page that has a Chinese edition to keep: the README and the chapters."""
    pages = [Edition(ROOT / "README.md", README_ZH)]
    pages += [Edition(ex.chapter, ZH / ex.chapter.name) for ex in catalog.exercises]
    return pages


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def problems(catalog: Catalog) -> list[str]:
    """What is missing, stale or different in the Chinese edition, one line each."""
    found = [] if GLOSSARY.is_file() else [f"{shown(GLOSSARY)} is missing: the Chinese pages follow its terms"]
    for page in editions(catalog):
        if not page.chinese.is_file():
            found.append(f"{shown(page.chinese)} is missing: {shown(page.english)} has no Chinese edition")
            continue
        found += [f"{shown(page.chinese)}: {p}" for p in page_problems(page)]
    return found


def page_problems(page: Edition) -> list[str]:
    zh = page.chinese.read_text(encoding="utf-8")
    en = page.english.read_text(encoding="utf-8")
    first = zh.split("\n", 1)[0]
    follows = FOLLOWS.match(first)
    english = page.english.relative_to(ROOT).as_posix()
    if not follows:
        return [f"its first line must name the English text it follows: <!-- follows {english} sha256:<its SHA-256> -->"]
    found = []
    if follows.group(1) != english:
        found.append(f"it says it follows {follows.group(1)}, not {english}")
    elif follows.group(2) != digest(page.english):
        found.append(f"stale: {english} changed since it was translated. Bring the changes over (`git diff` of "
                     f"{english} since the commit whose SHA-256 it names), then put the new SHA-256 in its first line")
    chinese = skeleton(zh, page.chinese)
    found += skeleton_problems(skeleton(en, page.english), chinese)
    found += [f"it shows {f}, which has a Chinese twin: show {twin(f)}" for f in chinese.figures
              if f.startswith(FIGURES) and not f.startswith(FIGURES_ZH) and (ROOT / twin(f)).is_file()]
    return found


def twin(figure: str) -> str:
    """The Chinese twin of an English figure, as a path from the kit's root."""
    return FIGURES_ZH + figure.removeprefix(FIGURES)


def english(figure: str) -> str:
    """The English figure a Chinese page's figure stands for: itself, or the one it is the twin of."""
    return FIGURES + figure.removeprefix(FIGURES_ZH) if figure.startswith(FIGURES_ZH) else figure


@dataclass
class Skeleton:
    headings: list[tuple[int, str]]   # (level, explicit anchor or "")
    code_blocks: list[str]
    code_spans: list[str]             # in prose, sorted: a sentence may move them
    figures: list[str]                # the images' files, as paths from the kit's root
    links_out: list[str]              # links that leave the kit, sorted
    tables: list[tuple[int, int]]     # (rows, columns) of each table


def skeleton(text: str, path: Path) -> Skeleton:
    lines = text.splitlines()
    prose = outside_code(lines)
    s = Skeleton([], [], [], [], [], [])
    text_of_prose = "\n".join(line if outside else "" for line, outside in zip(lines, prose))
    s.code_spans = sorted(re.sub(r"\s*\n\s*", " ", m.group(2)) for m in _CODE_SPAN.finditer(text_of_prose))
    without_code = _CODE_SPAN.sub("", text_of_prose)
    s.figures = [_from_root(path, m.group(1)) for m in IMAGE.finditer(without_code)]
    s.links_out = sorted(m.group(2) for m in LINK.finditer(without_code) if SCHEME.match(m.group(2)))
    block: list[str] = []
    table = None
    for line, outside in zip(lines, prose):
        if not outside:
            block.append(line)
            continue
        if block:
            s.code_blocks.append("\n".join(block))
            block = []
        if line.lstrip().startswith("|"):
            cells = line.strip().strip("|").split("|")
            table = (table[0] + 1, table[1]) if table else (1, len(cells))
            continue
        if table:
            s.tables.append(table)
            table = None
        heading = _HEADING.match(line)
        if heading:
            anchor = _ANCHOR.search(heading.group(2))
            s.headings.append((len(heading.group(1)), anchor.group(1) if anchor else ""))
    if block:
        s.code_blocks.append("\n".join(block))
    if table:
        s.tables.append(table)
    return s


def _from_root(page: Path, target: str) -> str:
    if SCHEME.match(target):
        return target
    return (page.parent / target).resolve().relative_to(ROOT.resolve()).as_posix() \
        if (page.parent / target).resolve().is_relative_to(ROOT.resolve()) else target


def skeleton_problems(en: Skeleton, zh: Skeleton) -> list[str]:
    found = []
    if [h[0] for h in en.headings] != [h[0] for h in zh.headings]:
        found.append(f"its headings differ from the English's in number or level ({len(zh.headings)} against "
                     f"{len(en.headings)}): each section must have its twin, at the same level and place")
    elif [h[1] for h in en.headings] != [h[1] for h in zh.headings]:
        wrong = next(i for i, (a, b) in enumerate(zip(en.headings, zh.headings)) if a[1] != b[1])
        found.append(f"heading {wrong + 1} has the anchor {zh.headings[wrong][1] or '(none)'!r} where the English has "
                     f"{en.headings[wrong][1] or '(none)'!r}: links to a section must reach it in both editions")
    if en.code_blocks != zh.code_blocks:
        wrong = next((i for i, (a, b) in enumerate(zip(en.code_blocks, zh.code_blocks)) if a != b),
                     min(len(en.code_blocks), len(zh.code_blocks)))
        found.append(f"code block {wrong + 1} differs from the English's ({len(zh.code_blocks)} blocks against "
                     f"{len(en.code_blocks)}): code and contracts are the same byte for byte in both editions")
    if en.code_spans != zh.code_spans:
        missing = sorted(set(en.code_spans) - set(zh.code_spans))[:3]
        extra = sorted(set(zh.code_spans) - set(en.code_spans))[:3]
        found.append("its inline code differs from the English's: identifiers and commands are the same in both "
                     "editions" + (f"; missing {missing}" if missing else "") + (f"; not in the English {extra}" if extra else "")
                     + ("" if missing or extra else "; some appear a different number of times"))
    if en.figures != [english(f) for f in zh.figures]:
        found.append(f"its figures differ from the English's (a twin in {FIGURES_ZH} stands for the English "
                     f"figure of its name): {zh.figures} against {en.figures}")
    if en.links_out != zh.links_out:
        missing = sorted(set(en.links_out) - set(zh.links_out))[:3]
        found.append("its links out of the kit differ from the English's: every source is cited in both editions"
                     + (f"; missing {missing}" if missing else ""))
    if en.tables != zh.tables:
        found.append(f"its tables differ in shape from the English's (rows, columns): {zh.tables} against {en.tables}")
    return found
