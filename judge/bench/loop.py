#!/usr/bin/env python3
"""The edit-judge loop, measured: a one-line edit of a header that passes, then
`judge.py test 1`, N times; prints the median and where the time goes.

    python3 judge/bench/loop.py [-n 7] [--exercise 1] [--compiler clang]

The header judged is a copy of the reference (so it passes) given with --source, in build
trees of their own (ALLOCLAB_SLOT=loop): the learner's file and trees are never touched. Each
edit changes one comment line, so the compiler really recompiles every stage file. Wall times
move with whatever else the machine runs; the CPU time (user + system of every child) does so
much less, so both are printed."""
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
JUDGE = ROOT / "judge" / "judge.py"
sys.path.insert(0, str(ROOT / "judge"))

from lab.engine import build  # noqa: E402
from lab.model import catalog as cat  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ninja_steps(log: Path, offset: int) -> list[tuple[int, int, str]]:
    """(start ms, end ms, output) of every step ninja logged after `offset` bytes."""
    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    steps = []
    for line in lines:
        fields = line.split("\t")
        if len(fields) >= 4 and fields[0].isdigit():
            steps.append((int(fields[0]), int(fields[1]), fields[3]))
    return steps


def once(exercise: cat.Exercise, header: Path, compiler: str, iteration: int, tree: Path) -> dict:
    text = header.read_text(encoding="utf-8").splitlines()
    text[-1] = f"// edit {iteration} {time.time_ns()}"
    header.write_text("\n".join(text) + "\n", encoding="utf-8")
    log = tree / ".ninja_log"
    offset = log.stat().st_size if log.exists() else 0
    env = dict(os.environ, ALLOCLAB_SLOT="loop", NO_COLOR="1")
    cpu, start = children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, str(JUDGE), "test", str(exercise.id), "--source", str(header),
                           "--compiler", compiler, "--json"], capture_output=True, text=True, env=env, cwd=ROOT)
    wall, cpu = time.monotonic() - start, children_cpu() - cpu
    verdict = json.loads(done.stdout)
    if verdict["verdict"] != "passed":
        raise SystemExit(f"the reference did not pass:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    steps = ninja_steps(log, offset)
    binary = f"test_{exercise.name}"
    links = [s for s in steps if s[2] == binary]
    compiles = [s for s in steps if s[2].endswith(".o")]
    built = sum(c["build"]["seconds"] for c in verdict["configs"])
    return {
        "wall": wall, "cpu": cpu,
        "python and reporting": wall - verdict["seconds"],
        "build (configure check, compile, link)": built,
        "  compile": (max(s[1] for s in compiles) - min(s[0] for s in compiles)) / 1000 if compiles else 0.0,
        "  link": sum(s[1] - s[0] for s in links) / 1000,
        "runs and checks after the build": verdict["seconds"] - built,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=7, help="edit-judge cycles (default 7)")
    parser.add_argument("--exercise", default="1")
    parser.add_argument("--compiler", default="clang")
    args = parser.parse_args(argv)
    catalog = cat.load()
    exercise = catalog.resolve(args.exercise)
    compiler = build.compilers_for(args.compiler)[0]
    tree = build.tree_dir(compiler, exercise.sanitizers[0], build.Impl("source"), "loop")
    with tempfile.TemporaryDirectory(prefix="alloclab-loop-") as tmp:
        header = Path(tmp) / exercise.header
        shutil.copyfile(exercise.solution_file, header)
        header.write_text(header.read_text(encoding="utf-8") + "// edit\n", encoding="utf-8")
        print(f"warming up (first build of {tree.name})…", flush=True)
        once(exercise, header, compiler, 0, tree)
        rows = []
        for i in range(1, args.n + 1):
            rows.append(once(exercise, header, compiler, i, tree))
            print(f"  cycle {i}: {rows[-1]['wall']:.2f} s wall, {rows[-1]['cpu']:.2f} s CPU", flush=True)
    print(f"\nmedian of {args.n} edit-judge cycles of exercise {exercise.id:02d} ({build.program(compiler)}):")
    for key in rows[0]:
        values = [r[key] for r in rows]
        print(f"  {key:<40}{statistics.median(values):6.2f} s   (min {min(values):.2f}, max {max(values):.2f})")
    print(f"  {'load average now':<40}{os.getloadavg()[0]:6.2f}   (other work on the machine moves wall times)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
