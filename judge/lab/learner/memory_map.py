"""The memory map: a caching allocator's snapshot drawn as an SVG, one row per segment, its
blocks to scale, allocated, free and pending (freed, waiting for another stream's events) in
three colours, the pools labelled and the stats in the caption.

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
from html import escape

from ..core import build, process
from ..model.catalog import ROOT, Exercise, shown

OUT = ROOT / "build" / "memory-map"
FLAG = "--snapshot"
MiB = 1 << 20

_WIDTH = 1000
_LABEL = 175        # the left column: a segment's pool and size
_BAR = _WIDTH - _LABEL - 20
_ROW = 26
_ALLOCATED, _FREE, _PENDING, _INK, _MUTED = "#2563eb", "#e5e7eb", "#f59e0b", "#111827", "#4b5563"


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


def _mib(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n % MiB else f"{n // MiB} MiB"


def svg(snapshot: dict, title: str) -> str:
    """The memory map of `snapshot` as a standalone SVG document."""
    segments = sorted(snapshot["segments"], key=lambda s: (not s.get("small_pool"), s.get("base", 0)))
    stats = snapshot["stats"]
    scale = _BAR / max((s["size"] for s in segments), default=1)
    out: list[str] = []
    y = 56
    for small in (True, False):
        rows = [s for s in segments if bool(s.get("small_pool")) == small]
        if not rows:
            continue
        name = "Small pool: blocks up to 1 MiB, 2 MiB segments" if small else "Large pool: blocks above 1 MiB"
        out.append(f'<text x="20" y="{y + 14}" font-size="14" font-weight="bold" fill="{_INK}">{name}</text>')
        y += 24
        for seg in rows:
            used = sum(b[1] for b in seg["blocks"] if b[2])
            out.append(f'<text x="20" y="{y + 16}" font-size="12" fill="{_INK}">{_mib(seg["size"])}'
                       f'<tspan fill="{_MUTED}"> · {_mib(used)} used</tspan></text>')
            for offset, size, allocated, *rest in seg["blocks"]:
                x, w = _LABEL + offset * scale, max(size * scale, 0.5)
                pending = bool(rest and rest[0]) and not allocated
                state = "allocated" if allocated else "pending" if pending else "free"
                fill = _ALLOCATED if allocated else _PENDING if pending else _FREE
                out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{_ROW - 6}" '
                           f'fill="{fill}" stroke="#ffffff" stroke-width="0.5">'
                           f'<title>{state}: {size:,} bytes at offset {offset:,}</title></rect>')
            out.append(f'<rect x="{_LABEL}" y="{y}" width="{seg["size"] * scale:.2f}" height="{_ROW - 6}" '
                       f'fill="none" stroke="{_MUTED}" stroke-width="1"/>')
            y += _ROW
        y += 10
    if not segments:
        out.append(f'<text x="20" y="{y + 14}" font-size="13" fill="{_MUTED}">No segment: nothing was reserved.</text>')
        y += 30
    allocated, reserved = stats.get("allocated_bytes", 0), stats.get("reserved_bytes", 0)
    ratio = f", {reserved / allocated:.2f} bytes reserved per byte allocated" if allocated else ""
    def is_pending(b: list) -> bool:
        return len(b) == 4 and bool(b[3]) and not b[2]

    largest = max((b[1] for s in segments for b in s["blocks"] if not b[2] and not is_pending(b)), default=0)
    pending = sum(b[1] for s in segments for b in s["blocks"] if is_pending(b))
    caption = [
        f"allocated {_mib(allocated)} of reserved {_mib(reserved)}{ratio}; largest free block {_mib(largest)}"
        + (f"; {_mib(pending)} pending" if pending else ""),
        f"{stats.get('device_mallocs', 0)} device mallocs, {stats.get('device_frees', 0)} device frees, "
        f"{stats.get('cache_hits', 0):,} cache hits, {stats.get('oom_retries', 0)} OOM retries"
        + (f"; one row per segment, to scale ({_mib(round(_BAR / scale))} across)" if segments else ""),
    ]
    legend_y = y + 6
    out.append(f'<rect x="20" y="{legend_y}" width="14" height="14" fill="{_ALLOCATED}"/>'
               f'<text x="40" y="{legend_y + 12}" font-size="12" fill="{_INK}">allocated block</text>'
               f'<rect x="150" y="{legend_y}" width="14" height="14" fill="{_FREE}" stroke="{_MUTED}" stroke-width="0.5"/>'
               f'<text x="170" y="{legend_y + 12}" font-size="12" fill="{_INK}">free block, cached</text>')
    if pending:
        out.append(f'<rect x="310" y="{legend_y}" width="14" height="14" fill="{_PENDING}"/>'
                   f'<text x="330" y="{legend_y + 12}" font-size="12" fill="{_INK}">pending: freed, waiting for '
                   f'another stream</text>')
    for i, line in enumerate(caption):
        out.append(f'<text x="20" y="{legend_y + 36 + 18 * i}" font-size="12" fill="{_MUTED}">{escape(line, quote=False)}</text>')
    height = legend_y + 36 + 18 * len(caption)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" '
            f'height="{height}" font-family="sans-serif">'
            f'<rect width="100%" height="100%" fill="#ffffff"/>'
            f'<text x="20" y="30" font-size="17" font-weight="bold" fill="{_INK}">{escape(title, quote=False)}</text>')
    return head + "\n" + "\n".join(out) + "\n</svg>\n"


def wanted(exercise: Exercise) -> bool:
    """True when the exercise's benchmark binary prints a snapshot."""
    return any(f'"{FLAG}"' in p.read_text(encoding="utf-8") for p in exercise.bench_dir.glob("*.cpp"))


def draw(binary: Path, title: str, out: Path) -> str:
    """Runs `binary --snapshot` and writes its memory map to `out`: "" or why not."""
    if not binary.is_file():
        return "the benchmark was not built"
    result = process.run([str(binary), FLAG], timeout=120, keep_bytes=8_000_000)
    if result.timed_out:
        return "the snapshot run did not finish in 120 s"
    try:
        snapshot = parse(result.stdout.text())
    except ValueError as err:  # json.JSONDecodeError is one
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
