"""What every course platform's grader shares (gradescope.py and prairielearn.py hold only what
their platform reads): the kit's file list, where a platform's grading root is, the container a
submission is graded in, warming its build trees with the references, clipping a report, and
the failure policy: results are written whatever happens, and a failure of the grader itself
says that the fault is not the learner's."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core import build, examining
from ..model.catalog import ROOT, Catalog, Exercise
from ..model.errors import UsageError
from . import grading
from .grading import ExerciseGrade

AUTOGRADERS = ROOT / "judge" / "autograders"   # a folder per platform: what it runs, beside the kit
# What a learner reads when the grader itself failed, one file per platform beside its entry
# point: the entry point's shell script reads it too, since Python may be what could not run.
NOT_YOUR_FAULT_FILE = "not-your-fault.txt"
SKIPPED_IN_KIT = ("build/", ".alloclab/", ".git/")


class GraderFailure(Exception):
    """The grader cannot grade, through no fault of the submission: its message says why."""


def compilers_of(choices: Iterable[str]) -> tuple[str, ...]:
    """The compilers a platform's settings name (each a compiler, or a choice such as `all`), in order."""
    return tuple(c for choice in choices for c in build.compilers_for(choice))


def not_your_fault(platform: str) -> str:
    return (AUTOGRADERS / platform / NOT_YOUR_FAULT_FILE).read_text(encoding="utf-8").strip()


def root_of(variable: str, alias: str, default: Path) -> Path:
    """A platform's grading root: $ALLOCLAB_<PLATFORM>_ROOT, or the name it had before (kept
    working as an alias), or where the platform puts it."""
    return Path(os.environ.get(variable) or os.environ.get(alias) or default)


def kit_files() -> list[str]:
    """The kit's files, relative to its root, that a platform ships: those git tracks or would
    (new files too, nothing git ignores), each present on disk and no symbolic link; outside a
    git checkout, every file but the build trees and the learner's state."""
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, timeout=60)
        if listed.returncode == 0 and listed.stdout:
            names = [n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
            return sorted(n for n in names if (ROOT / n).is_file() and not (ROOT / n).is_symlink())
    except (OSError, subprocess.TimeoutExpired):
        pass
    found = []
    for here, dirs, files in os.walk(ROOT):
        relative = Path(here).relative_to(ROOT).as_posix()
        dirs[:] = sorted(d for d in dirs if f"{relative}/{d}/".lstrip("./") not in SKIPPED_IN_KIT
                         and d != "__pycache__")
        found += [f"{relative}/{f}".removeprefix("./") for f in sorted(files) if not (Path(here) / f).is_symlink()]
    return found


def clipped(text: str, limit: int) -> str:
    """`text` cut to its head and tail when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def reason(err: BaseException) -> str:
    """What a failure of the grader says: the message of one it expects, the type of any other."""
    return str(err) if expected(err) else f"{type(err).__name__}: {err}"


def expected(err: BaseException) -> bool:
    """A failure the grader knows and names itself (no trace needed to find it)."""
    return isinstance(err, (GraderFailure, UsageError))


def trace(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


def results_always(grade: Callable[[], dict], failed: Callable[[BaseException], dict],
                   write: Callable[[dict], None]) -> dict:
    """What `grade` returns, written; whatever it raises, `failed(err)` written instead, so the
    platform always reads results. An interrupt (Ctrl-C, a stop) is raised again once they are
    written: whoever stopped the grader sees it stop."""
    try:
        outcome = grade()
    except BaseException as err:  # noqa: BLE001 - whatever broke, the learner gets results
        outcome = failed(err)
        write(outcome)
        if not isinstance(err, Exception):
            raise
        return outcome
    write(outcome)
    return outcome


def warm(catalog: Catalog, exercises: list[Exercise], compilers: tuple[str, ...],
         slots: list[str]) -> list[tuple[str, ExerciseGrade]]:
    """Each exercise's reference graded as a submission, once in every slot a submission may take
    (the slots side by side): whichever slot an exercise lands in then holds its build, its
    precompiled header and its reference listing; and what judging a learner's own tests needs
    built. Each (slot, grade)."""
    def one(slot: str) -> list[tuple[str, ExerciseGrade]]:
        # The reference is a header without tests of its own: its grade is its stages'.
        return [(slot, grading.grade_header(catalog, dataclasses.replace(ex, test_points=0.0), grading.read_header(ex.solution_file),
                                            compilers, slot)) for ex in exercises]

    # What examine builds once for every learner's tests: the precompiled GoogleTest of each
    # instrumentation, and every implementation written out.
    for ex in exercises:
        if ex.test_points:
            examining.implementations(ex)
            for sanitizer in ex.sanitizers:
                examining.toolchain(ex, sanitizer, catalog.limits)

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        return [graded for found in pool.map(one, slots) for graded in found]


# ---- the container ----------------------------------------------------------------------------

# What one job needs beside the test program it runs: the largest process of a whole grading
# run was a compiler of 372 MB (measured with `/usr/bin/time -v`, all seven references).
COMPILER_MB = 400
JOB_MB = 1024      # a job per this much of the container's memory, at most one per core


def container_memory_mb() -> int | None:
    """The container's memory limit in MB (its cgroup's), or None when it has none."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:
            return int(text) >> 20
        return None
    return None


def fitted(catalog: Catalog) -> tuple[Catalog, int]:
    """The catalog with its memory limit fitted to the container, and the jobs to run at once.
    A platform that kills the whole container when it runs out of memory reads no results at
    all: so no test may reach what is left of the container's memory once the compilers of the
    other jobs have had theirs, and the judge stops it first, with a report that names the
    limit. Without a container limit, the catalog's limits and one job per core."""
    jobs = cores()
    memory = container_memory_mb()
    if memory is None:
        return catalog, jobs
    jobs = max(1, min(jobs, memory // JOB_MB))
    test_mb = max(256, memory // jobs - COMPILER_MB)
    if test_mb >= catalog.limits.memory_mb:
        return catalog, jobs
    return dataclasses.replace(catalog, limits=dataclasses.replace(catalog.limits, memory_mb=test_mb)), jobs


def cores() -> int:
    """The cores this container may use: its CPU affinity, bounded by its cgroup's CPU quota
    (a platform gives an autograder a share of a larger machine, whose every core
    os.cpu_count() counts)."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = None
    try:   # cgroup v2: "max 100000" or "150000 100000"
        limit, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if limit != "max":
            quota = int(limit) / int(period)
    except (OSError, ValueError):
        try:   # cgroup v1
            limit = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
            period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
            if limit > 0 and period > 0:
                quota = limit / period
        except (OSError, ValueError):
            pass
    if quota is not None:
        count = min(count, max(1, round(quota)))
    return max(1, count)
