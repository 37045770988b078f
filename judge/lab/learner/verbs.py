"""The learner's everyday commands: `test` judges an exercise and explains the verdict, `list`
shows the progress over the kit, `hint` gives the next hint for the first failing test."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from . import overview, report, workspace
from ..core import build, judging
from ..model.catalog import Catalog, shown
from ..model.errors import UsageError
from ..model.words import say
from ..model.progress import Progress
from .. import ui


def test_command(args, catalog: Catalog) -> bool:
    exercise = catalog.resolve(args.exercise)
    compilers = build.compilers_for(args.compiler)
    if args.source:
        path = Path(args.source).expanduser().resolve()
        if not path.is_file():
            raise UsageError(say("no_source", file=args.source))
        impl = build.Impl("source", path)
    else:
        impl = build.Impl("solutions" if args.solution else "exercises")
    stages = ()
    if args.stage is not None:
        if not 1 <= args.stage <= len(exercise.stages):
            raise UsageError(say("no_stage", id=exercise.id, count=len(exercise.stages), stage=args.stage))
        stages = (args.stage,)
    if not args.json:
        print(ui.paint(say("judging", file=judging.implementation_file(exercise, impl).name, id=exercise.id), "dim"),
              flush=True)
        _first_build(exercise, impl, compilers[0])
    if impl.kind == "exercises":
        progress = Progress()
        verdict = workspace.judge(catalog, exercise, compilers, progress, stages, args.seed)
        progress.save()
    else:
        verdict = judging.judge(judging.Request(exercise, impl, compilers, stages, werror=impl.kind == "solutions",
                                                slot=os.environ.get("ALLOCLAB_SLOT", ""), seed=args.seed,
                                                compile_only_judged=bool(stages)),
                                catalog.limits)
    if args.json:
        print(json.dumps(verdict.to_json(), indent=2))
    else:
        given = sys.argv[1:]
        verb = next((a for i, a in enumerate(given) if not a.startswith("-") and given[i - 1:i] != ["--lang"]), "")
        command = "python3 judge/judge.py " + " ".join(given) if verb == "test" else ""
        print(report.render(verdict, exercise, args.verbose, command))
    if args.junit:
        from . import junit
        try:
            junit.write(verdict, Path(args.junit))
        except OSError as err:
            raise UsageError(say("junit_unwritable", file=args.junit, why=err.strerror or err)) from None
    return verdict.passed


def _first_build(exercise, impl: build.Impl, compiler: str) -> None:
    """Says so when the tests are not built yet in the tree this run builds in: a first judge
    waits for what later ones find built, and a --source or --solution run has trees of its own,
    apart from the learner's, so that judging another file never rebuilds the learner's tests."""
    tree = build.tree_dir(compiler, exercise.sanitizers[0], impl, os.environ.get("ALLOCLAB_SLOT", ""))
    if (tree / f"test_{exercise.name}").is_file():
        return
    print(ui.paint(say("first_build", tree=shown(tree), id=exercise.id) +
                   (say("first_build_apart") if impl.kind != "exercises" else ""), "dim"), flush=True)


def list_command(args, catalog: Catalog) -> bool:
    print(overview.render(catalog, Progress()))
    return True


def hint_command(args, catalog: Catalog) -> bool:
    exercise = catalog.resolve(args.exercise)
    progress = Progress()
    if getattr(args, "all", False):
        print(overview.hints_seen(exercise, progress))
        return True
    if not progress.is_fresh(exercise):  # the last verdict is about another version of the file
        print(ui.paint(say("judging_for_hint", file=exercise.header), "dim"), flush=True)
        workspace.judge(catalog, exercise, build.compilers_for("clang"), progress)
    print(overview.take_next_hint(exercise, progress))
    progress.save()
    return True
