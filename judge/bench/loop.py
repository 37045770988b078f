#!/usr/bin/env python3
"""The edit-judge loop, measured: `judge.py test N` after a one-line edit, N times each for a header
that passes, one that does not compile and one that fails; prints the medians and where the time goes.

    python3 judge/bench/loop.py [-n 5] [--exercise 1] [--compiler clang] [--against DIR]

The headers judged are copies in a folder of their own, given with --source: the reference with a
comment line added (it passes), the same with a syntax error added (it does not compile), and the
untouched skeleton (it fails its first stage). They are judged in build trees of their own
(ALLOCLAB_SLOT=loop), so the learner's file and trees are never touched. Each edit changes a line of
the file, so the compiler really recompiles every file that includes it.

The first judge is the one before the cycles: on a fresh clone (no build/ folder) it is what a
learner waits for the first time. Wall times move with whatever else the machine runs; the CPU time
(user + system of every child) much less, so both are printed: a CPU time far above the wall time
is two cores at work, a wall time far above it is a machine busy with something else.

--against DIR measures another copy of the kit (a clone of an older commit) in the same run, cycle
by cycle in turn with this one, so that a busy spell of the machine slows both alike: the way to
compare before and after a change.

Last, it prints the floor of a passing re-judge: what no design of the kit takes away (the judge's
start, the compiler's, a link of the sanitizer runtimes, the stages' runs), each measured on its
own, so that a target can be weighed against what the machine and the toolchain allow."""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "judge"))

from lab.core import build, listing  # noqa: E402
from lab.core.judging import test_environment  # noqa: E402
from lab.model import catalog as cat  # noqa: E402

# What each kind of try appends to its copy of a header, and the verdict it must get.
PASSING, COMPILE_ERROR, FAILING = "passing", "compile error", "failing"
KINDS = (PASSING, COMPILE_ERROR, FAILING)
_LAST_LINE = {PASSING: "// edit {i}", COMPILE_ERROR: "int alloclab_loop_edit_{i} = ;", FAILING: "// edit {i}"}


class Kit:
    """One copy of the kit under measurement, with its own copies of the headers and its trees."""

    def __init__(self, root: Path, exercise: cat.Exercise, compiler: str, folder: Path):
        self.root, self.header = root, folder / exercise.header
        folder.mkdir(parents=True)
        folder_of = exercise.tests_dir.name
        sources = {PASSING: root / "solutions" / folder_of / exercise.header,
                   COMPILE_ERROR: root / "solutions" / folder_of / exercise.header,
                   FAILING: root / "exercises" / folder_of / exercise.header}
        self.bases = {kind: path.read_text(encoding="utf-8").splitlines() for kind, path in sources.items()}
        impl = build.Impl("source", self.header)
        self.trees = [root / "build" / build.tree_dir(compiler, s, impl, "loop").name for s in exercise.sanitizers]
        self.fresh = not (root / "build").exists()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ninja_steps(tree: Path, offset: int) -> list[tuple[int, int, str]]:
    """(start ms, end ms, output) of every step ninja logged in `tree` after `offset` bytes."""
    steps = []
    for line in build.ninja_log_since(tree, offset).splitlines():
        fields = line.split("\t")
        if len(fields) >= 4 and fields[0].isdigit():
            steps.append((int(fields[0]), int(fields[1]), fields[3]))
    return steps


def once(kit: Kit, exercise: cat.Exercise, kind: str, compiler: str, i: int) -> dict:
    kit.header.write_text("\n".join(kit.bases[kind] + [_LAST_LINE[kind].format(i=f"{i}_{time.time_ns()}")]) + "\n",
                          encoding="utf-8")
    offsets = {t: build.ninja_log_size(t) for t in kit.trees}
    env = dict(os.environ, ALLOCLAB_SLOT="loop", NO_COLOR="1")
    cpu, start = children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, str(kit.root / "judge" / "judge.py"), "test", str(exercise.id),
                           "--source", str(kit.header), "--compiler", compiler, "--json"],
                          capture_output=True, text=True, env=env, cwd=kit.root)
    wall, cpu = time.monotonic() - start, children_cpu() - cpu
    try:
        verdict = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{kit.root}: the judge printed no verdict:\n{done.stdout[-3000:]}{done.stderr[-2000:]}") from None
    refused = any(c["build"].get("error") for c in verdict["configs"])   # a compiler error in the header
    if (verdict["verdict"] == "passed") != (kind == PASSING) or refused != (kind == COMPILE_ERROR):
        raise SystemExit(f"{kit.root}: the {kind} header was judged {verdict['verdict']}:\n{done.stdout[-3000:]}")
    steps = [s for t in kit.trees for s in ninja_steps(t, offsets[t])]
    compiles = [s for s in steps if s[2].endswith(".o")]
    links = [s for s in steps if Path(s[2]).name.startswith("test_")]
    building = sum(c["build"]["seconds"] for c in verdict["configs"])
    return {
        "wall": wall, "cpu": cpu,
        "python and reporting": wall - verdict["seconds"],
        "build (configure check, compile, link)": building,
        "  compiles (sum of their walls)": sum(s[1] - s[0] for s in compiles) / 1000,
        "  links (sum of their walls)": sum(s[1] - s[0] for s in links) / 1000,
        "runs and checks after the builds": verdict["seconds"] - building,
    }


def median_seconds(argv: list[str], times: int = 5, **popen) -> float:
    """The median wall time of `times` runs of argv, one after another, each of which must succeed."""
    walls = []
    for _ in range(times):
        start = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, **popen)
        walls.append(time.monotonic() - start)
    return statistics.median(walls)


def floor(kit: Kit, exercise: cat.Exercise, compiler: str, limits: cat.Limits) -> dict[str, float]:
    """What a passing re-judge in the first configuration pays whatever the kit does: the judge's
    Python starting, one compiler started (the learner's header must be compiled), a program linked
    as the tree links its test binary (an empty one: the sanitizer runtimes alone), and the stages'
    runs, each measured alone: every stage must run, the longest can take no less than its own
    time, and all of them no less than their sum shared by the cores. Compiling the header itself
    comes on top, and so does every configuration after the first."""
    once(kit, exercise, PASSING, compiler, 0)   # the stages run against the reference
    tree = kit.trees[0]
    sanitizer = exercise.sanitizers[0]
    stages = [s for s in exercise.stages if sanitizer in s.sanitizers]
    link = subprocess.run(["ninja", "-t", "commands", f"test_{exercise.name}"],
                          cwd=tree, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    flags = [w for w in link.split() if w.startswith(("-fsanitize", "-fno-sanitize", "-fuse-ld="))]
    cxx = build.program(compiler)
    with tempfile.TemporaryDirectory(prefix="alloclab-floor-") as tmp:
        (Path(tmp) / "empty.cpp").write_text("int main() {}\n", encoding="utf-8")
        subprocess.run([cxx, *[f for f in flags if "sanitize" in f], "-c", "empty.cpp"], cwd=tmp, check=True)
        figures = {
            "the judge starting (judge.py --help)": median_seconds(
                [sys.executable, str(kit.root / "judge" / "judge.py"), "--help"]),
            f"{cxx} starting (--version)": median_seconds([cxx, "--version"]),
            "an empty program linked as the test binary is": median_seconds([cxx, *flags, "empty.o", "-o", "empty"],
                                                                            cwd=tmp),
        }
        env = test_environment(limits)
        runs = {}
        for stage in stages:
            binary = tree / f"test_{build.program_name(exercise.name, stage.program)}"
            runs[stage.suite] = median_seconds([str(binary), f"--gtest_filter={listing.stage_filter(stage.suite)}"],
                                               times=3, cwd=tmp, env=env)
    longest, cores = max(runs, key=runs.get), os.cpu_count() or 1
    figures[f"the stages' runs: the longest alone ({longest}, {runs[longest]:.2f} s) or all {len(runs)} "
            f"on {cores} cores"] = max(runs[longest], sum(runs.values()) / cores)
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="edit-judge cycles of each kind (default 5)")
    parser.add_argument("--exercise", default="1")
    parser.add_argument("--compiler", default="clang")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another copy of the kit, measured in the same run, cycle by cycle in turn with this one "
                             "(each first in every other cycle)")
    args = parser.parse_args(argv)
    catalog = cat.load()
    exercise = catalog.resolve(args.exercise)
    compiler = build.compilers_for(args.compiler)[0]
    roots = [ROOT] + ([args.against.resolve()] if args.against else [])
    with tempfile.TemporaryDirectory(prefix="alloclab-loop-") as tmp:
        kits = [Kit(root, exercise, compiler, Path(tmp) / str(k)) for k, root in enumerate(roots)]
        rows: dict[Path, dict[str, list[dict]]] = {kit.root: {kind: [] for kind in KINDS} for kit in kits}
        firsts = {}
        for kit in kits:
            print(f"{kit.root}: first judge ({'a fresh clone' if kit.fresh else 'build trees already there'})…",
                  flush=True)
            firsts[kit.root] = once(kit, exercise, PASSING, compiler, 0)
            print(f"  {firsts[kit.root]['wall']:.2f} s wall, {firsts[kit.root]['cpu']:.2f} s CPU", flush=True)
        for i in range(1, args.n + 1):
            # Each kit goes first in every other cycle: of two judges in a row, the first ran half a
            # second slower here, whichever kit it was.
            order = kits if i % 2 else kits[::-1]
            for kind in KINDS:   # interleaved, so that a busy spell of the machine hits every kind and kit alike
                for kit in order:
                    rows[kit.root][kind].append(once(kit, exercise, kind, compiler, i))
            print(f"  cycle {i}: " + "; ".join(
                ", ".join(f"{kind} {rows[kit.root][kind][-1]['wall']:.2f} s" for kind in KINDS) for kit in kits),
                flush=True)
        floors = {kit.root: floor(kit, exercise, compiler, catalog.limits) for kit in kits}
    for kit in kits:
        print(f"\n{kit.root}: exercise {exercise.id:02d} ({build.program(compiler)}), median of {args.n} one-line edits:")
        for kind, runs in rows[kit.root].items():
            print(f"  {kind} header")
            for key in runs[0]:
                values = [r[key] for r in runs]
                print(f"    {key:<40}{statistics.median(values):6.2f} s   (min {min(values):.2f}, max {max(values):.2f})")
    print()
    for kit in kits:
        medians = {kind: (statistics.median(r["wall"] for r in runs), statistics.median(r["cpu"] for r in runs))
                   for kind, runs in rows[kit.root].items()}
        first = firsts[kit.root]
        print(f"  | {exercise.id:02d} | {first['wall']:.1f} s{'' if kit.fresh else ' (trees there)'} | "
              + " | ".join(f"{wall:.2f} s ({cpu:.1f} s CPU)" for wall, cpu in medians.values()) + f" |  {kit.root}")
    print(f"  columns: first judge | {' | '.join(KINDS)}; load average now {os.getloadavg()[0]:.2f}")
    for kit in kits:
        figures = floors[kit.root]
        print(f"\n{kit.root}: the floor of a passing re-judge of {exercise.id:02d} (medians, one after another):")
        for what, seconds in figures.items():
            print(f"    {what:<84}{seconds:6.2f} s")
        print(f"    {'their sum, before the header itself is compiled':<84}{sum(figures.values()):6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
