"""The command line: one small function per command, each delegating to the module that does
the work."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from . import build, catalog as cat, learner, overview, pipe, progress, report, ui, verify

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad usage or a missing toolchain: exit status 2."""


def main(argv: list[str]) -> int:
    pipe.tolerate_closed_stdout()
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        catalog = cat.load()
        return args.run(args, catalog)
    except (UsageError, build.MissingTool, cat.CatalogError) as err:
        print(f"judge: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\njudge: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # the judge's own fault: one line, the trace on request
        if os.environ.get("ALLOCLAB_DEBUG"):
            traceback.print_exc()
        print(f"judge: internal error: {type(err).__name__}: {err} (set ALLOCLAB_DEBUG=1 for the trace)",
              file=sys.stderr)
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="judge.py", description="AllocLab's judge: builds, tests and explains "
                                "your allocators. Exit status: 0 all good, 1 the judged code failed, 2 bad usage "
                                "or a missing toolchain.")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    s = sub.add_parser("list", help="every exercise in order, with your progress")
    s.set_defaults(run=cmd_list)

    s = sub.add_parser("test", help="build and run an exercise's staged tests")
    s.add_argument("exercise", help="1, 01, arena or 01-arena")
    who = s.add_mutually_exclusive_group()
    who.add_argument("--solution", action="store_true", help="judge the reference solution")
    who.add_argument("--source", metavar="FILE", help="judge FILE in place of the exercise's header")
    s.add_argument("--compiler", default="clang", metavar="C", help=build.COMPILER_HELP)
    s.add_argument("--stage", type=int, metavar="N", help="run stage N only")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of the report "
                   "(judge/schemas/verdict.schema.json describes it)")
    s.add_argument("--junit", metavar="FILE", help="also write the results to FILE as JUnit XML, for CI "
                   "services and autograders (judge/schemas/junit.xsd describes it)")
    s.add_argument("-v", "--verbose", action="store_true", help="every test's messages and raw sanitizer reports")
    s.set_defaults(run=cmd_test)

    s = sub.add_parser("hint", help="the next hint for the first failing test of an exercise (its own hints, "
                                    "then its stage's), one more each time")
    s.add_argument("exercise")
    s.set_defaults(run=cmd_hint)

    from . import bench, check, docs, doctor, mutate, quiz, watch
    quiz.add_parser(sub)
    watch.add_parser(sub)
    learner.add_parsers(sub)
    check.add_parser(sub)
    doctor.add_parser(sub)
    bench.add_parser(sub)
    docs.add_parser(sub)
    mutate.add_parser(sub)
    return p


def cmd_test(args, catalog: cat.Catalog) -> int:
    exercise = catalog.resolve(args.exercise)
    compilers = build.compilers_for(args.compiler)
    if args.source:
        path = Path(args.source).expanduser().resolve()
        if not path.is_file():
            raise UsageError(f"--source {args.source}: no such file")
        impl = build.Impl("source", path)
    else:
        impl = build.Impl("solutions" if args.solution else "exercises")
    stages = ()
    if args.stage is not None:
        if not 1 <= args.stage <= len(exercise.stages):
            raise UsageError(f"exercise {exercise.id} has stages 1 to {len(exercise.stages)}, not {args.stage}")
        stages = (args.stage,)
    if not args.json:
        print(ui.paint(f"Judging {verify.implementation_file(exercise, impl).name} for exercise "
                       f"{exercise.id:02d}…", "dim"), flush=True)
    if impl.kind == "exercises":
        verdict = learner.judge(catalog, exercise, compilers, stages)
    else:
        verdict = verify.judge(catalog, exercise, impl, compilers, stages, werror=impl.kind == "solutions",
                               slot=os.environ.get("ALLOCLAB_SLOT", ""))
    if args.json:
        print(json.dumps(verdict.to_json(), indent=2))
    else:
        command = "python3 judge/judge.py test " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["test"] else ""
        print(report.render(verdict, exercise, args.verbose, command.strip()))
    if args.junit:
        from . import junit
        try:
            junit.write(verdict, Path(args.junit))
        except OSError as err:
            print(f"judge: --junit {args.junit}: cannot write it: {err.strerror or err}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK if verdict.passed else EXIT_FAILED


def cmd_list(args, catalog: cat.Catalog) -> int:
    print(overview.render(catalog))
    return EXIT_OK


def cmd_hint(args, catalog: cat.Catalog) -> int:
    exercise = catalog.resolve(args.exercise)
    if not progress.is_fresh(exercise):  # the last verdict is about another version of the file
        print(ui.paint(f"Judging {exercise.header} to find the first stage that fails…", "dim"), flush=True)
        learner.judge(catalog, exercise, build.compilers_for("clang"))
    print(overview.next_hint(exercise))
    return EXIT_OK
