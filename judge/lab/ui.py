"""Terminal output: colour only on a terminal, and never when NO_COLOR is set."""
from __future__ import annotations

import os
import sys

_CODES = {"green": "32", "red": "31", "yellow": "33", "dim": "2", "bold": "1", "cyan": "36"}


def colour_enabled(stream=sys.stdout) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


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


def bar(done: int, total: int, width: int = 24) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total}"
