"""Terminal output: colour only on a terminal, and never when NO_COLOR is set."""
from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
import unicodedata

_CODES = {"green": "32", "red": "31", "yellow": "33", "dim": "2", "bold": "1", "cyan": "36"}


def is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):   # no such method, or a closed stream
        return False


def colour_enabled(stream=sys.stdout) -> bool:
    return is_terminal(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, colour: str) -> str:
    if not colour_enabled():
        return text
    return f"\033[{_CODES[colour]}m{text}\033[0m"


OK = "✓"
FAIL = "✗"
SKIP = "·"


def mark(ok: bool) -> str:
    return paint(OK, "green") if ok else paint(FAIL, "red")


def indent(text: str, prefix: str = "      ", max_lines: int = 14, more: str = "-v shows them") -> str:
    """`text` with `prefix` before every line, cut after `max_lines`; `more` says how to see the
    rest, where the command has a way."""
    lines = text.splitlines() or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"[... {len(lines) - max_lines} more lines" + (f"; {more}]" if more else "]")]
    return "\n".join(prefix + line for line in lines)


def columns(text: str) -> int:
    """How many terminal columns `text` takes: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cut(text: str, width: int) -> str:
    """`text` cut to `width` terminal columns, with … where it was cut."""
    if columns(text) <= width:
        return text
    kept, used = [], 0
    for c in text:
        used += columns(c)
        if used > width - 1:
            break
        kept.append(c)
    return "".join(kept) + "…"


def pad(text: str, width: int) -> str:
    return text + " " * max(width - columns(text), 0)


_TOKEN = re.compile(r"\s+|[\u2e80-\uffff]|[^\s\u2e80-\uffff]+")


def wrap(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> str:
    """textwrap.fill by terminal columns: Chinese has no spaces to break at and its characters
    are two columns wide, so a line breaks between any two of them (never before a closing
    punctuation mark, nor after an opening one)."""
    if text.isascii():
        return textwrap.fill(text, width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
                             break_on_hyphens=False)   # `copy-on-write` is one word
    lines, line, space = [], initial_indent, False
    for token in _TOKEN.findall(text):
        if token.isspace():
            space = line.strip() != ""
            continue
        gap = " " if space else ""
        if (columns(line + gap + token) > width and line.strip() and token not in "，。、：；！？）」』》】”’"
                and not line.endswith(tuple("（「『《【“‘"))):
            lines.append(line)
            line, gap = subsequent_indent, ""
        line += gap + token
        space = False
    return "\n".join(lines + [line])


def bar(done: int, total: int, width: int = 24) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total}"


class ProgressLine:
    """One line redrawn in place at the foot of a terminal (a bar, a status), cut to the
    terminal's width so that it stays one line, and wiped by `clear` (and at the end of a `with`)
    before anything else is written. Where the stream is no terminal (a pipe, a log, CI) nothing
    is redrawn: `draw` prints its `plain` text instead, when it has one, as a line of its own on
    `log` (the stream itself unless told)."""

    def __init__(self, label: str = "", stream=None, live: bool | None = None, log=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.live = is_terminal(self.stream) if live is None else live
        self.log = log if log is not None else self.stream
        self.drawn = False
        self.last: tuple[int, int] | None = None   # what `show` last counted

    def draw(self, text: str, plain: str = "") -> None:
        if self.live:
            # Counted in columns, not characters: a Chinese line is twice as wide as its length,
            # and a line wider than the terminal wraps and is never redrawn in place.
            text = cut(text, max(shutil.get_terminal_size((100, 24)).columns - 1, 11))
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
            self.drawn = True
        elif plain:
            print(plain, file=self.log, flush=True)

    def show(self, done: int, total: int, note: str = "", plain: str = "") -> None:
        """The label, a bar of `done` out of `total`, and `note` after it."""
        self.last = (done, total)
        self.draw(f"{self.label} {bar(done, total)}{note}", plain)

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False

    def __enter__(self) -> "ProgressLine":
        return self

    def __exit__(self, *exc) -> None:
        self.clear()
