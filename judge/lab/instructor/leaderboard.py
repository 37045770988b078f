"""The leaderboard a course platform shows beside a submission's score: each passed exercise's
benchmark time, the learner's allocator ÷ the reference's."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from ..core import build
from ..learner import bench
from ..model.catalog import Catalog, Exercise
from .grading import ExerciseGrade

# The leaderboard's benchmarks run briefly: 3 repetitions of 0.02 s each, where `bench` runs 5
# of 0.04 s. One repetition was not enough: on one core, the references against themselves gave
# 1.57 for 01 and 45763 for 06, whose staging workload is two threads handing steps over. A
# figure whose repetitions moved by more than NOISY (bench's spread: the median distance of a
# repetition from the median, as a share of it) is left off the leaderboard, with a note.
# Only single-threaded rows count: a row of two threads handing work over (06's staging, 02's
# shared pool, 05's false sharing; Google Benchmark names them .../real_time or .../threads:N)
# times the machine's scheduler as much as the allocator, and on a platform's half a CPU the
# second thread may wait a whole time slice.
BENCH_MIN_TIME = 0.02
BENCH_REPETITIONS = 3
NOISY = 0.25
SINGLE_THREADED = "-(real_time|threads:)"   # Google Benchmark's filter: a leading - excludes what matches


@dataclass(frozen=True)
class Figure:
    """One exercise's place on the leaderboard: its time, yours ÷ the reference's."""
    label: str       # 01 arena
    ratio: float

    def to_json(self) -> dict:
        return {"name": f"{self.label}: time, yours ÷ reference", "value": round(self.ratio, 3), "order": "asc"}


def board(catalog: Catalog, exercises: list[Exercise], grades: list[ExerciseGrade], submission: Path,
          compiler: str) -> tuple[list[Figure], list[str]]:
    """The leaderboard: for each exercise that passed every stage and has benchmarks, the median
    over its single-threaded workloads of the exercise's allocator's time, your header ÷ the
    reference. With the notes on the figures that could not be measured."""
    entries, notes = [], []
    for exercise, grade in zip(exercises, grades):
        if grade.score < grade.max_score or grade.max_score == 0 or not exercise.bench_dir.is_dir() \
                or not exercise.bench_subject:
            continue
        ratio, problem = bench_ratio(catalog, exercise, submission / grade.source, compiler)
        if ratio is None:
            notes.append(f"{exercise.id:02d}: the leaderboard's benchmark could not be measured ({problem})")
            continue
        entries.append(Figure(f"{exercise.id:02d} {exercise.slug}", ratio))
    return entries, notes


def bench_ratio(catalog: Catalog, exercise: Exercise, header: Path, compiler: str) -> tuple[float | None, str]:
    """The median over the exercise's single-threaded workloads of yours ÷ reference on the
    exercise's own rows, each benchmark run 3 times, briefly. (None, why) when it cannot be measured."""
    try:
        mine = bench.measure(catalog, exercise, build.Impl("source", header.resolve()), compiler,
                             BENCH_MIN_TIME, SINGLE_THREADED, BENCH_REPETITIONS)
    except bench.BenchError as err:
        return None, f"your header: {err}"
    try:
        ref = bench.measure(catalog, exercise, build.Impl("solutions"), compiler, BENCH_MIN_TIME,
                            SINGLE_THREADED, BENCH_REPETITIONS)
    except bench.BenchError as err:
        return None, f"the reference: {err}"
    ratios = []
    for workload, rows in mine.items():
        for allocator, row in rows.items():
            if not allocator.startswith(exercise.bench_subject):
                continue
            other = ref.get(workload, {}).get(allocator)
            spread = max((r or {}).get("spread", 0.0) for r in (row, other))
            if spread > NOISY:
                return None, (f"{workload}/{allocator} moved by ±{spread:.0%} from one repetition to the next, too "
                              "much to rank")
            value = bench.yours_over_reference(row, other)
            if value is not None:
                ratios.append(value)
    if not ratios:
        return None, f"no benchmark of {exercise.bench_subject} gave a time"
    return statistics.median(ratios), ""
