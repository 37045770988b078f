"""Build trees: one per compiler, instrumentation and implementation, configured with CMake and
built with Ninja. A judge holds a tree's lock while it builds and runs, so two judges started at
once on the same tree take turns instead of corrupting each other."""
from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import shlex
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import process
from ..model.catalog import COMPILERS, ROOT, Exercise, program
from ..model.errors import UsageError
from ..model.results import Diagnostic
from ..model.words import language, say

COMPILER_HELP = "clang (clang++, the default), gcc (g++), any C++ compiler on PATH such as clang++-19, or all (both)"
BUILD_ROOT = ROOT / "build"


@dataclass(frozen=True)
class Impl:
    """What a build compiles: the learner's `exercises`, the reference `solutions`, or one file."""
    kind: str                 # "exercises" | "solutions" | "source"
    path: Path | None = None  # with "source"

    @property
    def label(self) -> str:
        return str(self.path) if self.kind == "source" else self.kind


@dataclass(frozen=True)
class Request:
    """What to judge: an implementation of an exercise, built by which compilers, on which
    stages. `test`, `check`, `mutate` and the learner's loop all judge through one
    (judging.judge), and every build is configured from one: a tree's cache holds its
    implementation, werror and line_tables."""
    exercise: Exercise
    impl: Impl
    compilers: tuple[str, ...]
    stages: tuple[int, ...] = ()        # the stages to judge by number; () for all
    werror: bool = False                # warnings are errors (the references and skeletons in `check`)
    slot: str = ""                      # build trees of their own (tree_dir)
    line_tables: bool = True            # False: no line tables, where no report's lines are read (check)
    sanitizers: tuple[str, ...] = ()    # the instrumentations to build with; () for the exercise's
    seed: int | None = None             # the model stage's seed; None for its fixed default
    every_stage: bool = False           # build a stage's own program even when a stage before it failed
    shrink: bool = True                 # shrink a failing model sequence (`check` only asks whether it fails)
    compile_only_judged: bool = False   # leave the stages not judged out of the binary (faster to build)
    tests: tuple[str, ...] = ()         # run only these tests of the stages judged (`check` asks a known
                                        # mistake about the tests it names); () for every test
    tree_of: Impl | None = None         # build in the tree of this implementation instead (`check` judges
                                        # g++'s skeleton in its reference's tree, and compiles again only
                                        # what includes the header)


@dataclass
class BuildResult:
    ok: bool
    seconds: float
    diagnostics: list[Diagnostic]
    problem: str = ""    # set when the build failed without a compiler diagnostic (time-out, linker, CMake)

    def first_error(self, focus: Path | None) -> Diagnostic | None:
        errors = [d for d in self.diagnostics if d.severity == "error"]
        if focus:
            mine = [d for d in errors if _same_file(d.file, focus)]
            if mine:
                return mine[0]
        return errors[0] if errors else None

    def warnings_in(self, focus: Path | None) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning" and (focus is None or _same_file(d.file, focus))]


class MissingTool(UsageError):
    """A compiler or build tool the judge needs is not installed."""


def compilers_for(choice: str) -> tuple[str, ...]:
    """The compilers `clang`, `gcc`, `all` or the name of any C++ compiler on PATH (such as
    `clang++-19`) stand for, once it is sure they and CMake and Ninja are here."""
    chosen = tuple(COMPILERS) if choice == "all" else (choice,)
    missing = [program(c) for c in chosen if not shutil.which(program(c))]
    missing += [tool for tool in ("cmake", "ninja") if not shutil.which(tool)]
    if missing:
        raise MissingTool(missing_tool_message(missing))
    return chosen


def install_command() -> str | None:
    """The one command that installs the whole toolchain here, or None where it cannot
    (no apt-get: the development container is the way)."""
    if not shutil.which("apt-get"):
        return None
    return "bash .ci/install" if os.geteuid() == 0 else "sudo bash .ci/install"


def missing_tool_message(missing: list[str]) -> str:
    tools = ("、" if language() == "zh" else ", ").join(missing)
    install = install_command()
    return say("missing_tool", tools=tools, install=install) if install else say("missing_tool_elsewhere", tools=tools)


def newer_clangs() -> tuple[str, ...]:
    """Versioned clang++ programs on PATH (`clang++-19`) other than the one `clang++` runs,
    newest first: `check` judges every reference with them too."""
    default = os.path.realpath(shutil.which("clang++") or "")
    found: dict[str, int] = {}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        for path in Path(folder or ".").glob("clang++-[0-9]*"):
            if (m := re.fullmatch(r"clang\+\+-(\d+)", path.name)) and os.access(path, os.X_OK) \
                    and os.path.realpath(path) != default and path.name not in found:
                found[path.name] = int(m.group(1))
    return tuple(sorted(found, key=found.get, reverse=True))


def tree_dir(compiler: str, sanitizer: str, impl: Impl, slot: str = "") -> Path:
    """`build/clang-asan` is the learner's tree, the same one `cmake --preset clang-asan` makes."""
    name = f"{Path(compiler).name}-{sanitizer}"
    if impl.kind != "exercises":
        name += f"-{impl.kind}"
    return BUILD_ROOT / (name + (f"-{slot}" if slot else ""))


def request_tree(request: Request, compiler: str, sanitizer: str) -> Path:
    """The tree a request builds in with one compiler and instrumentation (its tree_of's, if any)."""
    return tree_dir(compiler, sanitizer, request.tree_of or request.impl, request.slot)


@contextmanager
def locked(tree: Path):
    tree.mkdir(parents=True, exist_ok=True)
    ids = process.run_as()
    if ids:
        # Every time, not only when the folder itself belongs to another user: a tree handed over
        # once and later built by the judge as itself holds files its own user cannot replace.
        process.hand_over(tree, recursive=True)
    with open(tree / ".judge.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cache_values(tree: Path) -> dict[str, str]:
    values = {}
    try:
        for line in (tree / "CMakeCache.txt").read_text(errors="replace").splitlines():
            if m := re.match(r"^([A-Za-z_]\w*):\w+=(.*)$", line):
                values[m.group(1)] = m.group(2)
    except OSError:
        pass
    return values


def ninja_log_size(tree: Path) -> int:
    """How many bytes Ninja has logged in `tree` so far (0 before its first build): an offset for
    `ninja_log_since`."""
    try:
        return (tree / ".ninja_log").stat().st_size
    except OSError:
        return 0


def ninja_log_since(tree: Path, offset: int) -> str:
    """What Ninja logged in `tree` after `offset` bytes: a line per step that succeeded (start and
    end in ms, mtime, output, hash, tab-separated); "" when there is no log."""
    try:
        with open(tree / ".ninja_log", "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def configure(tree: Path, request: Request, compiler: str, sanitizer: str, timeout: float,
              extra: dict[str, str] | None = None) -> BuildResult | None:
    """Configures the tree unless it already is as wanted. Returns a failed result, or None.
    `extra`: more cache variables the tree must have (`serve`'s ALLOCLAB_SERVE_<NN>)."""
    impl = request.impl
    wanted = {
        "CMAKE_CXX_COMPILER": shutil.which(program(compiler)) or program(compiler),
        "ALLOCLAB_SANITIZER": sanitizer,
        "ALLOCLAB_IMPL": str(impl.path) if impl.kind == "source" else impl.kind,
        "ALLOCLAB_IMPL_FOR": request.exercise.name if impl.kind == "source" else "",
        "ALLOCLAB_WERROR": "ON" if request.werror else "OFF",
        "ALLOCLAB_LINE_TABLES": "ON" if request.line_tables else "OFF",
        "ALLOCLAB_ONLY_STAGES": "",
        **(extra or {}),
    }
    cached = cache_values(tree)
    if (tree / "build.ninja").is_file() and all(cached.get(k) == v for k, v in wanted.items()):
        return None
    if cached.get("CMAKE_CXX_COMPILER") not in (None, wanted["CMAKE_CXX_COMPILER"]):
        (tree / "CMakeCache.txt").unlink()  # CMake cannot switch compilers in place
    argv = ["cmake", "-S", str(ROOT), "-B", str(tree), "-G", "Ninja", "-Wno-dev"]
    argv += [f"-D{k}={v}" for k, v in wanted.items()]
    # The judge's trees build no docs target, the one thing CMake looks for Python for: finding
    # it, even at a given path, ran the interpreter for 0.8 s of a fresh tree's 2.2 s configure.
    argv += ["-DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON"]
    result = process.run(argv, timeout=timeout, keep_bytes=200_000)
    if result.returncode == 0:
        return None
    log = result.stdout.text() + result.stderr.text()
    return BuildResult(False, result.seconds, [], "CMake could not configure the build:\n" + _tail(log, 20))


def program_name(exercise_name: str, program: str = "") -> str:
    """`07-serving-engine`, or `07-serving-engine-engine` for a stage's program of its own (its
    tests in a subfolder of the exercise's, see catalog.Stage.program)."""
    return f"{exercise_name}-{program}" if program else exercise_name


@contextmanager
def tests_built(request: Request, compiler: str, sanitizer: str, timeout: float, program: str = "",
                only_stages: tuple[int, ...] = (), beside: Callable[[Path], list[str]] | None = None):
    """The exercise's test binary (or that of one of its programs) and its build result, built in
    its tree (the request's slot), which stays locked while the caller runs it. `only_stages`: the
    binary holds these stages alone (CMakeLists.txt's ALLOCLAB_ONLY_STAGES), so the others are not
    compiled. `beside`: given the configured tree, the targets to build in the same build, whose
    failure is not the test binary's (its list_ twin, a later program's binary)."""
    tree = request_tree(request, compiler, sanitizer)
    target = f"test_{program_name(request.exercise.name, program)}"
    with locked(tree):
        yield tree / target, configure_and_build(tree, target, request, compiler, sanitizer, timeout,
                                                 extra=_holding(only_stages), beside=beside)


def groundwork_built(request: Request, compiler: str, sanitizer: str, timeout: float, program: str = "",
                     only_stages: tuple[int, ...] = ()) -> BuildResult:
    """Configures the tree tests_built builds `program` in, and builds there what the program's
    first build compiles whatever the header under test holds (CMakeLists.txt's groundwork_
    targets): the precompiled header, its code, the files that do not include the header."""
    tree = request_tree(request, compiler, sanitizer)
    with locked(tree):
        return configure_and_build(tree, f"groundwork_{program_name(request.exercise.name, program)}", request,
                                   compiler, sanitizer, timeout, extra=_holding(only_stages))


def _holding(only_stages: tuple[int, ...]) -> dict[str, str]:
    return {"ALLOCLAB_ONLY_STAGES": ";".join(map(str, only_stages))}


def include_dirs(tree: Path, target: str) -> list[Path]:
    """The folders a translation unit of `target` finds its headers in (its -I flags), from the
    compile commands CMake wrote: where the files the header under test includes come from."""
    try:
        commands = json.loads((tree / "compile_commands.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    for command in commands:
        if f"CMakeFiles/{target}.dir/" in command.get("command", ""):
            words = shlex.split(command["command"])
            return [Path(w[2:] or nxt) for w, nxt in zip(words, words[1:] + [""]) if w.startswith("-I")]
    return []


class Slots:
    """Names for build trees of their own, for jobs that run at once (`check`, `mutate`): a job
    takes one, builds and runs in its tree, and gives it back, so no two running jobs share a
    tree and each tree only recompiles what changed."""

    def __init__(self, prefix: str, count: int):
        self._free: queue.Queue[str] = queue.Queue()
        for i in range(max(count, 1)):
            self._free.put(f"{prefix}{i}")

    @contextmanager
    def taken(self):
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)


def configure_and_build(tree: Path, target: str, request: Request, compiler: str, sanitizer: str, timeout: float,
                        *, extra: dict[str, str] | None = None,
                        beside: Callable[[Path], list[str]] | None = None) -> BuildResult:
    """Builds `target` in a tree configured for `request` with one compiler and instrumentation,
    configuring it first when it is not (and `beside`'s targets with it, see tests_built)."""
    started = time.monotonic()
    failed = configure(tree, request, compiler, sanitizer, timeout, extra)
    if failed:
        return failed
    configured = time.monotonic() - started
    built = build(tree, target, timeout, beside(tree) if beside else [])
    built.seconds += configured   # a first build's configure is part of what the learner waits for
    return built


def build(tree: Path, target: str, timeout: float, beside: list[str] | tuple[str, ...] = ()) -> BuildResult:
    """Builds `target`, and the targets `beside` with it: what they alone fail to build does not
    fail `target` (their diagnostics are dropped)."""
    env = dict(os.environ, NINJA_STATUS="", CLICOLOR="0", TERM="dumb")
    # After a step fails, Ninja starts no other (the steps running finish, so every translation unit
    # of the header compiled at once still says its first error): a first judge that meets a compile
    # error reports it without first compiling what no edit changes. With `beside`, every step is
    # tried, since its failure must not stop the target's.
    keep_going = "0" if beside else "1"
    # Ninja itself, in the tree, rather than through `cmake --build`: one program less to start on
    # every try (0.03 to 0.05 s here). Ninja runs CMake again when the tree's lists changed.
    result = process.run(["ninja", "-k", keep_going, target, *beside], cwd=tree, env=env, timeout=timeout,
                         keep_bytes=400_000)
    log = result.stdout.text() + result.stderr.text()
    diagnostics = parse_diagnostics(log)
    ok = result.returncode == 0 and not result.timed_out
    failed_steps = re.findall(r"^FAILED: (\S+)", log, re.M)
    theirs = tuple(f"CMakeFiles/{b}.dir/" for b in beside)
    if beside and not ok and not result.timed_out and failed_steps and \
            all(step in beside or step.startswith(theirs) for step in failed_steps):
        ok, diagnostics = True, [d for d in diagnostics if d.severity == "warning"]
    problem = ""
    if result.timed_out:
        problem = f"the build took longer than {timeout:.0f} s and was stopped"
    elif not ok and not any(d.severity == "error" for d in diagnostics):
        problem = _link_problem(log) or "the build failed:\n" + _tail(log, 20)
    return BuildResult(ok, result.seconds, diagnostics, problem)


_DIAG_RE = re.compile(r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning): (?P<msg>.*)$")


# A caret line, with the ranges clang underlines before and after it (`~~~~ ^ ~~`).
_CARET_RE = re.compile(r"^[\s\d|~]*\^[\s~^]*$")


def parse_diagnostics(log: str) -> list[Diagnostic]:
    """Compiler errors and warnings, each with the source line and caret the compiler quotes."""
    out: list[Diagnostic] = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _DIAG_RE.match(line)
        if not m:
            continue
        context = []
        for j, follow in enumerate(lines[i + 1:i + 4]):
            if _DIAG_RE.match(follow) or follow.startswith(("In file included", "FAILED:", "[", "ninja:")):
                break
            if re.match(r"^\s*\d*\s*\|", follow) or follow.startswith(" "):
                context.append(follow)
            elif j == 0 and i + 2 < len(lines) and _CARET_RE.match(lines[i + 2]):
                context.append(follow)  # clang quotes the source line as it is, with no margin
        severity = "warning" if m.group("sev") == "warning" else "error"
        out.append(Diagnostic(m.group("file"), int(m.group("line")), int(m.group("col")), severity,
                              m.group("msg").strip(), context))
    return out


# What clang and g++ say when code names a member, a type or a template its class or namespace
# does not have, quoted with ' or with ‘’ as the locale chooses.
_Q = "['\u2018\u2019`]"
_N = "[^'\u2018\u2019`]+"
_MISSING_RE = [re.compile(p) for p in (
    rf"no (?:member|type|template) named {_Q}(?P<name>{_N}){_Q} in (?:namespace )?{_Q}(?P<owner>{_N}){_Q}",
    rf"(?:\{{aka |^){_Q}(?:const )?(?:class |struct )?(?P<owner>{_N}){_Q}\}}? has no member named {_Q}(?P<name>{_N}){_Q}",
    rf"^{_Q}(?P<name>{_N}){_Q} in (?:namespace )?{_Q}(?:class |struct )?(?P<owner>{_N}){_Q} does not name a",
    rf"^{_Q}(?P<name>{_N}){_Q} is not a member of {_Q}(?P<owner>{_N}){_Q}",
)]


def missing_name(error: Diagnostic) -> tuple[str, str] | None:
    """The name a compiler error says its class or namespace lacks, and that class or namespace
    (`capacity`, `alloclab::Arena`); None for any other error."""
    for pattern in _MISSING_RE:
        if m := pattern.search(error.message):
            return m.group("name"), m.group("owner")
    return None


def _link_problem(log: str) -> str:
    twice = re.findall(r"(?:duplicate symbol: |multiple definition of [`'])([^'\n]+)", log)
    if twice:
        names = sorted(set(twice))[:5]
        return ("the linker found " + ", ".join(names) + " defined more than once. The tests include your "
                "header from several files, so a function or variable defined in a header must be `inline` "
                "(members defined inside their class already are).")
    refs = re.findall(r"undefined reference to [`'](.+?)'", log)
    if refs:
        names = sorted(set(refs))[:5]
        return ("the linker found no definition of " + ", ".join(names) +
                ": a function is declared but never defined. Give every declared member a body.")
    return ""


def _tail(text: str, n: int) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _same_file(reported: str, path: Path) -> bool:
    try:
        return Path(reported).resolve() == path.resolve()
    except OSError:
        return False
