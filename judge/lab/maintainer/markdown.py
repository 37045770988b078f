"""Markdown as the course writes it, read the one way the course linter and the docs build
both need: which lines are prose and which belong to a fenced code block."""
from __future__ import annotations

import re

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")   # [label](target), not an image
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")           # ![caption](target)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")           # a target that leaves the kit (https:, mailto:)


def outside_code(lines: list[str]) -> list[bool]:
    """For each line, whether it lies outside every fenced code block (a fence's own lines are
    inside it). A block closes at a fence of the same kind as the one that opened it."""
    flags, fence = [], None
    for line in lines:
        if fence is None:
            opened = FENCE.match(line)
            fence = opened.group(1) if opened else None
            flags.append(opened is None)
        else:
            if line.strip().startswith(fence):
                fence = None
            flags.append(False)
    return flags
