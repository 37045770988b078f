"""The command line: one table of commands, the learner's and the maintainer's, and the one
place where an outcome becomes an exit status.

A command's handler returns True when all is good (exit 0) and False when the judged code
failed (exit 1); bad usage or a missing toolchain is a UsageError, raised anywhere, which
ends here as one line on standard error and exit status 2. Handlers are imported when their
command runs, so `test` never loads the docs' or the browser's code."""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import pipe, ui
from .core.build import COMPILER_HELP
from .model import catalog as cat
from .model import words
from .model.errors import UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXERCISE = "1, 01, arena or 01-arena"
LANG_HELP = ("the language of the learner's commands: en or zh (default: the locale, the first of LC_ALL, "
             "LC_MESSAGES and LANG that is set; zh_CN.UTF-8 or any zh... means Chinese). The tests' own messages, "
             "the compiler's and the sanitizers' output, --json and --junit, and the instructors' and "
             "maintainers' commands stay English")


@dataclass(frozen=True)
class Command:
    name: str
    audience: str                                 # "learner", "instructor" or "maintainer"
    help: str
    handler: str                                  # "module:function" under lab/
    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None

    @property
    def maintainers_only(self) -> bool:
        return self.audience == "maintainer"


def _exercise(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", help=EXERCISE)


def _test(p: argparse.ArgumentParser) -> None:
    _exercise(p)
    who = p.add_mutually_exclusive_group()
    who.add_argument("--solution", action="store_true", help="judge the reference solution")
    who.add_argument("--source", metavar="FILE", help="judge FILE in place of the exercise's header")
    p.add_argument("--compiler", default="clang", metavar="C", help=COMPILER_HELP)
    p.add_argument("--stage", type=int, metavar="N", help="build and run stage N only")
    p.add_argument("--seed", type=int, metavar="S", help="the seed of the model stage's random call sequences "
                   "(default: a fixed one, so that every run shows the same sequence)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report "
                   "(judge/schemas/verdict.schema.json describes it)")
    p.add_argument("--junit", metavar="FILE", help="also write the results to FILE as JUnit XML, for CI "
                   "services and autograders (judge/schemas/junit.xsd describes it)")
    p.add_argument("-v", "--verbose", action="store_true", help="every test's messages and raw sanitizer reports")


def _examine(p: argparse.ArgumentParser) -> None:
    _exercise(p)
    p.add_argument("--source", metavar="FILE", help="judge FILE in place of the exercise's my_tests.cpp")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report: valid, "
                   "chaffs_caught, chaffs_total, parts, invalid_tests")


def _watch(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", nargs="?", help=f"{EXERCISE} (default: the first not yet passed)")
    p.add_argument("--compiler", default="clang", metavar="C", help=COMPILER_HELP)


def _solution(p: argparse.ArgumentParser) -> None:
    _exercise(p)
    p.add_argument("--force", action="store_true",
                   help="show it even though your file has not passed yet; this is noted in your progress file")


def _bench(p: argparse.ArgumentParser) -> None:
    from .learner.bench import MIN_TIME, REPETITIONS
    _exercise(p)
    p.add_argument("--compiler", default="clang", metavar="C", help=COMPILER_HELP.replace(", or all (both)", ""))
    p.add_argument("--filter", default="", help="only benchmarks whose name matches this regular expression")
    p.add_argument("--min-time", type=float, default=MIN_TIME,
                   help=f"seconds each repetition of a benchmark runs at least (default {MIN_TIME:g})")
    p.add_argument("--repetitions", type=int, default=REPETITIONS, metavar="N",
                   help=f"runs of each benchmark; the median is shown with the spread (default {REPETITIONS})")


def _serve(p: argparse.ArgumentParser) -> None:
    from .learner.serve import MANAGERS, MODELS, TRACES, WITH
    p.add_argument("--trace", choices=TRACES, default="chat",
                   help="the requests to serve: chat (the default: hundreds of chat requests arriving over time, "
                        "sharing a few system prompts) or tiny (a handful, in seconds)")
    p.add_argument("--with", dest="with_", choices=WITH, default="yours",
                   help="yours (the default): your header for every exercise that has passed, the reference for "
                        "the others; reference: the references only")
    p.add_argument("--manager", choices=MANAGERS,
                   help="the KV block manager: prefix (the default: paged, with prefix caching), paged (caching "
                        "off), reserve (a request's every block taken at admission, as before paging) or virtual "
                        "(exercise 08's contiguous KV cache on the same bytes)")
    p.add_argument("--compare", action="store_true",
                   help="serve the trace with reserve, paged, prefix and virtual on the same KV budget and set them side "
                        "by side")
    p.add_argument("--json", action="store_true",
                   help="print the figures as one JSON object (with --compare, a list of one per manager)")
    p.add_argument("--out", type=Path, metavar="DIR", help="where to draw timeline.svg (default build/serve)")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="serve each manager N times, in turn, and show each by its median run (default: 3 with "
                        "--compare, else 1)")
    p.add_argument("--sweep", action="store_true",
                   help="serve the four managers over KV budgets from the smallest reserve can run at to 4 times "
                        "that, and draw tokens/s against the budget (sweep.svg)")
    p.add_argument("--kv-blocks", type=int, metavar="N", help="the KV budget, in blocks (default: the smallest "
                   "that reserve can serve the trace with)")
    p.add_argument("--seed", type=int, metavar="S", help="the trace's seed (default 7): other requests, of the same shape")
    p.add_argument("--source", metavar="FILE",
                   help="serve with FILE in place of exercise 07's header (kv_cache_manager.hpp), whether it has "
                        "passed or not: to see what the engine makes of any manager")
    p.add_argument("--model", choices=MODELS, default="default",
                   help="default (the model of the chapter's figures) or tiny (a toy model: the same trace in seconds, "
                        "for a quick check of tokens and leaks)")


def _exercise_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--exercises", default="all", metavar="LIST",
                   help="the exercises to grade, comma-separated (1,2,arena), or all (the default)")


def _grade(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", type=Path, metavar="DIR",
                   help="one folder per learner; each exercise's header is found by its file name anywhere below")
    _exercise_list(p)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="(learner, exercise) pairs judged at once (default: the cores)")
    p.add_argument("--out", type=Path, metavar="OUTDIR", help="where the grades go (default build/grades)")
    p.add_argument("--compiler", default="clang", metavar="C", help=COMPILER_HELP)


def _autograder(p: argparse.ArgumentParser) -> None:
    p.add_argument("platform", choices=("gradescope", "prairielearn"), help="the course platform")
    _exercise_list(p)
    p.add_argument("-o", "--out", type=Path, metavar="PATH",
                   help="gradescope: the zip to write (default build/autograder/gradescope.zip); prairielearn: "
                        "the folder to write (default build/autograder/prairielearn)")
    p.add_argument("--image", metavar="NAME[:TAG]",
                   help="prairielearn: the grading image's name in a public registry PrairieLearn pulls from, such "
                        "as you/alloclab-grader (default: $ALLOCLAB_PRAIRIELEARN_IMAGE); the tag is the kit's digest "
                        "unless you give one")


def _hint(p: argparse.ArgumentParser) -> None:
    _exercise(p)
    p.add_argument("--all", action="store_true", help="show again every hint you have taken for the exercise, "
                   "stage by stage, and take no new one")


def _check(p: argparse.ArgumentParser) -> None:
    p.add_argument("exercise", nargs="?", help="check one exercise only (default: all)")
    p.add_argument("--jobs", type=int, default=2, help="judges run at once (default 2)")
    p.add_argument("--no-docs", action="store_true", help="skip the documentation build and its browser check")


def _docs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--maintainer", action="store_true",
                   help="build the maintainer's site instead: the reference solutions with their sources "
                        "in place of the skeletons' contracts, and the authoring guide (build/docs-maintainer/html)")
    p.add_argument("--out", type=Path, help="the folder to build into (the site goes in its html/)")


def _mutate(p: argparse.ArgumentParser) -> None:
    _exercise(p)
    p.add_argument("--jobs", type=int, default=2, help="mutants judged at once (default 2)")
    p.add_argument("--line", type=int, action="append", metavar="N", help="mutate line N only (repeatable)")
    p.add_argument("--list", action="store_true", help="list the mutants without judging them")


COMMANDS = (
    Command("list", "learner", "every exercise in order, with your progress", "learner.verbs:list_command"),
    Command("test", "learner", "build and run an exercise's staged tests", "learner.verbs:test_command", _test),
    Command("examine", "learner", "judge your own tests of an exercise (my_tests.cpp): valid on every correct "
            "implementation, and how many known mistakes they catch", "learner.examine:examine_command", _examine),
    Command("hint", "learner", "the next hint for the first failing test of an exercise (its own hints, then its "
            "stage's), one more each time; --all shows again those you took", "learner.verbs:hint_command", _hint),
    Command("quiz", "learner", "the chapter's self-check: a few questions, each explained once you answer",
            "learner.quiz:quiz_command", _exercise),
    Command("watch", "learner", "judge an exercise each time you save it, and move on when it passes",
            "learner.watch:watch_command", _watch),
    Command("reset", "learner", "put back the untouched skeleton of an exercise (your file is kept as a backup)",
            "learner.workspace:reset_command", _exercise),
    Command("solution", "learner", "show the reference solution, once your own file has passed",
            "learner.workspace:solution_command", _solution),
    Command("bench", "learner", "benchmark your allocator and the reference against real allocators",
            "learner.bench:bench_command", _bench),
    Command("serve", "learner", "run a small LLM serving engine built on your allocators: throughput, KV cache, "
            "heap allocations, a timeline, and proof its tokens equal a plain engine's",
            "learner.serve:serve_command", _serve),
    Command("grade", "instructor", "judge a folder of learners' submissions in parallel: grades.csv, grades.json "
            "and each learner's reports", "instructor.grade:grade_command", _grade),
    Command("autograder", "instructor", "write the autograder a course platform runs: gradescope (a zip) or "
            "prairielearn (an external grader's folder)", "instructor.autograder:autograder_command", _autograder),
    Command("check", "maintainer", "prove the kit: references pass, skeletons fail, mistakes are caught",
            "maintainer.check:check_command", _check),
    Command("doctor", "maintainer", "check the toolchain and name the one command that installs what is missing",
            "maintainer.doctor:doctor_command"),
    Command("docs", "maintainer", "build the learner's HTML site into build/docs/html", "maintainer.docs:docs_command", _docs),
    Command("mutate", "maintainer", "judge single-point mutants of a reference: which ones does the suite let through?",
            "maintainer.mutate:mutate_command", _mutate),
)


# argparse's own words (usage, errors) in the learner's language: they go through its gettext.
argparse._, argparse.ngettext = words.translated, words.translated_plural


def main(argv: list[str]) -> int:
    pipe.tolerate_closed_stdout()
    words.choose(_asked_language(argv))
    asked = _without_language(argv)[:1]
    if any(c.name in asked and c.audience != "learner" for c in COMMANDS):
        words.choose("en", asked=False)   # its usage and its errors too
    parser = _parser(asked)
    args = parser.parse_args(argv)
    command: Command | None = getattr(args, "command", None)
    if command is None:
        parser.print_help()
        return EXIT_USAGE
    if command.audience != "learner":   # an instructor's or a maintainer's output is English, to the byte
        words.choose("en", asked=False)
    try:
        module, function = command.handler.split(":")
        handler = getattr(importlib.import_module(f"{__package__}.{module}"), function)
        return EXIT_OK if handler(args, cat.load()) else EXIT_FAILED
    except UsageError as err:
        print(f"judge: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"\njudge: {words.say('interrupted')}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:  # the judge's own fault: one line, the trace on request
        if os.environ.get("ALLOCLAB_DEBUG"):
            traceback.print_exc()
        print(f"judge: internal error: {type(err).__name__}: {err} (set ALLOCLAB_DEBUG=1 for the trace)",
              file=sys.stderr)
        return EXIT_USAGE


def _asked_language(argv: list[str]) -> str | None:
    """`--lang X` or `--lang=X`, wherever it stands (the last one wins, as in argparse), read
    before the parsing so that the parser's own errors speak the language asked for."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--lang" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--lang="):
            found = arg.split("=", 1)[1]
    return found


def _without_language(argv: list[str]) -> list[str]:
    return [a for i, a in enumerate(argv)
            if a != "--lang" and not a.startswith("--lang=") and (i == 0 or argv[i - 1] != "--lang")]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, words.say("bad_usage", prog=self.prog, message=message) + "\n")


class _Help(argparse.HelpFormatter):
    """The help of the learner's commands in their language, wrapped by terminal columns."""

    def _get_help_string(self, action):
        return words.translated(super()._get_help_string(action))

    def _split_lines(self, text, width):
        return ui.wrap(text, width).splitlines() if not text.isascii() else super()._split_lines(text, width)

    def _fill_text(self, text, width, indent):
        return ui.wrap(text, width, indent, indent) if not text.isascii() else super()._fill_text(text, width, indent)

    def format_help(self):
        # argparse ends a section's heading with an ASCII colon; Chinese takes its own.
        return re.sub(r"^([^\s:][^\n]*[\u4e00-\u9fff]):$", r"\1：", super().format_help(), flags=re.M)


class _TopHelp(_Help):
    """The list of commands (the epilog) keeps its lines as they are written."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True)) if "\n" in text \
            else super()._fill_text(text, width, indent)


def _parser(asked: list[str]) -> argparse.ArgumentParser:
    """The command line, with the arguments of the command `asked` names (argv's first word):
    only that command's arguments are ever parsed, and building the others' would import their
    modules (bench's defaults come from its module) on every start."""
    width = max(len(c.name) for c in COMMANDS) + 2
    listing = "\n\n".join("\n".join([words.translated(f"the {audience}'s commands:"),
                                       *(f"  {c.name:<{width}}{words.translated(c.help)}"
                                         for c in COMMANDS if c.audience == audience)])
                           for audience in ("learner", "instructor", "maintainer"))
    p = _Parser(prog="judge.py", formatter_class=_TopHelp,
                description=words.translated("AllocLab's judge: builds, tests and explains your allocators. Exit "
                "status: 0 all good, 1 the judged code failed, 2 bad usage or a missing toolchain."),
                epilog=listing)
    p.add_argument("--lang", choices=words.LANGUAGES, default=argparse.SUPPRESS, help=LANG_HELP)
    sub = p.add_subparsers(title=words.translated("commands"), metavar="COMMAND",
                           help="one of the commands below")
    for command in COMMANDS:
        s = sub.add_parser(command.name, formatter_class=_Help,
                           description={"maintainer": "(maintainers) ", "instructor": "(instructors) "}.get(
                               command.audience, "") + words.translated(command.help))
        s.add_argument("--lang", choices=words.LANGUAGES, default=argparse.SUPPRESS, help=LANG_HELP)
        if command.name in asked:
            command.arguments(s)
        s.set_defaults(command=command)
    return p
