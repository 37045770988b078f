"""A program the judge built, run for the one answer it prints on standard output (the serving
engine's JSON object, a benchmark's results, a memory map's snapshot): `ask` runs it under
process.run's limits and reads its answer, or raises `Failed`, which says how it ended in one
state and in words that name the program, so that each of its users words only what its own
protocol adds."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, TypeVar

from .. import ui
from ..model.catalog import shown
from . import process

T = TypeVar("T")

# How a program ended without an answer (Failed.ending).
NOT_STARTED, TIMED_OUT, CRASHED, EXITED, UNREADABLE = "not started", "timed out", "crashed", "exited", "unreadable"


class Failed(Exception):
    """A program that gave no answer: `ending` says how (NOT_STARTED, TIMED_OUT, CRASHED, EXITED
    with `status`, UNREADABLE), `said` is the end of what it wrote on standard error. The message is
    one line; `told` adds a note and what the program said under it."""

    def __init__(self, message: str, ending: str, said: str = "", status: int | None = None):
        super().__init__(message)
        self.message, self.ending, self.said, self.status = message, ending, said, status

    def told(self, note: str = "") -> str:
        shown = ("\n" + ui.indent(self.said, "  ", max_lines=12, more="")) if self.said else ""
        return self.message + note + shown

    def __str__(self) -> str:
        return self.told()


def ask(argv: list[str], read: Callable[[str], T], *, what: str, timeout: float, keep_bytes: int, limit: str = "",
        doing: str = "", exits: dict[int, str] | None = None, answers_on: tuple[int, ...] = (0,),
        cwd: Path | None = None, on_stderr_line: Callable[[str], None] | None = None,
        quiet: Callable[[str], bool] = lambda line: False) -> T:
    """Runs argv and returns `read(what it printed)`; Failed when it cannot be started, outlives
    `timeout` (the catalog's `limit`, when it is one), crashes, exits with a status outside
    `answers_on`, prints more than `keep_bytes`, or prints what `read` refuses (a ValueError or a
    KeyError).

    `what` names the program ("the benchmark") and `doing` what it was asked, after a verb
    (" serving the tiny trace"); `exits` words, whole, the statuses its protocol gives a meaning
    ({3: "stopped serving the tiny trace (a manager threw)"}). Lines of standard error that
    `quiet` accepts (progress) are left out of `said`."""
    try:
        result = process.run(argv, cwd=cwd, timeout=timeout, keep_bytes=keep_bytes, on_stderr_line=on_stderr_line)
    except OSError as err:
        raise Failed(f"{what} {shown(argv[0])} cannot be started: {err}", NOT_STARTED) from None
    said = "\n".join(line for line in result.stderr.text().splitlines() if not quiet(line)).strip()[-2000:]
    if result.timed_out:
        where = f" (the limit {limit} of judge/catalog.toml)" if limit else ""
        raise Failed(f"{what} did not finish in {timeout:g} s{doing}{where}", TIMED_OUT, said)
    if result.signal_name:
        raise Failed(f"{what} crashed ({result.signal_name}){doing}", CRASHED, said)
    if result.returncode not in answers_on:
        how = (exits or {}).get(result.returncode, f"failed (exit status {result.returncode}){doing}")
        raise Failed(f"{what} {how}", EXITED, said, result.returncode)
    if result.stdout.truncated:
        raise Failed(f"{what} printed more than {keep_bytes / (1 << 20):.0f} MiB, which this judge does not read",
                     UNREADABLE)
    try:
        return read(result.stdout.text())
    except (ValueError, KeyError) as err:  # json.JSONDecodeError is a ValueError
        raise Failed(f"{what}'s output cannot be read: {err}", UNREADABLE, said) from None
