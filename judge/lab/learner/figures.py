"""What the judge's figures share: one palette, in which a colour means one thing in every
figure (the caching allocator's allocated bytes are the same green in `serve`'s timeline and in
`bench`'s memory map), and the pieces every figure is drawn with: the document on its white
background, axes with round ticks, series, legends and lines of text. The figures themselves
stay with what they show (serve's timeline and sweep, memory_map's map); this module draws no
figure of its own and knows nothing of the judge."""
from __future__ import annotations

import math
from html import escape

MiB = 1 << 20

# Ink, never data.
PAPER, INK, MUTED, GRID = "#ffffff", "#111827", "#4b5563", "#d1d5db"

# One colour per thing shown. chapters/07-serving-engine.md names the KV blocks' colours in words
# (blue, amber, grey): change them there too.
RUNNING = "#2563eb"     # KV blocks held by running requests
CACHED = "#f59e0b"      # KV blocks cached for their prefix, held by no request
FREE = "#e5e7eb"        # free memory kept for reuse: a pool's free KV blocks, the allocator's free blocks
ALLOCATED = "#059669"   # bytes the caching allocator handed out
RESERVED = "#7c3aed"    # bytes the caching allocator holds from the device
PENDING = "#f472b6"     # blocks freed but waiting for another stream's events
BATCH = INK             # the requests in a step: a line over the blocks, as dark as the text
PREEMPTED = "#dc2626"   # a request preempted
MANAGERS = {"reserve": "#57534e", "paged": "#0891b2", "prefix": "#c2410c",
            "virtual": "#7c3aed"}   # the block managers, side by side


def mib(n: float) -> str:
    """`3 MiB`, `0.5 MiB`, `1,234 MiB`: whole MiB as they are, others to a tenth below 100."""
    if n % MiB == 0:
        return f"{int(n) // MiB:,} MiB"
    return f"{n / MiB:,.0f} MiB" if n >= 100 * MiB else f"{n / MiB:.1f} MiB"


def nice(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(top / step - 1e-9) + 1)]


def label(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def buckets(n: int, most: int) -> list[range]:
    """Indices 0..n grouped so that no more than `most` points are drawn (one a pixel)."""
    if n <= most:
        return [range(i, i + 1) for i in range(n)]
    edges = [round(i * n / most) for i in range(most + 1)]
    return [range(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def document(width: float, height: float, title: str, subtitle: str, body: list[str]) -> str:
    """A standalone SVG document on a white background, its title and subtitle at the top left."""
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" font-family="sans-serif"><rect width="100%" height="100%" fill="{PAPER}"/>'
            f'<text x="20" y="30" font-size="17" font-weight="bold" fill="{INK}">{escape(title)}</text>')
    if subtitle:
        head += f'<text x="20" y="52" font-size="12" fill="{MUTED}">{escape(subtitle)}</text>'
    return head + "\n" + "\n".join(body) + "\n</svg>\n"


def heading(x: float, y: float, text: str, size: int = 13) -> str:
    return f'<text x="{x}" y="{y}" font-size="{size}" font-weight="bold" fill="{INK}">{escape(text)}</text>'


class Plot:
    """A rectangle of the figure, `left`..`right` across and `top`..`top + height` down, whose
    values run from 0 at the bottom to the last of its `ticks` at the top."""

    def __init__(self, left: float, right: float, top: float, height: float, ticks: list[float]):
        self.left, self.right, self.top, self.height, self.ticks = left, right, top, height, ticks

    def y(self, value: float) -> float:
        return self.top + self.height - self.height * value / self.ticks[-1]

    def grid(self) -> str:
        return "\n".join(f'<line x1="{self.left}" y1="{self.y(v):.1f}" x2="{self.right}" y2="{self.y(v):.1f}" '
                         f'stroke="{GRID}" stroke-width="0.6"/>' for v in self.ticks)

    def axis(self, name: str, side: str = "left", colour: str = INK, edge: float = 20) -> str:
        """The tick values beside the plot, and the axis's name turned along it at x = `edge`
        (20 for the left axis; for the right one, the figure's width less 20)."""
        left = side == "left"
        tx = self.left - 6 if left else self.right + 6
        anchor = "end" if left else "start"
        parts = [f'<text x="{tx}" y="{self.y(v) + 4:.1f}" font-size="11" fill="{MUTED}" text-anchor="{anchor}">'
                 f"{label(v)}</text>" for v in self.ticks]
        if name:
            cy = self.top + self.height / 2
            parts.append(f'<text x="{edge}" y="{cy:.1f}" font-size="12" fill="{colour}" text-anchor="middle" '
                         f'transform="rotate({-90 if left else 90} {edge} {cy:.1f})">{escape(name)}</text>')
        return "\n".join(parts)

    def frame(self) -> str:
        return (f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" height="{self.height}" '
                f'fill="none" stroke="{MUTED}"/>')

    def x_ticks(self, ticks: list[tuple[float, str]]) -> str:
        """Ticks under the plot, each (x, its label)."""
        bottom = self.top + self.height
        return "\n".join(f'<line x1="{px:.1f}" y1="{bottom}" x2="{px:.1f}" y2="{bottom + 5}" stroke="{MUTED}"/>'
                         f'<text x="{px:.1f}" y="{bottom + 18}" font-size="11" fill="{MUTED}" '
                         f'text-anchor="middle">{escape(text)}</text>' for px, text in ticks)

    def x_name(self, name: str) -> str:
        return (f'<text x="{(self.left + self.right) / 2}" y="{self.top + self.height + 36}" font-size="12" '
                f'fill="{INK}" text-anchor="middle">{escape(name)}</text>')


def band(points: list[tuple[float, float, float]], half: float, colour: str, name: str,
         opacity: float = 1.0) -> str:
    """The area between two series as one polygon, each column `half` pixels either side of its
    x: `points` are (x, the upper y, the lower y)."""
    top = [p for x, upper, _ in points for p in ((x - half, upper), (x + half, upper))]
    bottom = [p for x, _, lower in reversed(points) for p in ((x + half, lower), (x - half, lower))]
    drawn = " ".join(f"{px:.1f},{py:.1f}" for px, py in top + bottom)
    return (f'<polygon class="series" data-series="{escape(name)}" points="{drawn}" fill="{colour}" '
            f'fill-opacity="{opacity:g}" stroke="none"><title>{escape(name)}</title></polygon>')


def steps(points: list[tuple[float, float]], half: float, colour: str, name: str, width: float) -> str:
    """A series as steps, level across each column, as a band is."""
    drawn = " ".join(f"{x - half:.1f},{y:.1f} {x + half:.1f},{y:.1f}" for x, y in points)
    return (f'<polyline class="series" data-series="{escape(name)}" points="{drawn}" fill="none" '
            f'stroke="{colour}" stroke-width="{width:g}" stroke-linejoin="round"><title>{escape(name)}</title>'
            "</polyline>")


def swatch(kind: str, x: float, y: float, colour: str) -> str:
    """A legend's sample, 14 pixels wide and 12 high from (x, y): a rectangle of fill, a line or a
    mark (the triangle that marks an event)."""
    if kind == "rect":
        return f'<rect x="{x}" y="{y}" width="14" height="12" fill="{colour}" stroke="{MUTED}" stroke-width="0.5"/>'
    if kind == "line":
        return f'<line x1="{x}" y1="{y + 6}" x2="{x + 14}" y2="{y + 6}" stroke="{colour}" stroke-width="2"/>'
    return f'<path d="M{x + 7},{y + 12} l-5,-10 h10 z" fill="{colour}"/>'


def width(text: str, ascii_px: float) -> float:
    """How wide a line of 12-pixel text is drawn, a character outside ASCII (Chinese) as wide as the
    font is high, any other as `ascii_px` (each caller's own margin)."""
    wide = sum(not c.isascii() for c in text)
    return ascii_px * (len(text) - wide) + 12.0 * wide


def legend(entries: list[tuple[str, str, str] | None], left: float, top: float, right: float) -> tuple[str, float]:
    """Entries (kind, colour, what) in rows from (left, top), a row broken where an entry would
    run past `right` or where an entry is None; the SVG and the y under the last row."""
    out, x, row = [], left, 0
    for entry in entries:
        if entry is None:
            x, row = left, row + 1
            continue
        kind, colour, name = entry
        wide = 34 + width(name, 6.8)
        if x > left and x + wide - 14 > right:
            x, row = left, row + 1
        y = top + 20 * row
        out.append(swatch(kind, x, y, colour)
                   + f'<text x="{x + 20}" y="{y + 11}" font-size="12" fill="{INK}">{escape(name)}</text>')
        x += wide
    return "\n".join(out), top + 20 * (row + 1)


def paragraph(phrases: list[str], left: float, top: float, right: float, leading: int = 16,
              separator: str = ", ") -> tuple[str, float]:
    """The phrases joined by commas (`separator`) into as many muted lines as fit between `left` and `right`;
    the SVG and the y under it. A character of 12-pixel sans-serif is taken as 6.6 pixels, wider
    than its average, so that no line runs past the edge."""
    lines: list[str] = []
    for phrase in phrases:
        if lines and left + width(lines[-1] + separator + phrase, 6.6) <= right:
            lines[-1] += separator + phrase
        else:
            lines.append(phrase)
    return lines_of_text(lines, left, top, leading), top + leading * len(lines)


def lines_of_text(lines: list[str], left: float, top: float, leading: int = 16) -> str:
    return "\n".join(f'<text x="{left}" y="{top + leading * i + 12}" font-size="12" fill="{MUTED}">'
                     f"{escape(line, quote=False)}</text>" for i, line in enumerate(lines))
