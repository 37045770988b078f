"""The course's shape, as `check` enforces it: every chapter in three parts under the same
level-2 headings, in order; nothing before "After you pass" that names the known mistakes; a
quiz beside every chapter. Each problem is one line (lint.validate reports them)."""
from __future__ import annotations

import re

from ..learner import quiz
from .markdown import outside_code
from ..model.catalog import CHAPTER_PARTS, Exercise, shown
from .mistakes import mistakes

PARTS = CHAPTER_PARTS
AFTER = PARTS[-1]

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{#[^}]*\})?\s*$")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
# A table header that announces the mistakes and the tests that catch them.
_MISTAKE_TABLE_RE = re.compile(r"mistake|pitfall|caught by", re.IGNORECASE)


def problems(exercise: Exercise) -> list[str]:
    found = quiz.problems(exercise)
    if exercise.chapter.is_file():  # a missing chapter is the catalog's problem, reported there
        text = exercise.chapter.read_text(encoding="utf-8")
        found = chapter_problems(text, [m.name for m in mistakes(exercise)], shown(exercise.chapter)) + found
    return found


def _outside_code(text: str) -> list[tuple[int, str]]:
    """The chapter's lines, numbered from 1, without those of fenced code blocks."""
    lines = text.splitlines()
    return [(number, line) for number, (line, prose) in enumerate(zip(lines, outside_code(lines)), start=1) if prose]


def chapter_problems(text: str, mistake_names: list[str], where: str) -> list[str]:
    lines = _outside_code(text)
    parts = []  # (line number, title) of each level-2 heading
    for number, line in lines:
        heading = _HEADING_RE.match(line)
        if heading and len(heading.group(1)) == 2:
            parts.append((number, heading.group(2)))
    titles = [title for _, title in parts]
    found = []
    for part in PARTS:
        if titles.count(part) != 1:
            found.append(f'{where}: {"no" if part not in titles else "more than one"} "## {part}" heading '
                         f'(every chapter has the parts {_quoted(PARTS)}, in this order)')
    present = [t for t in titles if t in PARTS]
    if len(present) == len(PARTS) and present != list(PARTS):
        found.append(f"{where}: the parts come in the order {_quoted(present)}; they must come in the order "
                     f"{_quoted(PARTS)}")
    after = next((n for n, t in parts if t == AFTER), None)
    if after is not None:
        following = next((line for n, line in lines if n > after and line.strip()), "")
        if not following.lstrip().startswith(">"):
            found.append(f'{where}:{after}: "## {AFTER}" must open with a quote block that tells the learner to '
                         "stop reading until every stage passes")
    before = [(n, line) for n, line in lines if after is None or n < after]
    for (number, line), (_, rule) in zip(before, before[1:]):
        if line.lstrip().startswith("|") and _TABLE_RULE_RE.match(rule) and _MISTAKE_TABLE_RE.search(line):
            found.append(f'{where}:{number}: a table of mistakes comes before "## {AFTER}" ({line.strip()[:60]}); '
                         "it spoils the exercise: move it after")
    for name in mistake_names:
        pattern = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)
        hit = next((n for n, line in before if pattern.search(line)), None)
        if hit is not None:
            found.append(f'{where}:{hit}: names the known mistake "{name}" before "## {AFTER}"; it spoils the '
                         "exercise: move it after")
    return found


def _quoted(titles) -> str:
    return ", ".join(f'"{t}"' for t in titles)
