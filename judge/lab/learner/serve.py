"""`serve`: the course's capstone. Builds the serving engine (judge/engine/, the binary
`alloclab_serve`) optimised, with the learner's header for every exercise that has passed and
the reference for the others, serves a built-in trace, and prints what it measured: throughput,
batching, preemptions, the prefix cache, how full the KV blocks are, the caching allocator's
device mallocs, the heap allocations per step, what became of the KV memory (maps, page faults,
the bytes committed), and whether every request's tokens equal those
of the plain engine (the same model with `std::vector` for everything), which is the proof that
the allocators kept every request's memory apart (the plain engine shares the model, the kernels, the
sampler and the trace, and none of the memory management). The engine writes each token's K and V
where the KV cache manager's `slot()` says and reads them through its block tables; once every
request is done it checks that the manager holds nothing (`leak`). It draws the run's timeline as
an SVG.

`--source FILE` serves with FILE in place of exercise 07's header, whatever the progress file says.

`--compare` serves the same trace on the same KV budget four times, with the block managers
`reserve` (a request's whole KV taken at admission, as engines did before paging), `paged` (the
KV cache manager with prefix caching off), `prefix` (on) and `virtual` (exercise 08's contiguous
KV cache on the same physical bytes: each sequence's KV in one slice of address space, granules
mapped as it grows, read by attention with no block table), and sets them side by side.

The binary's protocol: `alloclab_serve [--trace chat|tiny] [--manager prefix|paged|reserve|virtual]
[--model default|tiny] [--kv-blocks N] [--progress]` prints one JSON object on standard output and
exits 0; a refused argument is a line on standard error and exit 2, a run that stopped (a manager
threw, or the engine's check of its answers failed) a line on standard error and exit 3. With
--progress it writes `progress <finished> <total>` lines on standard error as requests finish. The
object is described by judge/schemas/serve-result.schema.json: its keys are KEYS, and its
`timeline` holds the equal-length lists TIMELINE, one entry per engine step."""
from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import ui
from ..core import build, program
from ..model.catalog import ROOT, Catalog, Exercise, shown
from ..model.errors import UsageError
from ..model.progress import Progress, Standing
from ..model.words import WORDS, language, listing, row_label, say, then
from . import figures
from . import serve_verdict as verdict

ENGINE = ROOT / "judge" / "engine"
SOURCE = ENGINE / "serve.cpp"
TARGET = "alloclab_serve"
REFERENCE_MANAGER_TARGET = "alloclab_serve_reference_manager"  # the same engine, with exercise 07's reference
OUT = ROOT / "build" / "serve"
TRACES = ("chat", "tiny")
MANAGERS = ("prefix", "paged", "reserve", "virtual")
MODELS = ("default", "tiny")
# --compare's order: before paging, paging, paging with a cache, contiguous KV in virtual memory
COMPARED = ("reserve", "paged", "prefix", "virtual")
PAGED = ("paged", "prefix")                    # exercise 07's manager, judged against its reference
WITH = ("yours", "reference")
COMPILER = "clang"
STDOUT_BYTES = 64 << 20                        # a long trace's timeline is a few MB of JSON

# What the binary prints: every key is there (the plain engine's figures are null with --no-plain).
NUMBERS = ("requests", "finished", "generated_tokens", "tokens_per_second", "mean_batch", "peak_running",
           "preemptions", "prefix_hit_rate", "kv_utilization", "copies", "device_mallocs",
           "heap_allocations_per_step", "kv_blocks", "block_tokens", "max_seqs", "seed", "steps", "seconds",
           "cpu_seconds", "tokens_per_cpu_second")
NULLABLE = ("plain_heap_allocations_per_step",)
KEYS = (*NUMBERS, *NULLABLE, "tokens_digest", "matches_plain_engine", "leak", "manager", "trace", "model",
        "heap_per_step", "latency", "time_split", "roofline", "allocators", "memory", "timeline")
ROOFLINE = ("peak_bytes_per_second", "peak_flops_per_second", "decode_bytes_per_second", "decode_flops_per_second",
            "bytes_per_decode_step", "flops_per_decode_step")
ALLOCATORS = ("arena_arrays", "arena_resets", "arena_peak_bytes", "arena_capacity_bytes", "pool_created",
              "pool_peak_live", "pool_heap_allocations", "caching_heap_allocations", "kv_buffer_bytes",
              "step_lists_peak_bytes", "step_lists_upstream_bytes", "ring_bytes", "ring_peak_step_bytes",
              "ring_capacity_bytes", "evictions")   # what each allocator did (serve_verdict.allocator_lines)
HEAP = ("engine", "kv_cache_manager", "allocators")   # whose heap allocations, per steady-state step
MEMORY = ("map_calls_per_step", "unmap_calls_per_step", "minor_faults_per_step", "committed_peak_bytes",
          "committed_after_bytes")   # and committed_after_sleep_bytes, null but for `virtual`
LATENCY = ("ttft_steps", "ttft_seconds", "tpot_steps", "tpot_seconds")
TIME_SPLIT = ("prefill_steps", "prefill_seconds", "prefill_tokens", "decode_steps", "decode_seconds", "decode_tokens")
SCHEMA = ROOT / "judge" / "schemas" / "serve-result.schema.json"
TIMELINE = ("running_blocks", "cached_blocks", "free_blocks", "batch", "preempted", "reserved_bytes",
            "allocated_bytes")


# How a run of the engine ended, when it did not print its object (ServeError.ending).
CRASHED, TIMED_OUT = program.CRASHED, program.TIMED_OUT
STOPPED = "stopped"     # exit status 3


class ServeError(Exception):
    """The engine could not be built or run, or said something that cannot be read: the message
    says what happened and what to do; `yours` is True when the learner's code is to blame, and
    `ending` is CRASHED, STOPPED (exit 3: a manager threw, or the engine's check failed) or
    TIMED_OUT when the run ended that way."""

    def __init__(self, message: str, yours: bool = False, ending: str = ""):
        super().__init__(message)
        self.yours = yours
        self.ending = ending


# ---- whose header ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """Where one exercise's header comes from in the engine's build."""
    exercise: Exercise
    yours: bool
    why: str = ""        # why the reference stands in for the learner's header, when it does
    file: Path | None = None   # --source: this file stands in for the header

    @property
    def folder(self) -> Path:
        return ROOT / ("exercises" if self.yours else "solutions") / self.exercise.name

    @property
    def header(self) -> Path:
        return self.file if self.file is not None else self.folder / self.exercise.header


SOURCE_TREE = "source"   # --source builds in build/serve-source
MANAGER_HEADER = "kv_cache_manager.hpp"   # the exercise whose header --source replaces


def stand_in(where: Path, exercise: Exercise, file: Path) -> Path:
    """A folder of the tree `where` holding a one-line header under the exercise's header name
    that includes `file`: the engine's build finds it where it looks, and compiler messages and
    dependency tracking point at `file` itself. Rewritten only when it changes: another file in
    its place recompiles the one engine file that includes it, without configuring the tree again."""
    folder = where / "stand-in" / exercise.name
    header = folder / exercise.header
    text = f'#include "{file.resolve()}"\n'
    if not header.is_file() or header.read_text(encoding="utf-8") != text:
        folder.mkdir(parents=True, exist_ok=True)
        header.write_text(text, encoding="utf-8")
    return folder


def with_source(catalog: Catalog, chosen: list[Source], file: Path) -> list[Source]:
    """`chosen`, with `file` in place of the serving exercise's header (--source)."""
    if not file.is_file():
        raise UsageError(say("no_source", file=file))
    return [Source(s.exercise, True, "", file) if s.exercise.header == MANAGER_HEADER else s for s in chosen]


def sources(catalog: Catalog, progress: Progress, with_: str) -> list[Source]:
    """The header of each exercise: the learner's when its every stage passed on the file as it is
    now (by the progress file), else the reference, with the reason."""
    chosen = []
    for ex in catalog.exercises:
        if with_ == "reference":
            chosen.append(Source(ex, False, say("serve_asked_for")))
            continue
        standing, stage = progress.standing(ex)
        if standing == Standing.PASSED and progress.is_fresh(ex):
            chosen.append(Source(ex, True))
        elif standing == Standing.PASSED:
            chosen.append(Source(ex, False, say("serve_changed", id=ex.id)))
        elif standing == Standing.NOT_STARTED:
            chosen.append(Source(ex, False, say("serve_not_passed")))
        else:
            chosen.append(Source(ex, False, say("serve_not_passed_at", stage=stage) if stage
                                 else say("serve_not_passed")))
    return chosen


def cache_variables(chosen: list[Source], where: Path) -> dict[str, str]:
    """-DALLOCLAB_SERVE_<NN>=<folder> for every exercise, the reference's too: a tree that once
    built a learner's header must not keep it in its cache after that header stops passing."""
    return {f"ALLOCLAB_SERVE_{s.exercise.id:02d}": str(stand_in(where, s.exercise, s.file) if s.file else s.folder)
            for s in chosen}


def whose(chosen: list[Source]) -> dict[str, str]:
    """The `with` of --json: each exercise's folder name -> "yours" or "reference"."""
    return {s.exercise.name: "yours" if s.yours else "reference" for s in chosen}


def describe(chosen: list[Source]) -> str:
    """Which headers the engine is built from, in a line or two."""
    mine = [s for s in chosen if s.yours]
    theirs = [s for s in chosen if not s.yours]
    lines = []
    given = [s for s in mine if s.file is not None]
    mine = [s for s in mine if s.file is None]
    if given:
        lines.append(say("serve_and").join(say("serve_given", file=shown(s.file), id=s.exercise.id,
                                                header=s.exercise.header) for s in given))
    if mine:
        lines.append(say("serve_yours", headers=listing(f"{s.exercise.id:02d} {s.exercise.header}" for s in mine)))
    if theirs and not mine and all(s.why == say("serve_asked_for") for s in theirs):
        lines.append(say("serve_all_references"))
    elif theirs:
        by_reason: dict[str, list[str]] = {}
        for s in theirs:
            by_reason.setdefault(s.why, []).append(f"{s.exercise.id:02d}")
        lines.append(say("serve_references", which=say("serve_semicolon").join(
            say("serve_reason", ids=listing(ids), why=why) for why, ids in by_reason.items())))
    return "\n".join(lines)


# ---- the build ------------------------------------------------------------------------------

def tree(with_: str) -> Path:
    return build.BUILD_ROOT / f"serve-{with_}"


def require_sources() -> None:
    if not SOURCE.is_file():
        raise UsageError(say("serve_no_sources", file=shown(SOURCE)))


def build_engine(catalog: Catalog, name: str, chosen: list[Source], compiler: str = COMPILER,
                 target: str = TARGET, sanitizer: str = "release") -> Path:
    """Configures build/serve-<name> as a release tree (or build/serve-<name>-tsan under
    ThreadSanitizer) with the chosen headers and builds the engine in it (or another of the
    tree's programs, `target`); its path, or ServeError."""
    require_sources()
    where = tree(name if sanitizer == "release" else f"{name}-{sanitizer}")
    with build.locked(where):
        # The references: the request's exercise is read only for a file that stands in for one.
        engine = build.Request(catalog.exercises[-1], build.Impl("solutions"), (compiler,))
        built = build.configure_and_build(where, target, engine, compiler, sanitizer,
                                          catalog.limits.build_timeout_seconds,
                                          extra={"ALLOCLAB_ENGINE": "ON", **cache_variables(chosen, where)})
    if built.ok:
        return where / target
    raise ServeError(*compile_problem(built, chosen))


def compile_problem(built: build.BuildResult, chosen: list[Source]) -> tuple[str, bool]:
    """What a failed build says, as `test` says it: the first error, in a learner's header when
    there is one there, with the line the compiler quotes; and whether the learner's code is to blame."""
    errors = [d for d in built.diagnostics if d.severity == "error"]
    mine = {s.header.resolve(): s for s in chosen if s.yours}
    for d in errors:
        source = mine.get(_resolved(d.file))
        if source:
            ex = source.exercise
            if source.file is not None:
                return "\n".join([say("serve_source_does_not_compile", file=shown(source.file), id=ex.id,
                                      header=ex.header), f"  {d.where()}: error: {d.message}",
                                  *("  " + c for c in d.context)]), True
            lines = [say("serve_yours_does_not_compile", header=ex.header, id=ex.id),
                     f"  {d.where()}: error: {d.message}", *("  " + c for c in d.context),
                     say("serve_passed_but", id=ex.id)]
            return "\n".join(lines), True
    if errors:
        d = errors[0]
        lines = [say("serve_engine_does_not_compile_yours" if mine else "serve_engine_does_not_compile"),
                 f"  {d.where()}: error: {d.message}", *("  " + c for c in d.context)]
        if mine:
            lines.append(say("serve_engine_error_hint"))
        return "\n".join(lines), bool(mine)
    return say("serve_not_built", why=built.problem or say("serve_build_failed")), False


def _resolved(file: str) -> Path | None:
    try:
        return Path(file).resolve()
    except OSError:
        return None


# ---- the run --------------------------------------------------------------------------------

PROGRESS_LINE = re.compile(r"^progress (\d+) (\d+)\s*$")


def run(binary: Path, trace: str, manager: str, timeout: float, kv_blocks: int | None = None,
        bar: ui.ProgressLine | None = None, blame_learner: bool = False, model: str = "default",
        plain: bool = True, seed: int | None = None, roofline: bool = False) -> dict:
    """Runs the engine once and returns its JSON object, checked; ServeError when it fails. With
    `plain` False the plain engine is not run (matches_plain_engine is null): compare
    `tokens_digest` with a run that was compared."""
    argv = [str(binary), "--trace", trace, "--manager", manager, "--model", model, "--progress"]
    if not plain:
        argv.append("--no-plain")
    if seed is not None:
        argv += ["--seed", str(seed)]
    if roofline:
        argv.append("--roofline")
    if kv_blocks is not None:
        argv += ["--kv-blocks", str(kv_blocks)]
    doing = f" serving the {trace} trace with the {manager} manager"
    threw = "a KV cache manager threw, or " if manager != "reserve" else ""
    exits = {2: f"refused its arguments ({' '.join(argv[1:])})",
             3: f"stopped{doing} ({threw}the engine's check of its answers failed)"}
    try:
        with bar if bar else contextlib.nullcontext():
            return program.ask(argv, parse, what="the serving engine", timeout=timeout, limit="bench_timeout_seconds",
                               keep_bytes=STDOUT_BYTES, doing=doing, exits=exits, cwd=binary.parent,
                               on_stderr_line=bar and _counting(bar), quiet=PROGRESS_LINE.match)
    except program.Failed as failed:
        raise _serve_error(failed, blame_learner) from None


def _counting(bar: ui.ProgressLine):
    """The engine's `progress <finished> <total>` lines, drawn on `bar`."""
    def line(text: str) -> None:
        if m := PROGRESS_LINE.match(text):
            bar.show(int(m.group(1)), int(m.group(2)), say("serve_finished"))
    return line


def _serve_error(failed: program.Failed, blame_learner: bool) -> ServeError:
    """What `serve` says of a run that gave no answer, and whose code it blames."""
    if failed.status == 2:
        disagree = ": this judge and judge/engine/serve.cpp disagree" if "unknown argument" in failed.said else ""
        return ServeError(failed.told(disagree))
    if failed.ending in (program.NOT_STARTED, program.UNREADABLE):
        return ServeError(failed.told())
    ending = failed.ending if failed.ending in (CRASHED, TIMED_OUT) else STOPPED if failed.status == 3 else ""
    suspects = (" with your headers: `--with reference` shows whether the reference does the same" if blame_learner
                else "")
    return ServeError(failed.told(suspects), blame_learner, ending)


def parse(text: str) -> dict:
    """The engine's one JSON object, checked against the protocol; ValueError says what is wrong."""
    data = json.loads(text)  # json.JSONDecodeError is a ValueError
    if not isinstance(data, dict):
        raise ValueError("it is not one JSON object")
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise ValueError(f"it lacks the key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for key in NUMBERS + NULLABLE:
        value = data[key]
        if (value is None and key in NULLABLE) or _is_number(value):
            continue
        raise ValueError(f"{key} is {value!r}, not a number")
    if data["matches_plain_engine"] not in (True, False, None):
        raise ValueError(f"matches_plain_engine is {data['matches_plain_engine']!r}, not true, false or null")
    if data["leak"] is not None and not isinstance(data["leak"], str):
        raise ValueError(f"leak is {data['leak']!r}, not a string or null")
    if not isinstance(data["tokens_digest"], str) or not re.fullmatch(r"[0-9a-f]{16}", data["tokens_digest"]):
        raise ValueError(f"tokens_digest is {data['tokens_digest']!r}, not 16 hexadecimal digits")
    if not isinstance(data["model"], dict):
        raise ValueError("model is not an object")
    checked = [("heap_per_step", HEAP), ("latency", LATENCY), ("time_split", TIME_SPLIT), ("allocators", ALLOCATORS),
               ("memory", MEMORY)]
    if data["roofline"] is not None:
        checked.append(("roofline", ROOFLINE))
    for key, fields in checked:
        part = data[key]
        if not isinstance(part, dict):
            raise ValueError(f"{key} is not an object")
        for field in fields:
            value = part.get(field)
            if not (_is_number(value) or (key == "latency" and isinstance(value, list)
                                          and all(_is_number(v) for v in value))):
                raise ValueError(f"{key}.{field} is {value!r}")
    slept = data["memory"].get("committed_after_sleep_bytes")
    if slept is not None and not _is_number(slept):
        raise ValueError(f"memory.committed_after_sleep_bytes is {slept!r}, not a number or null")
    timeline = data["timeline"]
    if not isinstance(timeline, dict):
        raise ValueError("timeline is not an object")
    lengths = {}
    for key in TIMELINE:
        series = timeline.get(key)
        if not isinstance(series, list) or not all(_is_number(v) for v in series):
            raise ValueError(f"timeline.{key} is not a list of numbers")
        lengths[key] = len(series)
    if len(set(lengths.values())) > 1:
        raise ValueError("the timeline's lists differ in length: " + ", ".join(f"{k} {n}" for k, n in lengths.items()))
    return data


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---- what it prints -------------------------------------------------------------------------

def _int(value) -> str:
    return f"{value:,.0f}"


def _per_step(value) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def _percent(value) -> str:
    return f"{value * 100:.1f} %"


def _matches(value) -> str:
    return say({True: "serve_yes", False: "serve_no", None: "serve_not_compared"}[value])


def _leak(value) -> str:
    return say("serve_none") if value is None else say("serve_leak_yes")


def median_p99(values: list[float]) -> tuple[float, float] | None:
    """The median and the 99th percentile (nearest rank) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


def _latency(result: dict, key: str, scale: float = 1.0, digits: int = 0) -> str:
    pair = median_p99(result["latency"][key])
    return "—" if pair is None else f"{pair[0] * scale:,.{digits}f} / {pair[1] * scale:,.{digits}f}"


def _achieved(result: dict, rate: str, peak: str, unit: str) -> str:
    r = result["roofline"]
    if r is None or not r[peak]:
        return "—"
    return f"{r[rate] / 1e9:,.1f} {unit} ({r[rate] / r[peak]:.0%})"


def _slept(result: dict) -> str:
    after = result["memory"]["committed_after_sleep_bytes"]
    return "—" if after is None else figures.mib(after)


def _split(result: dict) -> str:
    t = result["time_split"]
    return f"{t['prefill_seconds']:.1f} / {t['decode_seconds']:.1f} s"


# (label, how one result's figure is written)
ROWS = (
    ("requests", lambda r: f"{_int(r['requests'])}" + ("" if r["finished"] == r["requests"]
                                                       else say("serve_finished_of", finished=_int(r['finished'])))),
    ("generated tokens", lambda r: _int(r["generated_tokens"])),
    ("tokens/s", lambda r: f"{r['tokens_per_second']:,.1f}"),
    ("mean batch", lambda r: f"{r['mean_batch']:.1f}"),
    ("peak running", lambda r: _int(r["peak_running"])),
    ("preemptions", lambda r: _int(r["preemptions"])),
    ("prefix hit rate", lambda r: _percent(r["prefix_hit_rate"])),
    ("KV utilization", lambda r: _percent(r["kv_utilization"])),
    ("copies", lambda r: _int(r["copies"])),
    ("device mallocs", lambda r: _int(r["device_mallocs"])),
    ("map / unmap calls/step", lambda r: f"{r['memory']['map_calls_per_step']:.2f} / "
                                         f"{r['memory']['unmap_calls_per_step']:.2f}"),
    ("minor page faults/step", lambda r: _per_step(r["memory"]["minor_faults_per_step"])),
    ("KV bytes committed: peak", lambda r: figures.mib(r["memory"]["committed_peak_bytes"])),
    ("  after the run", lambda r: figures.mib(r["memory"]["committed_after_bytes"])),
    ("  after sleep", _slept),
    ("heap allocations/step", lambda r: _per_step(r["heap_allocations_per_step"])),
    ("  the engine's own", lambda r: _per_step(r["heap_per_step"]["engine"])),
    ("  the KV cache manager's", lambda r: _per_step(r["heap_per_step"]["kv_cache_manager"])),
    ("    the reference's", lambda r: _per_step(r.get("reference_manager_heap_per_step"))),
    ("  the other allocators'", lambda r: _per_step(r["heap_per_step"]["allocators"])),
    ("  the plain engine's", lambda r: _per_step(r["plain_heap_allocations_per_step"])),
    ("TTFT, steps (med/p99)", lambda r: _latency(r, "ttft_steps")),
    ("TTFT, ms (med/p99)", lambda r: _latency(r, "ttft_seconds", 1000)),
    ("TPOT, steps (med/p99)", lambda r: _latency(r, "tpot_steps", 1, 2)),
    ("TPOT, ms (med/p99)", lambda r: _latency(r, "tpot_seconds", 1000, 1)),
    ("prefill / decode time", _split),
    ("decode: GB/s (of peak)", lambda r: _achieved(r, "decode_bytes_per_second", "peak_bytes_per_second", "GB/s")),
    ("decode: GFLOP/s (of peak)", lambda r: _achieved(r, "decode_flops_per_second", "peak_flops_per_second", "GF/s")),
    ("tokens = plain engine's", lambda r: _matches(r["matches_plain_engine"])),
    ("blocks held at the end", lambda r: _leak(r["leak"])),
)

# What a mismatch means, in the maintainers' English (check.py says it too).
MISMATCH = WORDS["serve_mismatch"][0]


def headline(result: dict, lang: str = "en") -> str:
    w = TIMELINE_WORDS[lang]
    model = result["model"]
    weights = model.get("weight_bytes")
    return w["headline"].format(trace=result["trace"], manager=result["manager"], kv=_int(result["kv_blocks"]),
                                tokens=_int(result["block_tokens"]), model=model.get("name", "?"),
                                size=w["weights"].format(figures.mib(weights)) if _is_number(weights) else "",
                                steps=_int(result["steps"]), seconds=result["seconds"])


VERDICT_ROWS = ("tokens = plain engine's", "blocks held at the end")   # what a run passes or fails on


def summary(result: dict, mine: list[str] | None = None) -> str:
    """One run: what the learner's allocators did (`mine`: the two-digit numbers of the exercises
    whose header is the learner's; None or empty, the references'), the verdict, then every
    figure with a few words of meaning."""
    lines = [ui.paint(headline(result, language()), "bold")]
    lines += allocators_part(result, mine)
    lines.append(ui.paint(verdict.say("verdict_title"), "bold"))
    for label, cell in ROWS:
        if label in VERDICT_ROWS:
            ok = result["matches_plain_engine"] if label.startswith("tokens =") else result["leak"] is None
            mark = ui.paint(ui.SKIP, "dim") if ok is None else ui.mark(ok)
            lines.append(f"  {mark} {ui.pad(row_label(label), 26)}{cell(result)}  " + ui.paint(verdict.meaning(label), "dim"))
    lines.append(ui.paint(verdict.say("figures_title"), "bold"))
    for label, cell in ROWS:
        if label not in VERDICT_ROWS:
            lines.append(f"  {ui.pad(row_label(label), 26)}{ui.pad(cell(result), 18)}" + ui.paint(verdict.meaning(label), "dim"))
    lines.append(ui.paint(ui.indent(_wrap(say("serve_explained")), "  ", max_lines=99), "dim"))
    return "\n".join(lines)


def allocators_part(result: dict, mine: list[str] | None) -> list[str]:
    """What the allocators did in the run, the learner's own when there are any."""
    shown_ones = mine or [f"{n:02d}" for n in range(1, 9)]
    found = verdict.allocator_lines(result, shown_ones)
    if not found:
        return []
    title = verdict.say("allocators_title" if mine else "allocators_reference_title")
    return [ui.paint(title, "bold")] + [ui.indent(ui.wrap(line, 96), "  ", max_lines=99) for line in found]


def _wrap(text: str, width: int = 100) -> str:
    return ui.wrap(text, width)


def _ratio(a, b) -> float | None:
    return a / b if _is_number(a) and _is_number(b) and b else None


# The tokens/s ratios --compare measures (over, under): the machine's figures, never judged.
SPEEDS = (("paged ÷ reserve, tokens/s", "paged", "reserve"), ("prefix ÷ paged, tokens/s", "prefix", "paged"),
          ("virtual ÷ paged, tokens/s", "virtual", "paged"))


def ratios(results: dict[str, dict]) -> list[tuple[str, float | None, str, bool | None]]:
    """(what, value, target, met) for --compare, measured on the medians of the repetitions: the
    tokens/s ratios and each manager's heap allocations against the plain engine's. None is
    judged here (target "", met None): tokens/s follow the machine and its load, and what the
    manager decides is judged against the reference by serve_verdict.manager_checks."""
    out = []
    for what, over, under in SPEEDS:
        if over in results and under in results:
            out.append((what, verdict.speed(results[over], results[under]).ratio, "", None))
    for manager in COMPARED:
        if (r := results.get(manager)) is not None:
            value = _ratio(r["heap_allocations_per_step"], r["plain_heap_allocations_per_step"])
            out.append((f"{manager}: heap allocations per step ÷ the plain engine's", value, "", None))
    return out


def compare_table(results: dict[str, dict], mine: list[str] | None = None) -> str:
    managers = [m for m in COMPARED if m in results]
    first = results[managers[0]]
    # What the learner's allocators did (in the last manager's run), the verdict, then the figures.
    lines = allocators_part(results[managers[-1]], mine) + compare_verdict(results) + [""]
    lines += [ui.paint(say("serve_compare_heading", trace=first['trace'], kv=_int(first['kv_blocks']),
                           tokens=_int(first['block_tokens']), model=first['model'].get('name', '?')), "bold"),
              f"  {'':<26}" + "".join(f"{m:>16}" for m in managers)]
    for label, cell in ROWS:
        row = "".join(f"{cell(results[m]):>16}" for m in managers)
        lines.append(f"  {ui.pad(row_label(label), 26)}{row}  " + ui.paint(verdict.meaning(label), "dim"))
    lines.append("")
    measured = [m for m in ratios(results) if "tokens/s" not in m[0]]
    width = max([ui.columns(row_label(what)) for what, *_ in measured] + [0]) + 2
    for what, value, _, _ in measured:
        lines.append(f"  {ui.pad(row_label(what), width)}{'—' if value is None else f'{value:.2f}×':>8}")
    lines.append(ui.paint(ui.indent(_wrap(say("serve_managers_explained") + say("serve_explained")), "  ",
                                    max_lines=99), "dim"))
    return "\n".join(lines)


def compare_verdict(results: dict[str, dict]) -> list[str]:
    """--compare's verdict: what exercise 07's manager decided against the reference's figures
    (added by beside_the_reference as `judged`), then the tokens/s ratios as measurements, with
    what this machine can do and its load."""
    lines = []
    judged = [(m, results[m]) for m in PAGED if results.get(m, {}).get("judged")]
    if judged:
        theirs = all(r.get("with", {}).get(_manager_folder(r), "yours") == "reference" for _, r in judged)
        lines.append(ui.paint(verdict.say("reference_title" if theirs else "judged_title"), "bold"))
        for manager, r in judged:
            checks = [verdict.Check(**c) for c in r["judged"]]
            lines += ["  " + line for line in verdict.check_lines(manager, checks, ui.mark)]
    if judged_virtual := results.get("virtual", {}).get("judged"):
        lines.append(ui.paint(verdict.say("virtual_title"), "bold"))
        lines += ["  " + line for line in verdict.check_lines("virtual", [verdict.Check(**c) for c in judged_virtual],
                                                                ui.mark)]
    lines.append("")
    lines.append(ui.paint(verdict.say("speed_title"), "bold"))
    ceilings = verdict.peaks(list(results.values()))   # one machine for every ratio
    for what, over, under in SPEEDS:
        if over in results and under in results:
            measured = verdict.speed(results[over], results[under], ceilings)
            lines.append(ui.indent(ui.wrap(verdict.speed_line(what, measured), 96), "  ", max_lines=99))
    load = next((r["load"] for r in results.values() if r.get("load")), None)
    for extra in (verdict.machine_line(results),
                  verdict.load_line(verdict.Load(load["load_before"], load["load_after"], load["cores"])) if load
                  else None, verdict.say("ratio_depends")):
        if extra:
            lines.append(ui.paint(ui.indent(ui.wrap(extra, 96), "  ", max_lines=99), "dim"))
    return lines


def _manager_folder(result: dict) -> str:
    """The folder name of exercise 07 in a result's `with`."""
    return next((name for name in result.get("with", {}) if name.startswith("07")), "")


def judge_managers(results: dict[str, dict]) -> bool:
    """Adds `judged` to the results of exercise 07's managers that have the reference's figures
    beside them (`reference_manager`), and to `virtual`'s (against `paged` on the same budget, and
    sleep); True when every figure is no worse than what it is set against."""
    ok = True
    for manager, result in results.items():
        reference = result.get("reference_manager")
        if manager == "virtual":
            checks = verdict.virtual_checks(result, results.get("paged"))
        elif manager in PAGED and reference:
            checks = verdict.manager_checks(manager, result, reference)
        else:
            continue
        result["judged"] = [dict(what=c.what, mine=c.mine, reference=c.reference, met=c.met,
                                 **({"against": c.against} if c.against else {})) for c in checks]
        ok = ok and all(c.met for c in checks)
    return ok


# ---- the timeline ---------------------------------------------------------------------------

# The timeline's words, in English and in Chinese: the chapter's figure has a Chinese twin.
TIMELINE_WORDS = {
    "en": {
        "title": "Serving timeline: {manager} manager, {who}", "references": "the references",
        "yours": "your headers for {}",
        "headline": "The {trace} trace, {manager} manager: {kv} KV blocks of {tokens} tokens, the {model} model{size}, "
                    "{steps} steps in {seconds:.1f} s",
        "weights": ", {} of weights",
        "kv": "The KV cache, in blocks, and the batch", "kv_axis": "KV blocks", "batch_axis": "requests in the step (batch)",
        "running": "used by running requests", "cached": "cached, used by no request", "free": "free (idle in the pool)",
        "batch": "batch", "preempted": "{count:g} preempted at step {steps}",
        "allocator": "The caching allocator (activations)", "reserved": "reserved", "reserved_bytes": "reserved bytes",
        "allocated_bytes": "allocated bytes", "step": "engine step", "averaged": " (each point the mean of about {} steps)",
        "legend": ("KV blocks used by running requests", "cached, used by none", "free", "batch size (right axis)",
                   "a request preempted (2 under it: two in that step)",
                   "bytes the caching allocator reserved from the device", "bytes allocated from it"),
        "facts": ("{requests} requests", "{generated} tokens generated", "{rate:,.1f} tokens/s", "mean batch {batch:.1f}",
                  "peak running {peak}", "{preemptions} preemptions", "prefix hit rate {hits}",
                  "KV utilization {utilization}", "{copies} copies", "{mallocs} device mallocs",
                  "heap allocations per step {heap} (plain engine {plain})", "tokens equal to the plain engine's: {same}"),
        "same": {True: "yes", False: "NO", None: "not compared (--no-plain)"}, "comma": ", ", "list": ", ",
    },
    "zh": {
        "title": "服务时间线：{manager} 管理器，{who}", "references": "参考答案", "yours": "你的头文件（{}）",
        "headline": "{trace} trace，{manager} 管理器：{kv} 个 KV 块，每块 {tokens} 个 token，{model} 模型{size}，"
                    "{steps} 步，用时 {seconds:.1f} s",
        "weights": "，权重 {}",
        "kv": "KV Cache（以块计）与 batch", "kv_axis": "KV 块", "batch_axis": "这一步中的请求数（batch）",
        "running": "运行中请求所用", "cached": "已缓存，未被任何请求使用", "free": "空闲（池中的空置块）",
        "batch": "batch", "preempted": "第 {steps} 步抢占了 {count:g} 个请求",
        "allocator": "缓存分配器（激活值）", "reserved": "已预留", "reserved_bytes": "已预留的字节",
        "allocated_bytes": "已分配的字节", "step": "引擎步", "averaged": "（每个点是约 {} 步的平均）",
        "legend": ("运行中请求所用的 KV 块", "已缓存，无请求使用", "空闲", "batch 大小（右轴）",
                   "有请求被抢占（其下的 2：该步抢占了两个）", "缓存分配器从设备预留的字节", "从中分配出去的字节"),
        "facts": ("{requests} 个请求", "生成 {generated} 个 token", "{rate:,.1f} tokens/s", "平均 batch {batch:.1f}",
                  "运行中请求峰值 {peak}", "抢占 {preemptions} 次", "前缀命中率 {hits}", "KV 利用率 {utilization}",
                  "复制 {copies} 次", "设备 malloc {mallocs} 次", "每步堆分配 {heap} 次（朴素引擎 {plain}）",
                  "token 与朴素引擎的一致：{same}"),
        "same": {True: "是", False: "否", None: "未比较（--no-plain）"}, "comma": "，", "list": "、",
    },
}

_W, _LEFT, _RIGHT = 1000, 80, 80
_PLOT = _W - _LEFT - _RIGHT
_BLOCKS_TOP, _BLOCKS_HEIGHT = 100, 270          # the KV cache's panel
_BYTES_TOP, _BYTES_HEIGHT = 100 + 270 + 60, 150  # the caching allocator's, under it


def svg(result: dict, title: str, lang: str = "en") -> str:
    """The run's timeline as a standalone SVG document: per step, the KV blocks held by running
    requests, cached and free as a stacked area with the batch size over them and the preemptions
    marked; below, the caching allocator's reserved and allocated bytes. Its words are in `lang`."""
    w = TIMELINE_WORDS[lang]
    t = result["timeline"]
    n = len(t["batch"])
    groups = figures.buckets(n, _PLOT)
    mean = {k: [sum(t[k][i] for i in g) / len(g) for g in groups] for k in TIMELINE}
    xs = [_LEFT + (_PLOT * (i + 0.5) / len(groups) if len(groups) > 1 else _PLOT / 2) for i in range(len(groups))]
    half = _PLOT / len(groups) / 2 if groups else 0
    out = [figures.heading(_LEFT, _BLOCKS_TOP - 20, w["kv"])]
    out += _kv_panel(mean, result["kv_blocks"], xs, half, w)
    out += _preemptions([sum(t["preempted"][i] for i in g) for g in groups], groups, xs, w)
    drawn, bytes_panel = _allocator_panel(mean, xs, half, w)
    out += drawn + _step_axis(bytes_panel, n, len(groups), w)
    legend = [(kind, colour, name) for (kind, colour), name in zip(_LEGEND, w["legend"])]
    shown_legend, below = figures.legend(legend[:5] + [None] + legend[5:], _LEFT, _BYTES_TOP + _BYTES_HEIGHT + 58,
                                         _W - 20)
    facts, height = figures.paragraph(_facts(result, w), 20, below + 8, _W - 20, separator=w["comma"])
    return figures.document(_W, height + 16, title, headline(result, lang), out + [shown_legend, facts])


# The legend's swatches, in the order of its words; a row ends after the fifth.
_LEGEND = [("rect", figures.RUNNING), ("rect", figures.CACHED), ("rect", figures.FREE), ("line", figures.BATCH),
           ("mark", figures.PREEMPTED), ("line", figures.RESERVED), ("line", figures.ALLOCATED)]


def _kv_panel(mean: dict[str, list[float]], kv_blocks: int, xs: list[float], half: float, w: dict) -> list[str]:
    """The blocks held by running requests, cached and free, stacked, and the batch over them.
    The blocks' scale ends at the budget (running + cached + free), marked, so the stack fills it."""
    stacked = [("running_blocks", figures.RUNNING, w["running"]), ("cached_blocks", figures.CACHED, w["cached"]),
               ("free_blocks", figures.FREE, w["free"])]
    most = max([sum(column) for column in zip(*(mean[k] for k, _, _ in stacked))] + [kv_blocks, 1])
    blocks = figures.Plot(_LEFT, _LEFT + _PLOT, _BLOCKS_TOP, _BLOCKS_HEIGHT,
                          [v for v in figures.nice(most) if v <= most * 0.93] + [most])
    batch = figures.Plot(_LEFT, _LEFT + _PLOT, _BLOCKS_TOP, _BLOCKS_HEIGHT, figures.nice(max(mean["batch"] + [1])))
    out = [blocks.grid(), blocks.axis(w["kv_axis"]), batch.axis(w["batch_axis"], "right", figures.BATCH, _W - 20)]
    lower = [0.0] * len(xs)
    for key, colour, name in stacked if xs else ():
        upper = [a + b for a, b in zip(lower, mean[key])]
        out.append(figures.band([(x, blocks.y(u), blocks.y(v)) for x, u, v in zip(xs, upper, lower)], half, colour,
                                name))
        lower = upper
    if xs:
        out.append(figures.steps([(x, batch.y(v)) for x, v in zip(xs, mean["batch"])], half, figures.BATCH,
                                 w["batch"], 1.2))
    return out + [blocks.frame()]


def _preemptions(counts: list[float], groups: list[range], xs: list[float], w: dict) -> list[str]:
    """A mark over the plot at each point with a preemption, and a line down through it.
    Several in one step (or one point) share a mark: under its tip, inside the plot, the count, on
    a white halo that hides the line (unless the last count is too close to leave it room)."""
    out = []
    top, colour = _BLOCKS_TOP, figures.PREEMPTED
    counted_to = -math.inf  # where the last count written under a mark ends
    for cx, count, g in zip(xs, counts, groups):
        if not count:
            continue
        steps = f'{g[0]}{"-" + str(g[-1]) if len(g) > 1 else ""}'
        out.append(f'<path d="M{cx:.1f},{top - 2} l-4,-8 h8 z" fill="{colour}">'
                   f'<title>{w["preempted"].format(count=count, steps=steps)}</title></path>'
                   f'<line x1="{cx:.1f}" y1="{top}" x2="{cx:.1f}" y2="{top + _BLOCKS_HEIGHT}" stroke="{colour}" '
                   f'stroke-width="0.6" stroke-opacity="0.45"/>')
        label = f"{count:g}"
        if count > 1 and cx - 3.5 * len(label) > counted_to:
            out.append(f'<text x="{cx:.1f}" y="{top + 11}" font-size="10" font-weight="bold" fill="{colour}" '
                       f'text-anchor="middle" stroke="{figures.PAPER}" stroke-width="3" paint-order="stroke">'
                       f'{label}</text>')
            counted_to = cx + 3.5 * len(label) + 2
    return out


def _allocator_panel(mean: dict[str, list[float]], xs: list[float], half: float,
                     w: dict) -> tuple[list[str], figures.Plot]:
    """The caching allocator's reserved and allocated bytes, in MiB, and their plot (the step
    axis goes under it)."""
    reserved = [v / figures.MiB for v in mean["reserved_bytes"]]
    allocated = [v / figures.MiB for v in mean["allocated_bytes"]]
    plot = figures.Plot(_LEFT, _LEFT + _PLOT, _BYTES_TOP, _BYTES_HEIGHT, figures.nice(max(reserved + allocated + [1])))
    drawn = [figures.heading(_LEFT, _BYTES_TOP - 10, w["allocator"]), plot.grid(),
                  plot.axis("MiB")]
    if xs:
        drawn += [figures.band([(x, plot.y(v), plot.y(0)) for x, v in zip(xs, reserved)], half, figures.RESERVED,
                                    w["reserved"], opacity=0.18),
                       figures.steps([(x, plot.y(v)) for x, v in zip(xs, reserved)], half, figures.RESERVED,
                                     w["reserved_bytes"], 1.6),
                       figures.steps([(x, plot.y(v)) for x, v in zip(xs, allocated)], half, figures.ALLOCATED,
                                     w["allocated_bytes"], 1.6)]
    return drawn + [plot.frame()], plot


def _step_axis(plot: figures.Plot, n: int, columns: int, w: dict) -> list[str]:
    """The engine's steps under `plot`; with more steps than columns, how many a point averages."""
    ticks = [v for v in figures.nice(max(n - 1, 1), 8) if v <= max(n - 1, 0)] or [0]
    averaged = w["averaged"].format(f"{n / columns:.{0 if n >= 10 * columns else 1}f}") if columns < n else ""
    return [plot.x_ticks([(_LEFT + (_PLOT * (v + 0.5) / n if n > 1 else _PLOT / 2), figures.label(v)) for v in ticks]),
            plot.x_name(w["step"] + averaged)]


def _facts(result: dict, w: dict) -> list[str]:
    """What the run measured, in phrases, under the timeline."""
    values = dict(requests=_int(result["requests"]), generated=_int(result["generated_tokens"]),
                  rate=result["tokens_per_second"], batch=result["mean_batch"], peak=_int(result["peak_running"]),
                  preemptions=_int(result["preemptions"]), hits=_percent(result["prefix_hit_rate"]),
                  utilization=_percent(result["kv_utilization"]), copies=_int(result["copies"]),
                  mallocs=_int(result["device_mallocs"]), heap=_per_step(result["heap_allocations_per_step"]),
                  plain=_per_step(result["plain_heap_allocations_per_step"]),
                  same=w["same"][result["matches_plain_engine"]])
    return [phrase.format(**values) for phrase in w["facts"]]


def draw(result: dict, out: Path, title: str, twins: dict[str, tuple[str, Path]] | None = None) -> None:
    """Writes the timeline to `out`, and to each of `twins` ({language: (title, file)}) the same
    timeline in that language."""
    for lang, (named, path) in {"en": (title, out), **(twins or {})}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg(result, named, lang), encoding="utf-8")


# ---- the sweep ------------------------------------------------------------------------------

SWEEP_FACTORS = (1, 1.5, 2, 3, 4)   # KV budgets, as multiples of the smallest `reserve` can run at


def sweep_table(points: list[dict]) -> str:
    budgets = sorted({p["kv_blocks"] for p in points})
    at = {(p["kv_blocks"], p["manager"]): p for p in points}
    first = points[0]
    lines = [ui.paint(say("serve_sweep_heading", trace=first['trace'], model=first['model'].get('name', '?')),
                      "bold"),
             f"  {'KV blocks':>10}" + "".join(f"{m:>20}" for m in COMPARED)]
    for b in budgets:
        cells = "".join(f"{_int(at[b, m]['tokens_per_second']) + ' (' + format(at[b, m]['mean_batch'], '.1f') + ')':>20}"
                        if (b, m) in at else f"{'—':>20}" for m in COMPARED)
        lines.append(f"  {b:>10}{cells}")
    return "\n".join(lines)


# The sweep's words, in English and in Chinese: the chapter's figure has a Chinese twin.
SWEEP_WORDS = {
    "en": {"title": "Tokens per second against the KV budget", "tokens": "generated tokens per second",
           "batch": "sequences per step (mean batch)", "point": "{manager}, {blocks} blocks: {value:,.1f}",
           "budget": "KV budget, in blocks of {} tokens",
           "subtitle": "The {trace} trace, the {model} model, {runs} runs; the smallest budget is the least reserve "
                       "can serve the trace with"},
    "zh": {"title": "每秒 token 数随 KV 预算的变化", "tokens": "每秒生成的 token 数",
           "batch": "每步的序列数（平均 batch）", "point": "{manager}，{blocks} 块：{value:,.1f}",
           "budget": "KV 预算，单位为 {} 个 token 的块",
           "subtitle": "{trace} trace，{model} 模型，共 {runs} 次运行；最小的预算是 reserve 能服务完这个 trace 的最少块数"},
}


def sweep_svg(points: list[dict], title: str | None = None, lang: str = "en") -> str:
    """Tokens/s and the mean batch of each manager against the KV budget, as a standalone SVG,
    its words in `lang`."""
    w = SWEEP_WORDS[lang]
    budgets = sorted({p["kv_blocks"] for p in points})
    lo, hi = budgets[0], max(budgets[-1], budgets[0] + 1)
    left, right = 90, _W - 40

    def x(b: float) -> float:
        return left + (right - left) * (b - lo) / (hi - lo)

    out: list[str] = []
    panels = (("tokens_per_second", w["tokens"], 100, 260), ("mean_batch", w["batch"], 420, 160))
    for key, name, top, height in panels:
        plot = figures.Plot(left, right, top, height, figures.nice(max([p[key] for p in points] + [1])))
        out += [figures.heading(left, top - 12, name), plot.grid(), plot.axis("")]
        for manager in COMPARED:
            mine = sorted((p["kv_blocks"], p[key]) for p in points if p["manager"] == manager)
            if not mine:
                continue
            colour = figures.MANAGERS[manager]
            line = " ".join(f"{x(b):.1f},{plot.y(v):.1f}" for b, v in mine)
            out.append(f'<polyline class="series" data-series="{manager}" points="{line}" fill="none" '
                       f'stroke="{colour}" stroke-width="2"><title>{manager}</title></polyline>')
            out += [f'<circle cx="{x(b):.1f}" cy="{plot.y(v):.1f}" r="3.5" fill="{colour}"><title>'
                    f'{w["point"].format(manager=manager, blocks=b, value=v)}</title></circle>' for b, v in mine]
        out.append(plot.frame())
    out += [plot.x_ticks([(x(b), str(b)) for b in budgets]),
            plot.x_name(w["budget"].format(points[0]['block_tokens']))]
    shown_legend, bottom = figures.legend([("line", figures.MANAGERS[m], m) for m in COMPARED], left,
                                          plot.top + plot.height + 54, right)
    first = points[0]
    subtitle = w["subtitle"].format(trace=first["trace"], model=first["model"].get("name", "?"), runs=len(points))
    return figures.document(_W, bottom + 4, title or w["title"], subtitle, out + [shown_legend])


def sweep_command(binary: Path, args, catalog: Catalog, blame: bool, chosen: list[Source], out_dir: Path,
                  talk) -> bool:
    """--sweep: the four managers at KV budgets from the smallest `reserve` can run at (its
    default) to SWEEP_FACTORS[-1] times that, one run each, every run's tokens compared with the
    plain engine's by digest; a table, and sweep.svg."""
    before = verdict.load_average()
    first = serve_managers(binary, args, catalog, ("reserve",), 1, None, blame, talk)["reserve"][0]
    plain = judged_by_digest(first, None)
    points = []
    for factor in SWEEP_FACTORS:
        budget = round(first["kv_blocks"] * factor)
        for manager in COMPARED:
            if factor == 1 and manager == "reserve":
                points.append(first)
                continue
            bar = ui.ProgressLine(f"{manager:>7} {budget}")
            result = run(binary, args.trace, manager, catalog.limits.bench_timeout_seconds, budget, bar, blame,
                         args.model, plain is None, args.seed, roofline=True)
            plain = judged_by_digest(result, plain)
            points.append(result)
            print(ui.paint(say("serve_on_budget", manager=manager, budget=budget, rate=result['tokens_per_second']),
                           "dim"),
                  file=talk, flush=True)
    picture = out_dir / "sweep.svg"
    try:
        picture.write_text(sweep_svg(points), encoding="utf-8")
        (out_dir / "zh").mkdir(exist_ok=True)   # its Chinese twin, for the Chinese chapter
        (out_dir / "zh" / "sweep.svg").write_text(sweep_svg(points, lang="zh"), encoding="utf-8")
    except OSError as err:
        raise UsageError(say("serve_unwritable", file=shown(picture), why=err.strerror or err)) from None
    if args.json:
        print(json.dumps([dict(p, **{"with": whose(chosen)}) for p in points]))
    else:
        print()
        print(sweep_table(points))
        # One run a point: the load says how far its tokens/s can be trusted; the batches are exact.
        if load := verdict.load_line(verdict.measured_load(before, verdict.load_average())):
            print(ui.paint(ui.indent(ui.wrap(load, 96), "  ", max_lines=99), "dim"))
        print(ui.paint(say("serve_sweep_drawn", file=shown(out_dir / "zh" / "sweep.svg" if language() == "zh"
                                                         else picture)), "dim"))
    return report_failures([(p["manager"], p) for p in points], blame, talk)


# ---- the command ----------------------------------------------------------------------------

def serve_once(catalog: Catalog, trace: str, manager: str, with_: str = "reference") -> dict:
    """Builds the engine and serves `trace` once, with no display: `check`'s short run. ServeError
    or UsageError when it cannot."""
    chosen = sources(catalog, Progress(), with_)
    binary = build_engine(catalog, with_, chosen)
    result = run(binary, trace, manager, catalog.limits.bench_timeout_seconds)
    result["with"] = whose(chosen)
    return result


TOKENS_DIFFER, LEAK, UNFINISHED = "tokens differ", "a leak", "unfinished"


def failures(result: dict) -> dict[str, str]:
    """What a run shows wrong with the memory, each kind (TOKENS_DIFFER, LEAK, UNFINISHED) with what
    it found: tokens that differ from the plain engine's, blocks held once every request is done,
    requests unfinished. Empty when nothing is."""
    found = {}
    if result["matches_plain_engine"] is False:
        found[TOKENS_DIFFER] = MISMATCH
    if result["leak"] is not None:
        found[LEAK] = result["leak"]
    if result["finished"] != result["requests"]:
        found[UNFINISHED] = f"{result['requests'] - result['finished']} of {result['requests']} requests unfinished"
    return found


def serve_managers(binary: Path, args, catalog: Catalog, managers: tuple[str, ...], repeat: int,
                   kv_blocks: int | None, blame: bool, talk) -> dict[str, list[dict]]:
    """Serves the trace with each manager `repeat` times, in turn (each once, then each again), so
    that a busy spell of the machine slows them alike, all on the first run's KV budget. Only the
    first run also runs the plain engine: the managers must all generate its very tokens, so every
    later run is compared with it by `tokens_digest`."""
    runs: dict[str, list[dict]] = {m: [] for m in managers}
    plain: tuple[str, float] | None = None      # the plain engine's digest and heap figure, once known
    for i in range(repeat):
        for manager in managers:
            bar = ui.ProgressLine(f"{manager:>7}" + (f" {i + 1}/{repeat}" if repeat > 1 else ""))
            result = run(binary, args.trace, manager, catalog.limits.bench_timeout_seconds, kv_blocks, bar, blame,
                         args.model, plain is None, args.seed, roofline=True)
            plain = judged_by_digest(result, plain)
            if kv_blocks is not None and result["kv_blocks"] != kv_blocks:
                raise ServeError(f"the serving engine was asked for {kv_blocks} KV blocks and used "
                                 f"{result['kv_blocks']} with the {manager} manager, so the managers cannot be "
                                 "compared")
            kv_blocks = result["kv_blocks"]   # the runs after the first get the very same budget
            runs[manager].append(result)
            if len(managers) > 1 or repeat > 1:
                print(ui.paint(say("serve_tokens_per_second", manager=manager, rate=result['tokens_per_second']),
                               "dim"), file=talk,
                      flush=True)
    return runs


def beside_the_reference(results: dict[str, dict], args, catalog: Catalog, chosen: list[Source], talk) -> None:
    """Adds to each result of exercise 07's manager (paged, prefix) `reference_manager_heap_per_step`:
    the heap allocations per step that the reference manager makes in the same engine, on the
    same trace, model, seed and budget, so that a learner sees what their own manager costs. When
    the manager is the reference, that is its own figure; otherwise the same engine, built with the
    reference's header in place of the learner's, serves the trace once more (without the plain
    engine), for that count alone."""
    served = [m for m in results if m in PAGED]
    manager = next(s for s in chosen if s.exercise.header == MANAGER_HEADER)
    if not manager.yours:
        for m in served:
            results[m]["reference_manager_heap_per_step"] = results[m]["heap_per_step"]["kv_cache_manager"]
            results[m]["reference_manager"] = verdict.reference_figures(results[m])
        return
    if not served:
        return
    tree_name = SOURCE_TREE if args.source else args.with_
    binary = build_engine(catalog, tree_name, chosen, target=REFERENCE_MANAGER_TARGET)
    for m in served:
        mine = results[m]
        bar = ui.ProgressLine(say("serve_reference_manager", manager=f"{m:>7}"))
        theirs = run(binary, mine["trace"], m, catalog.limits.bench_timeout_seconds, mine["kv_blocks"], bar,
                     model=args.model, plain=False, seed=args.seed)
        mine["reference_manager_heap_per_step"] = theirs["heap_per_step"]["kv_cache_manager"]
        mine["reference_manager"] = verdict.reference_figures(theirs)
        print(ui.paint(say("serve_reference_heap", manager=m,
                           count=_per_step(theirs['heap_per_step']['kv_cache_manager'])), "dim"), file=talk, flush=True)


def judged_by_digest(result: dict, plain: tuple[str, float] | None) -> tuple[str, float] | None:
    """Judges a run made without the plain engine (while `plain`, its digest and heap figure, is
    known) by its `tokens_digest`; a run that was compared and matched makes `plain` known. Returns
    what is known of the plain engine after this run."""
    if plain is not None:
        result["matches_plain_engine"] = result["tokens_digest"] == plain[0]
        result["plain_heap_allocations_per_step"] = plain[1]
        return plain
    if result["matches_plain_engine"]:
        return result["tokens_digest"], result["plain_heap_allocations_per_step"]
    return None


def median_run(runs: list[dict]) -> dict:
    """The run whose tokens/s is the median (the lower one of an even number), with every run's
    tokens/s in `runs_tokens_per_second`, in the order they were served."""
    chosen = dict(sorted(runs, key=lambda r: r["tokens_per_second"])[(len(runs) - 1) // 2])
    if len(runs) > 1:
        chosen["runs_tokens_per_second"] = [r["tokens_per_second"] for r in runs]
    return chosen


def serve_command(args, catalog: Catalog) -> bool:
    if args.compare and args.manager:
        raise UsageError(say("serve_compare_and_manager"))
    if args.sweep and (args.compare or args.manager or args.kv_blocks):
        raise UsageError(say("serve_sweep_and_others"))
    repeat = args.repeat if args.repeat is not None else (3 if args.compare else 1)
    if repeat < 1:
        raise UsageError(say("serve_repeat", repeat=repeat))
    require_sources()
    build.compilers_for(COMPILER)
    talk = sys.stderr if args.json else sys.stdout     # --json keeps standard output for the JSON
    out_dir = Path(args.out) if args.out else OUT
    writable(out_dir)   # before minutes of serving, not after
    chosen = sources(catalog, Progress(), args.with_)
    if args.source:
        chosen = with_source(catalog, chosen, Path(args.source))
    print(ui.paint(say("serve_building", compiler=build.program(COMPILER),
                       what=describe(chosen).replace("\n", say("serve_and"))), "dim"), file=talk, flush=True)
    tree_name = SOURCE_TREE if args.source else args.with_
    if not (tree(tree_name) / TARGET).is_file():
        print(ui.paint(verdict.say("first_build"), "dim"), file=talk, flush=True)
    blame = any(s.yours for s in chosen)
    try:
        binary = build_engine(catalog, tree_name, chosen)
        if args.sweep:
            return sweep_command(binary, args, catalog, blame, chosen, out_dir, talk)
        managers = COMPARED if args.compare else (args.manager or "prefix",)
        before = verdict.load_average()
        runs = serve_managers(binary, args, catalog, managers, repeat, args.kv_blocks, blame, talk)
        load = verdict.measured_load(before, verdict.load_average())
        results = {m: dict(median_run(r), **{"with": whose(chosen)}) for m, r in runs.items()}
        beside_the_reference(results, args, catalog, chosen, talk)
    except ServeError as err:
        print(ui.paint(str(err), "red"), file=talk)
        return False
    decided_well = True
    if args.compare:
        decided_well = judge_managers(results)
    if load is not None and (args.compare or repeat > 1):
        for result in results.values():
            result["load"] = load.as_json()

    pictures = []
    mine = [f"{s.exercise.id:02d}" for s in chosen if s.yours]
    for manager, result in results.items():
        picture = out_dir / (f"timeline-{manager}.svg" if args.compare else "timeline.svg")
        title = {lang: w["title"].format(manager=manager, who=w["yours"].format(w["list"].join(mine)) if mine
                                         else w["references"]) for lang, w in TIMELINE_WORDS.items()}
        try:
            # The Chinese twin beside it (zh/), for the Chinese chapter.
            draw(result, picture, title["en"], {"zh": (title["zh"], out_dir / "zh" / picture.name)})
        except OSError as err:
            raise UsageError(say("serve_timeline_unwritable", file=shown(picture), why=err.strerror or err)) from None
        # The learner is shown the timeline drawn in their language.
        pictures.append(out_dir / "zh" / picture.name if language() == "zh" else picture)
    if args.json:
        listed = [results[m] for m in managers]
        print(json.dumps(listed if args.compare else listed[0]))
    else:
        print()
        print(compare_table(results, mine) if args.compare else summary(results[managers[0]], mine))
        print(ui.paint(say("serve_built_with", what=describe(chosen).replace("\n", say("serve_and"))), "dim"))
        print(ui.paint(say("serve_timelines" if len(pictures) > 1 else "serve_timeline",
                           files=listing(map(shown, pictures))), "dim"))
    every = [(m, r) for m, rs in runs.items() for r in rs]
    return report_failures(every, blame, talk) and decided_well


def report_failures(every: list[tuple[str, dict]], blame: bool, talk) -> bool:
    """Says what any run showed wrong with the memory (tokens, requests unfinished, a leak);
    True when no run did."""
    wrong = sorted({m for m, r in every if r["matches_plain_engine"] is False})
    unfinished = sorted({m for m, r in every if r["finished"] != r["requests"]})
    leaked = dict((m, r["leak"]) for m, r in every if r["leak"] is not None)
    if wrong:
        print(ui.paint(_wrap(then(f"{ui.FAIL} {listing(wrong)}" + say("lead_colon"), say("serve_mismatch"))), "red"),
              file=talk)
        print(ui.indent(_wrap(say("serve_yours_in_engine") if blame else say("serve_kit_wrong")), "  ",
                        max_lines=99), file=talk)
    if unfinished:
        print(ui.paint(say("serve_unfinished", mark=ui.FAIL, managers=listing(unfinished)), "red"),
              file=talk)
    for manager, leak in leaked.items():
        print(ui.paint(_wrap(say("serve_leaked", mark=ui.FAIL, manager=manager, leak=leak)), "red"), file=talk)
    return not wrong and not unfinished and not leaked


def writable(folder: Path) -> None:
    """UsageError unless the timelines can be written into `folder`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".alloclab-write-probe"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as err:
        raise UsageError(say("serve_out_unwritable", folder=shown(folder), why=err.strerror or err)) from None
