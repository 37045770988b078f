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
from .. import ui
from ..model.words import language, say

OUT = ROOT / "build" / "memory-map"
FLAG = "--snapshot"

_WIDTH = 1000
_LABEL = 175        # the left column: a segment's pool and size
_BAR = _WIDTH - _LABEL - 20
_ROW = 26

# The map's words, in English and in Chinese: the chapter's figure has a Chinese twin drawn from
# the same snapshot.
WORDS = {
    "en": {
        "small": "Small pool: blocks up to 1 MiB, 2 MiB segments", "large": "Large pool: blocks above 1 MiB",
        "empty": "No segment: nothing was reserved.", "used": " · {} used",
        "allocated": "allocated block", "free": "free block, cached", "pending": "pending: freed, waiting for another stream",
        "block": "{state}: {size:,} bytes at offset {offset:,}",
        "states": {"allocated": "allocated", "pending": "pending", "free": "free"},
        "workload": ", {} workload",
        "totals": "allocated {allocated} of reserved {reserved}", "ratio": ", {:.2f} bytes reserved per byte allocated",
        "largest": "; largest free block {}", "pending_total": "; {} pending",
        "counts": "{mallocs} device mallocs, {frees} device frees, {hits:,} cache hits, {retries} OOM retries",
        "scale": "; one row per segment, to scale ({} across)",
    },
    "zh": {
        "small": "小池：不超过 1 MiB 的块，2 MiB 的段", "large": "大池：超过 1 MiB 的块",
        "empty": "没有段：什么也没有预留。", "used": " · 已用 {}",
        "allocated": "已分配的块", "free": "空闲块，已缓存", "pending": "pending：已释放，等待另一个 stream",
        "block": "{state}：{size:,} 字节，偏移 {offset:,}",
        "states": {"allocated": "已分配", "pending": "pending", "free": "空闲"},
        "workload": "，{} 负载",
        "totals": "已分配 {allocated}，已预留 {reserved}", "ratio": "，每分配 1 字节预留 {:.2f} 字节",
        "largest": "；最大空闲块 {}", "pending_total": "；pending {}",
        "counts": "设备 malloc {mallocs} 次，设备 free {frees} 次，缓存命中 {hits:,} 次，显存不足重试 {retries} 次",
        "scale": "；每段一行，按比例绘制（全宽 {}）",
    },
}


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


def svg(snapshot: dict, title: str, lang: str = "en") -> str:
    """The memory map of `snapshot` as a standalone SVG document, its words in `lang`."""
    w = WORDS[lang]
    segments = sorted(snapshot["segments"], key=lambda s: (not s.get("small_pool"), s.get("base", 0)))
    scale = _BAR / max((s["size"] for s in segments), default=1)
    out: list[str] = []
    y = 56
    for small in (True, False):
        rows = [s for s in segments if bool(s.get("small_pool")) == small]
        if rows:
            out.append(figures.heading(20, y + 14, w["small"] if small else w["large"], size=14))
            out += [_segment(seg, y + 24 + _ROW * i, scale, w) for i, seg in enumerate(rows)]
            y += 24 + _ROW * len(rows) + 10
    if not segments:
        out.append(f'<text x="20" y="{y + 14}" font-size="13" fill="{figures.MUTED}">{w["empty"]}</text>')
        y += 30
    pending = sum(b[1] for s in segments for b in s["blocks"] if _is_pending(b))
    legend, below = figures.legend([("rect", figures.ALLOCATED, w["allocated"]), ("rect", figures.FREE, w["free"])]
                                   + ([("rect", figures.PENDING, w["pending"])] if pending else []),
                                   20, y + 6, _WIDTH - 20)
    caption = figures.lines_of_text(_caption(snapshot["stats"], segments, scale, pending, w), 20, below + 4, 18)
    return figures.document(_WIDTH, below + 16 + 18 * 2, title, "", out + [legend, caption])


def _segment(seg: dict, y: float, scale: float, w: dict) -> str:
    """One segment's row: its size and use, then its blocks to scale in their colours."""
    used = sum(b[1] for b in seg["blocks"] if b[2])
    out = [f'<text x="20" y="{y + 16}" font-size="12" fill="{figures.INK}">{figures.mib(seg["size"])}'
           f'<tspan fill="{figures.MUTED}">{w["used"].format(figures.mib(used))}</tspan></text>']
    for offset, size, allocated, *rest in seg["blocks"]:
        pending = bool(rest and rest[0]) and not allocated
        state, fill = (("allocated", figures.ALLOCATED) if allocated else ("pending", figures.PENDING) if pending
                       else ("free", figures.FREE))
        out.append(f'<rect x="{_LABEL + offset * scale:.2f}" y="{y}" width="{max(size * scale, 0.5):.2f}" '
                   f'height="{_ROW - 6}" fill="{fill}" stroke="{figures.PAPER}" stroke-width="0.5">'
                   f'<title>{w["block"].format(state=w["states"][state], size=size, offset=offset)}</title></rect>')
    out.append(f'<rect x="{_LABEL}" y="{y}" width="{seg["size"] * scale:.2f}" height="{_ROW - 6}" '
               f'fill="none" stroke="{figures.MUTED}" stroke-width="1"/>')
    return "\n".join(out)


def _caption(stats: dict, segments: list[dict], scale: float, pending: int, w: dict) -> list[str]:
    allocated, reserved = stats.get("allocated_bytes", 0), stats.get("reserved_bytes", 0)
    largest = max((b[1] for s in segments for b in s["blocks"] if not b[2] and not _is_pending(b)), default=0)
    mib = figures.mib
    return [w["totals"].format(allocated=mib(allocated), reserved=mib(reserved))
            + (w["ratio"].format(reserved / allocated) if allocated else "") + w["largest"].format(mib(largest))
            + (w["pending_total"].format(mib(pending)) if pending else ""),
            w["counts"].format(mallocs=stats.get("device_mallocs", 0), frees=stats.get("device_frees", 0),
                               hits=stats.get("cache_hits", 0), retries=stats.get("oom_retries", 0))
            + (w["scale"].format(mib(round(_BAR / scale))) if segments else "")]


def wanted(exercise: Exercise) -> bool:
    """True when the exercise's benchmark binary prints a snapshot."""
    return any(f'"{FLAG}"' in p.read_text(encoding="utf-8") for p in exercise.bench_dir.glob("*.cpp"))


def draw(binary: Path, title: str, out: Path, twins: dict[str, tuple[str, Path]] | None = None) -> str:
    """Runs `binary --snapshot` and writes its memory map to `out`, and to each of `twins`
    ({language: (title, file)}) the same map in that language: "" or why not."""
    if not binary.is_file():
        return "the benchmark was not built"
    try:
        # An allocator that threw is answered with {"error": ...} and exit status 1.
        snapshot = parse(program.ask([str(binary), FLAG], str, what="the snapshot run", timeout=120,
                                     keep_bytes=8_000_000, answers_on=(0, 1)))
    except (program.Failed, ValueError) as err:  # json.JSONDecodeError is a ValueError
        return f"no snapshot: {err}"
    for lang, (named, path) in {"en": (title, out), **(twins or {})}.items():
        if isinstance(snapshot.get("workload"), str):
            named += WORDS[lang]["workload"].format(snapshot["workload"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg(snapshot, named, lang), encoding="utf-8")
    return ""


def after_bench(exercise: Exercise, compiler: str) -> None:
    """Draws the memory map of the learner's allocator and of the reference, after `bench`."""
    if not wanted(exercise):
        return
    print(say("memory_maps", title=exercise.title.lower()))
    for impl, who, zh in ((build.Impl("exercises"), "yours", "你的"), (build.Impl("solutions"), "the reference", "参考答案")):
        binary = build.tree_dir(compiler, "release", impl) / f"bench_{exercise.name}"
        out = OUT / f"{exercise.name}{'' if who == 'yours' else '-reference'}.svg"
        # The Chinese twin beside it (zh/), as the Chinese chapter shows the reference's.
        problem = draw(binary, f"Memory map at peak reservation: {who}", out,
                       {"zh": (f"预留量峰值时的内存分布图：{zh}", OUT / "zh" / out.name)})
        shown_who = say("bench_row_error_yours" if who == "yours" else "bench_row_error_reference")
        print(f"  {ui.pad(shown_who, 14)} {problem or shown(OUT / 'zh' / out.name if language() == 'zh' else out)}")
