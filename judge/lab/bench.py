"""`bench`: builds an exercise's Google Benchmark suite twice, optimised, against the learner's
header and against the reference, runs both, and prints how the allocator the exercise builds
compares with every other allocator of the same workload."""
from __future__ import annotations

import json
import re

from . import build, memory_map, progress, run as runner, ui
from .catalog import Catalog, Exercise

_SUFFIX_RE = re.compile(r"/(threads|real_time|process_time|min_time|iterations|repeats|manual_time)(:[^/]*)?$")


def add_parser(sub) -> None:
    s = sub.add_parser("bench", help="benchmark your allocator and the reference against real allocators")
    s.add_argument("exercise")
    s.add_argument("--compiler", default="clang", metavar="C", help=build.COMPILER_HELP.replace(", or all (both)", ""))
    s.add_argument("--filter", default="", help="only benchmarks whose name matches this regular expression")
    s.add_argument("--min-time", type=float, default=0.2, help="seconds each benchmark runs at least (default 0.2)")
    s.set_defaults(run=run)


def split_name(name: str) -> tuple[str, str]:
    """`decode_step/arena/threads:2` -> (`decode_step`, `arena`)."""
    while (m := _SUFFIX_RE.search(name)):
        name = name[: m.start()]
    workload, _, allocator = name.rpartition("/")
    return (workload or name), allocator


def parse(output: str) -> dict[str, dict[str, dict]]:
    """{workload: {allocator: {"ns": time per iteration, "counters": {...}}}} from --benchmark_format=json."""
    data = json.loads(output)
    results: dict[str, dict[str, dict]] = {}
    standard = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
                "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
                "aggregate_name", "aggregate_unit", "label", "error_occurred", "error_message"}
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "iteration":
            continue
        workload, allocator = split_name(b["name"])
        if b.get("error_occurred"):
            results.setdefault(workload, {})[allocator] = {"ns": None, "counters": {},
                                                           "error": b.get("error_message", "")}
            continue
        counters = {k: v for k, v in b.items() if k not in standard and isinstance(v, (int, float))}
        results.setdefault(workload, {})[allocator] = {
            "ns": b["real_time"] * scale.get(b.get("time_unit", "ns"), 1), "counters": counters}
    return results


def measure(catalog: Catalog, exercise: Exercise, impl: build.Impl, compiler: str, min_time: float,
            name_filter: str = "") -> tuple[dict | None, str]:
    """Builds and runs the exercise's benchmarks: ({workload: {allocator: result}}, "") or (None, why not)."""
    tree = build.tree_dir(compiler, "release", impl)
    target = f"bench_{exercise.name}"
    with build.locked(tree):
        built = build.configure_and_build(tree, target, compiler, "release", impl, exercise.name, False,
                                          catalog.limits.build_timeout_seconds)
        if not built.ok:
            error = built.first_error(exercise.exercise_file)
            return None, (f"does not compile: {error.where()}: {error.message}" if error else built.problem)
        argv = [str(tree / target), "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
        if name_filter:
            argv.append(f"--benchmark_filter={name_filter}")
        limit = catalog.limits.bench_timeout_seconds
        result = runner.run(argv, timeout=limit, keep_bytes=4_000_000)
    if result.returncode != 0 or result.timed_out:
        why = f"did not finish in {limit:g} s (limit: bench_timeout_seconds)" if result.timed_out else (
            f"crashed ({result.signal_name})" if result.signal_name else f"failed (exit status {result.returncode})")
        return None, f"the benchmark {why}: {result.stderr.text()[-600:]}"
    try:
        return parse(result.stdout.text()), ""
    except (ValueError, KeyError) as err:
        return None, f"the benchmark's output could not be read: {err}"


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
    return f"{r:.1f}× faster" if r >= 1 else f"{1 / r:.1f}× slower"


def run(args, catalog: Catalog) -> int:
    exercise = catalog.resolve(args.exercise)
    compiler = build.compilers_for(args.compiler)[0]
    if not exercise.bench_dir.is_dir():
        print(f"Exercise {exercise.id:02d} has no benchmarks.")
        return 2
    subject = exercise.bench_subject
    print(ui.paint(f"Building and running the benchmarks of exercise {exercise.id:02d} twice, optimised "
                   f"({build.program(compiler)} -O2): your {exercise.header} and the reference…", "dim"), flush=True)
    if progress.status(exercise).get("status") != "passed":
        print(ui.paint(f"Your {exercise.header} has not passed `judge.py test {exercise.id}` yet: a wrong allocator "
                       "can be fast, so read its figures with care.", "yellow"))
    mine, mine_problem = measure(catalog, exercise, build.Impl("exercises"), compiler, args.min_time, args.filter)
    ref, ref_problem = measure(catalog, exercise, build.Impl("solutions"), compiler, args.min_time, args.filter)
    if mine_problem:
        print(ui.paint(f"Your {exercise.header}: {mine_problem}", "red"))
    if ref_problem:
        print(ui.paint(f"The reference: {ref_problem}", "red"))
    workloads = list(dict.fromkeys([*(ref or {}), *(mine or {})]))
    slow = []
    for workload in workloads:
        mine_w, ref_w = (mine or {}).get(workload, {}), (ref or {}).get(workload, {})
        slow += _print_workload(workload, mine_w, ref_w, subject)
    memory_map.after_bench(exercise, compiler)
    print("\nTimes are per benchmark iteration; a ratio compares the exercise's allocator with the one on "
          "its row, in the same build; yours ÷ reference compares the same row built against your header "
          "and against the reference. Run it twice: the figures move by a few percent from run to run.")
    if slow:
        print(ui.paint(f"\n⚠ Yours is more than {SLOWER_THAN_REFERENCE:g}× slower than the reference on "
                       + ", ".join(slow) + ".", "yellow") + " " + SLOW_CAUSES
              + (" " + SLOW_CAUSES_OF[exercise.id] if exercise.id in SLOW_CAUSES_OF else ""))
    return 0 if ref and mine else 1


def _subject_ns(rows: dict, subject: str) -> float | None:
    return next((v["ns"] for k, v in rows.items() if k.startswith(subject)), None)


SLOWER_THAN_REFERENCE = 1.5   # yours ÷ reference above this is flagged

SLOW_CAUSES = ("What usually makes an allocator slower than the reference: a throw path built inline (a "
               "message string made in the hot function: move it to a [[gnu::cold, gnu::noinline]] helper); "
               "a lock or an atomic on the hot path; a container lookup (a map, a search) per call; memory "
               "touched or cleared that the reference leaves alone. A row that is not your allocator moved "
               "with the machine's load: run it again.")

# The usual cause of one exercise's slowness, printed after SLOW_CAUSES.
SLOW_CAUSES_OF = {
    6: ("In the ring: a `%` in every allocate (the head's offset computed as `head % capacity`, a 64-bit "
        "division; the capacity is a multiple of 4096, not always a power of two, so no mask replaces it: the "
        "reference keeps the offset beside the head and moves it on with each block), or the consumer's tail "
        "loaded on every call where the last tail seen would do."),
}


def _print_workload(workload: str, mine: dict, ref: dict, subject: str) -> list[str]:
    """Prints one workload's table; returns the rows where yours is much slower than the reference."""
    subj_mine, subj_ref = _subject_ns(mine, subject), _subject_ns(ref, subject)
    print("\n" + ui.paint(workload, "bold"))
    print(f"  {'allocator':<24}{'yours':>12}  {'':<20}{'reference':>12}  {'':<20}{'yours ÷ reference':>17}")
    rows = list(dict.fromkeys([*ref, *mine]))
    # Throughput repeats the time; a counter equal on every row describes the workload, not
    # an allocator. What is left (bytes used, say) is worth a line.
    keys = {k for r in (*mine.values(), *ref.values()) for k in r["counters"] if not k.endswith("_per_second")}
    keys = sorted(k for k in keys
                  if len({r["counters"][k] for r in (*mine.values(), *ref.values()) if k in r["counters"]}) > 1)
    slow = []
    for alloc in rows:
        m, r = mine.get(alloc), ref.get(alloc)
        is_subject = alloc.startswith(subject)
        name = ui.paint(f"{alloc:<24}", "cyan") if is_subject else f"{alloc:<24}"
        versus = yours_over_reference(m, r)
        flagged = versus is not None and versus > SLOWER_THAN_REFERENCE
        if flagged:
            slow.append(f"{workload}/{alloc}")
        cell = "—" if versus is None else f"{versus:.2f}" + (" ⚠ slower" if flagged else "")
        print(f"  {name}{_cell(m)}  {'' if is_subject else _ratio(subj_mine, m and m['ns']):<20}"
              f"{_cell(r)}  {'' if is_subject else _ratio(subj_ref, r and r['ns']):<20}"
              + (ui.paint(f"{cell:>17}", "yellow") if flagged else f"{cell:>17}"))
        for key in keys:
            mv, rv = (m or {}).get("counters", {}).get(key), (r or {}).get("counters", {}).get(key)
            print(ui.paint(f"    {key:<22}{_num(mv):>12}  {'':<20}{_num(rv):>12}", "dim"))
        for who, row in (("yours", m), ("the reference", r)):
            if row and row.get("error"):
                print(ui.paint(f"    {who}: {row['error']}", "yellow"))
    return slow


def yours_over_reference(mine: dict | None, ref: dict | None) -> float | None:
    """The time of a row built against your header divided by the same row built against the
    reference: above 1, yours is slower."""
    if not mine or not ref or not mine.get("ns") or not ref.get("ns"):
        return None
    return mine["ns"] / ref["ns"]


def _cell(row: dict | None) -> str:
    if not row or row["ns"] is None:
        return f"{'—':>12}"
    return f"{_fmt_ns(row['ns']):>12}"


def _num(value) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
