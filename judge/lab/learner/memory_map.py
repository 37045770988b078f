"""The memory map: a caching allocator's snapshot drawn as an SVG, one row per segment, its
blocks to scale, allocated, free and pending (freed, waiting for another stream's events) in
three colours (figures' palette), the pools labelled and the stats in the caption.

An exercise opts in when its benchmark binary understands `--snapshot`: it then prints the
snapshot, as JSON, instead of running the benchmarks:

    {"workload": "...", "stats": {"allocated_bytes": ..., "reserved_bytes": ..., ...},
     "segments": [{"base": 0, "size": 2097152, "small_pool": true,
                   "blocks": [[offset, size, allocated, pending], ...]}, ...]}

(`pending` may be left out: a block of three is not pending).

or `{"error": "..."}` when the allocator failed."""
from __future__ import annotations

import json
from pathlib import Path

from ..core import build, program
from ..model.catalog import ROOT, Exercise, shown
from . import figures

OUT = ROOT / "build" / "memory-map"
FLAG = "--snapshot"

_WIDTH = 1000
_LABEL = 175        # the left column: a segment's pool and size
_BAR = _WIDTH - _LABEL - 20
_ROW = 26


def parse(text: str) -> dict:
    """The snapshot printed by a benchmark binary; ValueError when it is malformed or an error."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the snapshot is not a JSON object")
    if "error" in data:
        raise ValueError(str(data["error"]))
    segments = data.get("segments")
    if not isinstance(segments, list) or not isinstance(data.get("stats"), dict):
        raise ValueError("the snapshot lacks its segments or its stats")
    for seg in segments:
        blocks = seg.get("blocks") if isinstance(seg, dict) else None
        if not isinstance(blocks, list) or not isinstance(seg.get("size"), int) or seg["size"] <= 0:
            raise ValueError("a segment lacks its size or its blocks")
        if any(not (isinstance(b, list) and len(b) in (3, 4)) for b in blocks):
            raise ValueError("a block is not [offset, size, allocated] or [offset, size, allocated, pending]")
    return data


def _is_pending(block: list) -> bool:
    return len(block) == 4 and bool(block[3]) and not block[2]


def svg(snapshot: dict, title: str) -> str:
    """The memory map of `snapshot` as a standalone SVG document."""
    segments = sorted(snapshot["segments"], key=lambda s: (not s.get("small_pool"), s.get("base", 0)))
    scale = _BAR / max((s["size"] for s in segments), default=1)
    out: list[str] = []
    y = 56
    for small in (True, False):
        rows = [s for s in segments if bool(s.get("small_pool")) == small]
        if rows:
            out.append(figures.heading(20, y + 14, "Small pool: blocks up to 1 MiB, 2 MiB segments" if small
                                       else "Large pool: blocks above 1 MiB", size=14))
            out += [_segment(seg, y + 24 + _ROW * i, scale) for i, seg in enumerate(rows)]
            y += 24 + _ROW * len(rows) + 10
    if not segments:
        out.append(f'<text x="20" y="{y + 14}" font-size="13" fill="{figures.MUTED}">No segment: nothing was '
                   'reserved.</text>')
        y += 30
    pending = sum(b[1] for s in segments for b in s["blocks"] if _is_pending(b))
    legend, below = figures.legend([("rect", figures.ALLOCATED, "allocated block"),
                                    ("rect", figures.FREE, "free block, cached")]
                                   + ([("rect", figures.PENDING, "pending: freed, waiting for another stream")]
                                      if pending else []), 20, y + 6, _WIDTH - 20)
    caption = figures.lines_of_text(_caption(snapshot["stats"], segments, scale, pending), 20, below + 4, 18)
    return figures.document(_WIDTH, below + 16 + 18 * 2, title, "", out + [legend, caption])


def _segment(seg: dict, y: float, scale: float) -> str:
    """One segment's row: its size and use, then its blocks to scale in their colours."""
    used = sum(b[1] for b in seg["blocks"] if b[2])
    out = [f'<text x="20" y="{y + 16}" font-size="12" fill="{figures.INK}">{figures.mib(seg["size"])}'
           f'<tspan fill="{figures.MUTED}"> · {figures.mib(used)} used</tspan></text>']
    for offset, size, allocated, *rest in seg["blocks"]:
        pending = bool(rest and rest[0]) and not allocated
        state, fill = (("allocated", figures.ALLOCATED) if allocated else ("pending", figures.PENDING) if pending
                       else ("free", figures.FREE))
        out.append(f'<rect x="{_LABEL + offset * scale:.2f}" y="{y}" width="{max(size * scale, 0.5):.2f}" '
                   f'height="{_ROW - 6}" fill="{fill}" stroke="{figures.PAPER}" stroke-width="0.5">'
                   f'<title>{state}: {size:,} bytes at offset {offset:,}</title></rect>')
    out.append(f'<rect x="{_LABEL}" y="{y}" width="{seg["size"] * scale:.2f}" height="{_ROW - 6}" '
               f'fill="none" stroke="{figures.MUTED}" stroke-width="1"/>')
    return "\n".join(out)


def _caption(stats: dict, segments: list[dict], scale: float, pending: int) -> list[str]:
    allocated, reserved = stats.get("allocated_bytes", 0), stats.get("reserved_bytes", 0)
    ratio = f", {reserved / allocated:.2f} bytes reserved per byte allocated" if allocated else ""
    largest = max((b[1] for s in segments for b in s["blocks"] if not b[2] and not _is_pending(b)), default=0)
    mib = figures.mib
    return [f"allocated {mib(allocated)} of reserved {mib(reserved)}{ratio}; largest free block {mib(largest)}"
            + (f"; {mib(pending)} pending" if pending else ""),
            f"{stats.get('device_mallocs', 0)} device mallocs, {stats.get('device_frees', 0)} device frees, "
            f"{stats.get('cache_hits', 0):,} cache hits, {stats.get('oom_retries', 0)} OOM retries"
            + (f"; one row per segment, to scale ({mib(round(_BAR / scale))} across)" if segments else "")]


def wanted(exercise: Exercise) -> bool:
    """True when the exercise's benchmark binary prints a snapshot."""
    return any(f'"{FLAG}"' in p.read_text(encoding="utf-8") for p in exercise.bench_dir.glob("*.cpp"))


def draw(binary: Path, title: str, out: Path) -> str:
    """Runs `binary --snapshot` and writes its memory map to `out`: "" or why not."""
    if not binary.is_file():
        return "the benchmark was not built"
    try:
        # An allocator that threw is answered with {"error": ...} and exit status 1.
        snapshot = parse(program.ask([str(binary), FLAG], str, what="the snapshot run", timeout=120,
                                     keep_bytes=8_000_000, answers_on=(0, 1)))
    except (program.Failed, ValueError) as err:  # json.JSONDecodeError is a ValueError
        return f"no snapshot: {err}"
    if isinstance(snapshot.get("workload"), str):
        title += f", {snapshot['workload']} workload"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg(snapshot, title), encoding="utf-8")
    return ""


def after_bench(exercise: Exercise, compiler: str) -> None:
    """Draws the memory map of the learner's allocator and of the reference, after `bench`."""
    if not wanted(exercise):
        return
    print(f"\nMemory maps at the peak of reservation ({exercise.title.lower()}):")
    for impl, who in ((build.Impl("exercises"), "yours"), (build.Impl("solutions"), "the reference")):
        binary = build.tree_dir(compiler, "release", impl) / f"bench_{exercise.name}"
        out = OUT / f"{exercise.name}{'' if who == 'yours' else '-reference'}.svg"
        problem = draw(binary, f"Memory map at peak reservation: {who}", out)
        print(f"  {who:<14} {problem or shown(out)}")
