"""`bench`: builds an exercise's Google Benchmark suite twice, optimised, against the learner's
header and against the reference, runs both, and prints how the allocator the exercise builds
compares with every other allocator of the same workload.

Every benchmark runs several times, each run a process of its own: a benchmark that changes the
process's state (glibc's malloc settings, a heap grown or fragmented, a static pool) changes no
other row. The runs of all rows are interleaved at random, so that a burst of load on the machine
does not fall on one row alone. A figure is the median of its runs, printed with its spread (the
median distance of a run from that median, as a share of it: one run slowed down by the
machine's load does not blow it up, as a range would), so that a reader can tell a difference
from noise. Only the rows of the exercise's own allocator run the learner's code; the others run
the same code in both builds, so their runs are pooled into one figure, with no yours ÷ reference."""
from __future__ import annotations

import json
import random
import re
import statistics

from ..core import build, program
from . import memory_map
from ..model.errors import UsageError
from ..model.progress import Progress, Standing
from .. import ui
from ..model.catalog import Catalog, Exercise, translated
from ..model.words import WORDS, listing, say, then

_SUFFIX_RE = re.compile(r"/(threads|real_time|process_time|min_time|iterations|repeats|manual_time)(:[^/]*)?$")


# Each benchmark runs REPETITIONS times for at least MIN_TIME seconds each: 5 x 0.04 s costs what
# one run of 0.2 s did, and its median and spread say how far a figure can be trusted. A benchmark
# whose one iteration outlasts MIN_TIME (the device rows of 04, false sharing in 05) costs 5 times
# what it did with one run: that is the price of knowing its spread.
REPETITIONS = 5
MIN_TIME = 0.04


def split_name(name: str) -> tuple[str, str]:
    """`decode_step/arena/threads:2` -> (`decode_step`, `arena`)."""
    while (m := _SUFFIX_RE.search(name)):
        name = name[: m.start()]
    workload, _, allocator = name.rpartition("/")
    return (workload or name), allocator


def parse(output: str) -> dict[str, dict[str, dict]]:
    """{workload: {allocator: {"ns": time per iteration, "runs": [ns of each repetition],
    "spread": the median distance of a run from the median, over the median, "counters": {...}}}} from
    --benchmark_format=json. With repetitions, "ns" is the median of the repetitions and the
    counters are the last repetition's; Google Benchmark's own aggregates are not read."""
    data = json.loads(output)
    results: dict[str, dict[str, dict]] = {}
    standard = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
                "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
                "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    # Repetitions in random order come out in random order: the rows go back to the order the
    # benchmarks were registered in, which is the order the file lists them.
    entries = sorted(data.get("benchmarks", []), key=lambda b: (b.get("family_index", 0),
                                                                 b.get("per_family_instance_index", 0)))
    for b in entries:
        if b.get("run_type") != "iteration":
            continue
        workload, allocator = split_name(b["name"])
        if b.get("error_occurred"):
            results.setdefault(workload, {})[allocator] = {"ns": None, "counters": {},
                                                           "error": b.get("error_message", "")}
            continue
        counters = {k: v for k, v in b.items() if k not in standard and isinstance(v, (int, float))}
        row = results.setdefault(workload, {}).setdefault(allocator, {"ns": 0.0, "runs": [], "counters": {}})
        if row.get("error"):
            continue  # one repetition gave up: the row says so
        row["runs"].append(b["real_time"] * scale.get(b.get("time_unit", "ns"), 1))
        row["counters"] = counters
    for rows in results.values():
        for row in rows.values():
            if row.get("runs"):
                row["ns"], row["spread"] = _median_and_spread(row["runs"])
    return results


def _median_and_spread(runs: list[float]) -> tuple[float, float]:
    """The median of the runs, and the median distance of a run from it as a share of it."""
    median = statistics.median(runs)
    return median, (statistics.median(abs(t - median) for t in runs) / median if median else 0.0)


class BenchError(Exception):
    """The benchmarks could not be measured: they did not compile, or their run gave no figures.
    The message says why, in a line."""


def measure(catalog: Catalog, exercise: Exercise, impl: build.Impl, compiler: str, min_time: float,
            name_filter: str = "", repetitions: int = 1) -> dict:
    """Builds and runs the exercise's benchmarks, each `repetitions` times: {workload: {allocator:
    result}}, or BenchError. `check` runs each once, briefly: it asks whether they process."""
    tree = build.tree_dir(compiler, "release", impl)
    target = f"bench_{exercise.name}"
    with build.locked(tree):
        built = build.configure_and_build(tree, target, build.Request(exercise, impl, (compiler,)), compiler,
                                          "release", catalog.limits.build_timeout_seconds)
        if not built.ok:
            error = built.first_error(exercise.exercise_file)
            raise BenchError(say("bench_does_not_compile", where=error.where(), message=error.message)
                             if error else built.problem)
        binary = str(tree / target)
        list_argv = [binary, "--benchmark_list_tests=true"] + ([f"--benchmark_filter={name_filter}"] if name_filter else [])
        names = _ask(catalog, list_argv, lambda out: [line.strip() for line in out.splitlines() if line.strip()])
        # One process per run of a benchmark, the runs of every row shuffled together.
        runs = [index for index in range(len(names)) for _ in range(repetitions)]
        random.shuffle(runs)
        entries = []
        for index in runs:
            argv = [binary, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
                    f"--benchmark_filter={_exactly(names[index])}"]
            for entry in _ask(catalog, argv, json.loads).get("benchmarks", []):
                # The order of the file, which a process running one benchmark cannot tell.
                entries.append({**entry, "family_index": index, "per_family_instance_index": 0})
        return parse(json.dumps({"benchmarks": entries}))


_REGEX_SPECIAL_RE = re.compile(r"[.^$|()\[\]{}*+?\\]")


def _exactly(name: str) -> str:
    """A --benchmark_filter that selects the benchmark `name` and no other."""
    return "^" + _REGEX_SPECIAL_RE.sub(lambda m: "\\" + m.group(), name) + "$"


def _ask(catalog: Catalog, argv: list[str], read):
    try:
        return program.ask(argv, read, what="the benchmark", timeout=catalog.limits.bench_timeout_seconds,
                           limit="bench_timeout_seconds", keep_bytes=4_000_000)
    except program.Failed as failed:
        raise BenchError(str(failed)) from None


def _fmt_ns(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:8.2f} {unit}"
    return f"{ns:8.1f} ns"


def _ratio(subject: float | None, other: float | None) -> str:
    """How the exercise's allocator compares with another one, e.g. `12.3× faster`."""
    if not subject or not other:
        return ""
    r = other / subject
    return say("bench_faster", ratio=r) if r >= 1 else say("bench_slower", ratio=1 / r)


def comparison(subject: str, other: str, subject_mine: float | None, mine: dict | None,
               subject_ref: float | None, ref: dict | None) -> str:
    """Which is compared with which, on the row of another allocator: `caching 210.0× faster
    than device with your header; 205.3× faster with the reference`. Empty without figures."""
    yours = _ratio(subject_mine, mine and mine["ns"])
    reference = _ratio(subject_ref, ref and ref["ns"])
    if not yours and not reference:
        return ""
    if yours and reference:
        return say("bench_both", subject=subject, yours=yours, other=other, reference=reference)
    return say("bench_one_yours" if yours else "bench_one_reference", subject=subject, ratio=yours or reference,
               other=other)


def bench_command(args, catalog: Catalog) -> bool:
    exercise = translated(catalog.resolve(args.exercise))
    compiler = build.compilers_for(args.compiler)[0]
    if not exercise.bench_dir.is_dir():
        raise UsageError(say("no_benchmarks", id=exercise.id))
    subject = exercise.bench_subject
    repetitions = max(1, args.repetitions)
    print(ui.paint(say("bench_building", id=exercise.id, compiler=build.program(compiler), header=exercise.header,
                       repetitions=repetitions, s="s" if repetitions > 1 else ""), "dim"), flush=True)
    if Progress().standing(exercise)[0] != Standing.PASSED:
        print(ui.paint(say("bench_not_passed", header=exercise.header, id=exercise.id), "yellow"))
    mine = ref = None
    for whose, impl in ((say("bench_yours", header=exercise.header), "exercises"),
                        (say("bench_reference"), "solutions")):
        try:
            figures = measure(catalog, exercise, build.Impl(impl), compiler, args.min_time, args.filter, repetitions)
        except BenchError as err:
            print(ui.paint(say("bench_failed", whose=whose, error=err), "red"))
            continue
        if impl == "exercises":
            mine = figures
        else:
            ref = figures
    workloads = list(dict.fromkeys([*(ref or {}), *(mine or {})]))
    slow = []
    for workload in workloads:
        mine_w, ref_w = (mine or {}).get(workload, {}), (ref or {}).get(workload, {})
        slow += _print_workload(workload, mine_w, ref_w, subject)
    memory_map.after_bench(exercise, compiler)
    print("\n" + footnote(subject, [mine, ref], repetitions))
    if slow:
        # The usual causes, then the usual cause of this exercise's slowness where it has one.
        causes = say("slow_causes")
        if f"slow_causes_{exercise.id}" in WORDS:
            causes = then(causes, say(f"slow_causes_{exercise.id}"))
        too_slow = say("bench_too_slow", times=SLOWER_THAN_REFERENCE, rows=listing(slow))
        print(ui.paint(too_slow, "yellow") + then(too_slow, causes)[len(too_slow):])
    return bool(ref and mine)


def footnote(subject: str, measured: list[dict | None], repetitions: int) -> str:
    """What the figures are, and how much they moved in this very process."""
    spreads = sorted(row["spread"] for results in measured for rows in (results or {}).values()
                     for row in rows.values() if row.get("spread") is not None and len(row.get("runs", ())) > 1)
    how = say("bench_repeated", repetitions=repetitions) if repetitions > 1 else say("bench_once")
    text = say("bench_footnote", how=how, subject=subject)
    if spreads:
        text += say("bench_spreads", median=statistics.median(spreads), most=spreads[-1])
    return text


def _subject_ns(rows: dict, subject: str) -> float | None:
    return next((v["ns"] for k, v in rows.items() if k.startswith(subject)), None)


def _subject_name(rows: list[str], subject: str) -> str:
    return next((k for k in rows if k.startswith(subject)), subject)


SLOWER_THAN_REFERENCE = 1.5   # yours ÷ reference above this is flagged

def _print_workload(workload: str, mine: dict, ref: dict, subject: str) -> list[str]:
    """Prints one workload's table; returns the rows where yours is much slower than the reference.
    yours ÷ reference is printed on the exercise's own rows only: the other rows run none of the
    learner's code, so the two builds of them differ by noise alone."""
    subj_mine, subj_ref = _subject_ns(mine, subject), _subject_ns(ref, subject)
    print("\n" + ui.paint(workload, "bold"))
    allocator, yours, reference, versus = say("bench_columns").split("|")
    print(f"  {ui.pad(allocator, 24)}{_right(yours, 12)} {'':<7}{_right(reference, 12)} {'':<7}{_right(versus, 19)}")
    rows = list(dict.fromkeys([*ref, *mine]))
    subject_row = _subject_name(rows, subject)
    # Throughput repeats the time; a counter equal on every row describes the workload, not
    # an allocator. What is left (bytes used, say) is worth a line.
    keys = {k for r in (*mine.values(), *ref.values()) for k in r["counters"] if not k.endswith("_per_second")}
    keys = sorted(k for k in keys
                  if len({r["counters"][k] for r in (*mine.values(), *ref.values()) if k in r["counters"]}) > 1)
    slow = []
    for alloc in rows:
        m, r = mine.get(alloc), ref.get(alloc)
        is_subject = alloc.startswith(subject)
        if not is_subject:
            m = r = pooled(m, r)
        name = ui.paint(f"{alloc:<24}", "cyan") if is_subject else f"{alloc:<24}"
        versus = yours_over_reference(m, r) if is_subject else None
        flagged = versus is not None and versus > SLOWER_THAN_REFERENCE
        if flagged:
            slow.append(f"{workload}/{alloc}")
        cell = ("—" if versus is None else f"{versus:.2f}" + (say("bench_slower_mark") if flagged else "")) \
            if is_subject else ""
        if is_subject:
            line = f"  {name}{_cell(m)} {_spread(m):<7}{_cell(r)} {_spread(r):<7}"
            print(line + (ui.paint(_right(cell, 19), "yellow") if flagged else _right(cell, 19)))
        else:
            print(f"  {name}{_cell(m)} {_spread(m):<7}" + ui.paint(say("bench_pooled_row"), "dim"))
        if not is_subject and (line := comparison(subject_row, alloc, subj_mine, m, subj_ref, r)):
            print(ui.paint(f"    {line}", "dim"))
        for key in keys:
            mv, rv = (m or {}).get("counters", {}).get(key), (r or {}).get("counters", {}).get(key)
            print(ui.paint(f"    {key:<22}{_num(mv):>12}" + (f"  {'':<6}{_num(rv):>12}" if is_subject else ""), "dim"))
        for who, row in ((say("bench_row_error_yours"), m), (say("bench_row_error_reference"), r)) if is_subject \
                else ((say("bench_row_error_both"), m),):
            if row and row.get("error"):
                print(ui.paint(f"    {say('bench_failed', whose=who, error=row['error'])}", "yellow"))
    return slow


def _right(text: str, width: int) -> str:
    """`text` right-aligned in `width` terminal columns (a Chinese character takes two)."""
    return " " * max(width - ui.columns(text), 0) + text


def pooled(mine: dict | None, ref: dict | None) -> dict | None:
    """One row from the same benchmark's runs in both builds, for a row that runs none of the
    learner's code: the median and spread of all its runs. A build whose row failed adds nothing;
    when both failed, the reference's failure stands."""
    rows = [row for row in (mine, ref) if row and row.get("ns")]
    if not rows:
        return ref or mine
    runs = [t for row in rows for t in (row.get("runs") or [row["ns"]])]
    median, spread = _median_and_spread(runs)
    return {"ns": median, "runs": runs, "spread": spread, "counters": rows[-1]["counters"]}


def yours_over_reference(mine: dict | None, ref: dict | None) -> float | None:
    """The time of a row built against your header divided by the same row built against the
    reference: above 1, yours is slower."""
    if not mine or not ref or not mine.get("ns") or not ref.get("ns"):
        return None
    return mine["ns"] / ref["ns"]


def _cell(row: dict | None) -> str:
    if not row or not row.get("ns"):
        return f"{'—':>12}"
    return f"{_fmt_ns(row['ns']):>12}"


def _spread(row: dict | None) -> str:
    """`±3%`: the median distance of the row's repetitions from their median, over it; empty with one process."""
    if not row or not row.get("ns") or len(row.get("runs", ())) < 2:
        return ""
    return f"±{row['spread']:.0%}" if row["spread"] >= 0.005 else "±<1%"


def _num(value) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
