"""The learner's progress file as the judge's commands use it: loaded, changed, saved, one
command at a time."""
from __future__ import annotations

from pathlib import Path

from lab.learner import overview
from lab.model.catalog import Exercise
from lab.model.progress import Progress


def saved(path: Path, method: str, *args, **kwargs):
    """One command's worth of progress: the file at `path` loaded, one change made, saved."""
    progress = Progress(path)
    result = getattr(progress, method)(*args, **kwargs)
    progress.save()
    return result


def take_hint_at(path: Path, exercise: Exercise) -> str:
    """`hint` on the progress file at `path`: the next hint, counted as taken and saved."""
    progress = Progress(path)
    text = overview.take_next_hint(exercise, progress)
    progress.save()
    return text
