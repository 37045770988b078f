"""The Chinese edition beside the English one: each Chinese page names the English text it
follows by its SHA-256, and must keep the English page's skeleton, so that a change to either
shows. A Chinese page is written for its reader, sentence by sentence in its own words, but what a
reader cannot take in other words is the same in both: the headings' levels and anchors, the
code, the inline code, the figures (a figure's Chinese twin, under chapters/figures/zh/, stands
for it), the links out of the kit and the tables' shapes.

The catalog's words (judge/catalog.zh.toml) and the quizzes (chapters/zh/NN-S.quiz.toml) have
their Chinese editions too, held to the same: each exercise's words and each quiz name the English
they follow by a SHA-256, every stage has the same hints (levels, tests, inline code) as the
English, and every quiz the same questions with the same right answers.

`check` runs this through the course linter: a page whose English changed since it was
translated is named as stale, and a difference of skeleton is named with what differs."""
from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..learner import quiz
from ..model.catalog import FORMAT_VERSION, ROOT, ZH, ZH_CATALOG, Catalog, CatalogError, Exercise, shown, words_digest
from .markdown import IMAGE, LINK, SCHEME, outside_code

README_ZH = ROOT / "README.zh.md"
# A figure that carries words has its Chinese twin here, under the English figure's name.
FIGURES = "chapters/figures/"
FIGURES_ZH = "chapters/figures/zh/"
GLOSSARY = ROOT / "docs" / "glossary.md"
FOLLOWS = re.compile(r"^<!-- follows (\S+) sha256:([0-9a-f]{64}) -->$")
QUIZ_FOLLOWS = re.compile(r"^# follows (\S+) sha256:([0-9a-f]{64})$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\{#([A-Za-z0-9_-]+)\}\s*$")
# A code span may run over a line break, never over a blank line.
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)


@dataclass(frozen=True)
class Edition:
    english: Path
    chinese: Path


def editions(catalog: Catalog) -> list[Edition]:
    """Every English page that has a Chinese edition to keep: the README, the chapters and the
    instructors' guide."""
    pages = [Edition(ROOT / "README.md", README_ZH)]
    pages += [Edition(ex.chapter, ZH / ex.chapter.name) for ex in catalog.exercises]
    return pages + [Edition(ROOT / "docs" / "instructors.md", ROOT / "docs" / "zh" / "instructors.md")]


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
    found += catalog_problems(catalog)
    for ex in catalog.exercises:
        if ex.quiz_file.is_file():   # a missing English quiz is the course's problem, reported there
            found += quiz_problems(ex, ZH / ex.quiz_file.name)
    return found + chinese_punctuation_problems()


# Chinese punctuation carries its own space: a space after it is a slip (`显存还回去； SIMD`), and so
# is an ASCII comma between Chinese words (`阶段 1 的 3 条, 阶段 3 的 1 条`).
_SPACE_AFTER = re.compile(r"[，。、：；！？（）「」『』《》][ \t]+(?=[^\s|])")
_ASCII_COMMA = re.compile(r"[\u4e00-\u9fff][ \t]*,[ \t]*[\u4e00-\u9fff]")


def punctuation(text: str) -> list[str]:
    """The slips of Chinese punctuation in `text` (its fenced code blocks left out), each quoted
    with a few characters around it."""
    lines = text.split("\n")
    prose = "\n".join(line for line, outside in zip(lines, outside_code(lines)) if outside)
    found = []
    for pattern, what in ((_SPACE_AFTER, "a space after full-width punctuation"),
                          (_ASCII_COMMA, "an ASCII comma between Chinese words (、 or ，)")):
        for m in pattern.finditer(prose):
            found.append(f"{what}: `{prose[max(m.start() - 6, 0):m.end() + 6].strip()}`")
    return found


def chinese_words() -> dict[str, str]:
    """Every Chinese text the learner reads, by where it is: the pages, the catalog's and the
    quizzes' words, and the judge's own words (its messages, the command line's, the figures')."""
    from ..learner import memory_map, serve
    from ..model import words
    texts = {shown(path): path.read_text(encoding="utf-8")
             for path in [README_ZH, GLOSSARY, *sorted(ZH.glob("*.md")), *sorted(ZH.glob("*.quiz.toml")), ZH_CATALOG,
                          ROOT / "docs" / "zh" / "instructors.md"]
             if path.is_file()}
    tables = {"words.WORDS": {k: zh for k, (_, zh) in words.WORDS.items()}, "words.COMMAND_LINE": words.COMMAND_LINE,
              "words.SERVE_ROWS": words.SERVE_ROWS, "serve.TIMELINE_WORDS": serve.TIMELINE_WORDS["zh"],
              "serve.SWEEP_WORDS": serve.SWEEP_WORDS["zh"], "memory_map.WORDS": memory_map.WORDS["zh"]}
    for table, entries in tables.items():
        for key, value in entries.items():
            for i, text in enumerate(value.values() if isinstance(value, dict) else
                                     value if isinstance(value, tuple) else [value]):
                if isinstance(text, str):
                    texts[f"{table}[{key!r}]" + (f"[{i}]" if not isinstance(value, str) else "")] = text
    return texts


def chinese_punctuation_problems(texts: dict[str, str] | None = None) -> list[str]:
    """A line for each slip of Chinese punctuation in `texts` ({where: text}; every Chinese text
    the learner reads unless told). The TOML files are read as their values, so that a line
    continued with a backslash is judged as the learner reads it."""
    texts = chinese_words() if texts is None else texts
    found = []
    for where, text in texts.items():
        if where.endswith(".toml"):
            try:
                text = "\n".join(_strings(tomllib.loads(text)))
            except tomllib.TOMLDecodeError:
                continue   # reported as unreadable by the catalog's and the quiz's checks
        found += [f"{where}: {p}" for p in punctuation(text)]
    return found


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


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
        found.append(f"stale: {english} changed since it was translated. Bring the changes over (`git log -p "
                     f"{english}` shows them; the SHA-256 it names is that of the version it translates), then put "
                     "the new SHA-256 in its first line")
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


# -- the catalog's words and the quizzes ----------------------------------------------------------

def spans(text: str) -> list[str]:
    """The inline code of a text, sorted: a translated sentence may move it, never change it."""
    return sorted(re.sub(r"\s*\n\s*", " ", m.group(2)) for m in _CODE_SPAN.finditer(text))


def catalog_problems(catalog: Catalog, path: Path = ZH_CATALOG) -> list[str]:
    """How the Chinese catalog falls short of the English one, one line each, naming the file,
    the exercise, the stage and the hint."""
    name = shown(path)
    if not path.is_file():
        return [f"{name} is missing: the Chinese edition of the exercises' titles, summaries, goals and hints "
                "(docs/authoring.md, \"The Chinese edition\", describes it)"]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return [f"{name} cannot be read: {err}"]
    found = []
    if data.get("format_version") != FORMAT_VERSION:
        found.append(f"{name}: format_version must be {FORMAT_VERSION}, as in judge/catalog.toml")
    tables = data.get("exercise", [])
    tables = [t for t in tables if isinstance(t, dict)] if isinstance(tables, list) else []
    by_id = {t.get("id"): t for t in tables}
    known = {ex.id for ex in catalog.exercises}
    for extra in sorted(i for i in by_id if i not in known):
        found.append(f"{name}: [[exercise]] id = {extra!r} names no exercise of judge/catalog.toml: remove it")
    for ex in catalog.exercises:
        table = by_id.get(ex.id)
        if table is None:
            found.append(f"{name}: exercise {ex.id:02d} ({ex.slug}) has no [[exercise]] table: add one with "
                         f"id = {ex.id}, follows = \"sha256:{words_digest(ex)}\" and its words in Chinese")
            continue
        found += [f"{name}: exercise {ex.id:02d} ({ex.slug}){p}" for p in exercise_problems(ex, table)]
    return found


def exercise_problems(ex: Exercise, table: dict) -> list[str]:
    """What differs between an exercise's English words and their translation `table`, each
    line starting with where it is (": ..." or ", stage 2 ...")."""
    found = []
    digest = words_digest(ex)
    if table.get("follows") != f"sha256:{digest}":
        found.append(f": stale: its English words in judge/catalog.toml (title, summary, stages' titles, goals "
                     f"and hints) changed since they were translated, or follows is missing. Bring the changes "
                     f"over, then write follows = \"sha256:{digest}\"")
    for key in ("title", "summary"):
        if getattr(ex, key) and not _filled(table.get(key)):
            found.append(f": no {key} in Chinese: add {key} = \"...\"")
    stages = table.get("stage", [])
    stages = [s for s in stages if isinstance(s, dict)] if isinstance(stages, list) else []
    suites = [s.get("suite") for s in stages]
    if suites != [s.suite for s in ex.stages]:
        return found + [f": its [[exercise.stage]] tables name the suites {suites}, where the English has "
                        f"{[s.suite for s in ex.stages]}: one table per stage, in the same order"]
    for stage, raw in zip(ex.stages, stages):
        where = f", stage {stage.number} ({stage.suite})"
        for key in ("title", "goal"):
            if getattr(stage, key) and not _filled(raw.get(key)):
                found.append(f"{where}: no {key} in Chinese: add {key} = \"...\"")
        if _filled(raw.get("goal")) and spans(raw["goal"]) != spans(stage.goal):
            found.append(f"{where}: its goal's inline code {spans(raw['goal'])} differs from the English's "
                         f"{spans(stage.goal)}: identifiers and commands are the same in both editions")
        hints = raw.get("hints", [])
        if not isinstance(hints, list) or len(hints) != len(stage.hints):
            count = len(hints) if isinstance(hints, list) else 0
            found.append(f"{where}: {count} hint(s) where the English has {len(stage.hints)}: translate each "
                         "English hint, in the same order, with the same level and tests")
            continue
        for number, (en, zh) in enumerate(zip(stage.hints, hints), start=1):
            at = f"{where}, hint {number}"
            if not isinstance(zh, dict):
                found.append(f"{at}: a hint is a table {{ level = ..., text = \"...\" }}")
                continue
            if zh.get("level") != en.level:
                found.append(f"{at}: level {zh.get('level')!r} where the English has {en.level!r}")
            if tuple(zh.get("tests", ())) != en.tests:
                found.append(f"{at}: tests {list(zh.get('tests', ()))} where the English has {list(en.tests)}")
            if not _filled(zh.get("text")):
                found.append(f"{at}: no text in Chinese")
            elif spans(zh["text"]) != spans(en.text):
                found.append(f"{at}: its inline code {spans(zh['text'])} differs from the English's "
                             f"{spans(en.text)}: identifiers and code are the same in both editions")
    return found


def _filled(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def quiz_problems(ex: Exercise, chinese: Path, english: Path | None = None) -> list[str]:
    """How a quiz's Chinese twin falls short of the English (the exercise's quiz unless told):
    its first line names the English file and its SHA-256, and it asks the same questions (the
    same number, choices and inline code) with the same right answers, so that a score is the
    same score in either language."""
    english = english or ex.quiz_file
    name, source = shown(chinese), english.relative_to(ROOT).as_posix()
    line = f"# follows {source} sha256:{digest(english)}"
    if not chinese.is_file():
        return [f"{name} is missing: {source} has no Chinese edition (its first line: {line})"]
    first = chinese.read_text(encoding="utf-8").split("\n", 1)[0]
    follows = QUIZ_FOLLOWS.match(first)
    found = []
    if not follows or follows.group(1) != source:
        found.append(f"{name}: its first line must name the English quiz it follows: {line}")
    elif follows.group(2) != digest(english):
        found.append(f"{name}: stale: {source} changed since it was translated. Bring the changes over, then "
                     f"make its first line {line}")
    found += quiz.problems(ex, chinese)
    try:
        en, zh = quiz.load(ex, english), quiz.load(ex, chinese)
    except CatalogError:
        return found   # the English is the course's to report, the Chinese is reported above
    if len(en) != len(zh):
        return found + [f"{name}: {len(zh)} questions where the English has {len(en)}: translate each, in order"]
    for number, (a, b) in enumerate(zip(en, zh), start=1):
        at = f"{name}, question {number}"
        if len(a.choices) != len(b.choices):
            found.append(f"{at}: {len(b.choices)} choices where the English has {len(a.choices)}")
        if (a.answer, a.tolerance) != (b.answer, b.tolerance):
            found.append(f"{at}: answer = {quiz._number(b.answer)}"
                         f"{f' (tolerance {quiz._number(b.tolerance)})' if b.tolerance else ''} where the English "
                         f"has {quiz._number(a.answer)}{f' (tolerance {quiz._number(a.tolerance)})' if a.tolerance else ''}"
                         ": the right answer is the same in both editions")
        theirs = spans(" ".join((a.ask, *a.choices, a.explain)))
        ours = spans(" ".join((b.ask, *b.choices, b.explain)))
        if theirs != ours:
            found.append(f"{at}: its inline code {ours} differs from the English's {theirs}")
    return found
