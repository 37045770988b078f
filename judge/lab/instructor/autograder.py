"""`autograder PLATFORM`: writes what a course platform needs to grade submissions with the kit,
one module per platform (gradescope.py, prairielearn.py). Each grades as `grade` does, through
grading.py, so a learner sees the same verdict there as with `judge.py test`."""
from __future__ import annotations

import importlib

from ..model.catalog import Catalog


def autograder_command(args, catalog: Catalog) -> bool:
    platform = importlib.import_module(f"{__package__}.{args.platform}")
    return platform.package(args, catalog)
