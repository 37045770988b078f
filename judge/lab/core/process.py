"""Runs a program the judge does not trust: bounded in time and in kept output, in its own
process group, so that nothing it starts outlives it."""
from __future__ import annotations

import os
import pwd
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass
class Captured:
    """What a stream printed: the head and the tail kept, and how much there was in all."""
    head: bytes = b""
    tail: bytes = b""
    total: int = 0

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        middle = f"\n[... {self.total - len(self.head) - len(self.tail)} bytes left out ...]\n" if self.truncated else ""
        return (self.head.decode("utf-8", "replace") + middle + self.tail.decode("utf-8", "replace"))


@dataclass
class RunResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    stdout: Captured
    stderr: Captured

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def _drain(stream, keep: int, into: Captured, on_line: Callable[[str], None] | None = None) -> None:
    """Reads a pipe to its end, keeping the first and last `keep // 2` bytes. With `on_line`, hands
    it each line as soon as it arrives (a line longer than `keep` bytes is cut to its end); an
    exception it raises is dropped, so that the pipe is still read to its end."""
    half = max(keep // 2, 1)
    tail = bytearray()
    pending = b""
    while chunk := (stream.read1(65536) if on_line else stream.read(65536)):
        if on_line:
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-keep:]
            for line in lines:
                try:
                    on_line(line.decode("utf-8", "replace"))
                except Exception:  # the program's output matters more than its progress display
                    pass
        into.total += len(chunk)
        if len(into.head) < half:
            room = half - len(into.head)
            into.head += chunk[:room]
            chunk = chunk[room:]
        tail += chunk
        if len(tail) > half:
            del tail[: len(tail) - half]
    if on_line and pending:
        try:
            on_line(pending.decode("utf-8", "replace"))
        except Exception:
            pass
    into.tail = bytes(tail)


# ALLOCLAB_RUN_AS names an unprivileged user every program the judge starts runs as (the
# autograders set it in their containers, which run as root): the learner's code then cannot
# write the results the judge reports, nor anything else root owns. The judge itself stays root.
RUN_AS = "ALLOCLAB_RUN_AS"


def run_as() -> tuple[int, int] | None:
    """The (uid, gid) programs run as: ALLOCLAB_RUN_AS's, when the judge is root; else None."""
    name = os.environ.get(RUN_AS, "")
    if not name or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise OSError(f"{RUN_AS}={name}: there is no such user") from None
    return entry.pw_uid, entry.pw_gid


def hand_over(path: Path, recursive: bool = False) -> None:
    """Gives `path` to the user programs run as, when there is one, so that they can write it:
    the build trees and the folders the tests run in."""
    ids = run_as()
    if ids is None:
        return
    if not recursive:
        os.chown(path, *ids)
        return
    for folder, dirs, files in os.walk(path):
        for name in (folder, *(os.path.join(folder, n) for n in dirs + files)):
            os.chown(name, *ids, follow_symlinks=False)


def run(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float, keep_bytes: int, on_stderr_line: Callable[[str], None] | None = None) -> RunResult:
    """Runs argv with no input, in the C locale. After `timeout` seconds the whole process
    group is killed; it is killed too once the program ends, so that no child it forked keeps
    running. `on_stderr_line` is called, from another thread, with each line the program writes
    on its standard error, as it writes it (a progress report)."""
    start = time.monotonic()
    _become_subreaper()
    ids = run_as()
    who = dict(user=ids[0], group=ids[1], extra_groups=[]) if ids else {}
    with _SPAWN_LOCK:
        proc = subprocess.Popen(argv, cwd=cwd, env=untranslated(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **who)
        _SPAWNED.add(proc.pid)
    stop: Stop | None = getattr(_stoppable, "stop", None)
    if stop is not None:
        stop._started(proc.pid)
    out, err = Captured(), Captured()
    readers = [threading.Thread(target=_drain, args=(proc.stdout, keep_bytes, out), daemon=True),
               threading.Thread(target=_drain, args=(proc.stderr, keep_bytes, err, on_stderr_line), daemon=True)]
    for t in readers:
        t.start()
    # A timer kills the group at the limit, and the wait blocks until the program ends: a wait
    # given a timeout polls instead, up to 50 ms late with each program it waits for.
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        _kill_group(proc.pid)
    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        proc.wait()
    finally:
        timer.cancel()
        _kill_group(proc.pid)
        proc.wait()
        with _SPAWN_LOCK:
            _SPAWNED.discard(proc.pid)
        if stop is not None:
            stop._ended(proc.pid)
        _kill_strays()
    for t, stream in zip(readers, (proc.stdout, proc.stderr)):
        t.join(timeout=5)  # a grandchild that escaped the group may hold the pipe; give up on it
        if t.is_alive():
            continue  # closing now would wait for the reader's lock, that is, forever
        try:
            stream.close()
        except OSError:
            pass
    return RunResult(proc.returncode, expired.is_set(), time.monotonic() - start, out, err)


def start_kept(argv: list[str], **popen) -> subprocess.Popen:
    """Starts a long-lived program the judge talks to while it runs (the docs' browser), in a session
    of its own, and registers it, so that no `run` finishing in another thread takes it for a stray
    and kills it. `forget` it once it has been waited for."""
    _become_subreaper()
    with _SPAWN_LOCK:
        proc = subprocess.Popen(argv, start_new_session=True, **popen)
        _SPAWNED.add(proc.pid)
    return proc


def forget(proc: subprocess.Popen) -> None:
    with _SPAWN_LOCK:
        _SPAWNED.discard(proc.pid)


class Stop:
    """Lets one thread stop the programs another runs: a thread that runs them inside
    `stoppable(stop)` has them killed by `stop.now()`, the one running then and any it starts
    after. The judge stops the builds it started ahead for a configuration it will not
    judge (judging._Prebuilds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._stopped = threading.Event()

    def now(self) -> None:
        with self._lock:
            self._stopped.set()
            for group in self._groups:
                _kill_group(group)

    def wait(self, seconds: float) -> bool:
        """Sleeps up to `seconds`, less once `now()` is called; True when it has been."""
        return self._stopped.wait(seconds)

    def _started(self, group: int) -> None:
        with self._lock:
            self._groups.add(group)
            if self._stopped.is_set():
                _kill_group(group)

    def _ended(self, group: int) -> None:
        with self._lock:
            self._groups.discard(group)


_stoppable = threading.local()


@contextmanager
def stoppable(stop: Stop):
    """Every program `run` starts in this thread, inside the block, can be killed by `stop`."""
    _stoppable.stop = stop
    try:
        yield
    finally:
        _stoppable.stop = None


def untranslated(env: dict[str, str] | None) -> dict[str, str]:
    """`env` (or the judge's own environment) in the C locale: compilers, sanitizers and test
    programs then print the English the judge's parsers read, whatever language the learner's
    shell speaks. LANGUAGE goes too: gettext puts it before LANG, and a program that sets a
    locale of its own would pick it up."""
    env = dict(os.environ if env is None else env)
    env.pop("LANGUAGE", None)
    env["LC_ALL"] = "C"
    return env


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# A program can leave its process group (setsid, setpgid) and so survive the group kill. The
# judge makes itself a "subreaper": orphans of its descendants become its children instead of
# init's, and after each run it kills those it did not start. A stray is recognised by being a
# child the runner did not spawn, in another session than the judge's, so children the judge
# starts by other means (git, the unit tests) are never touched. Linux only; elsewhere a no-op.
_SPAWN_LOCK = threading.Lock()
_SPAWNED: set[int] = set()
_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None


def _become_subreaper() -> bool:
    global _subreaper
    if _subreaper is None:
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


def _strays() -> list[int]:
    me, session = os.getpid(), os.getsid(0)
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) in _SPAWNED:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (name) ": state, ppid, pgrp, session
        if int(fields[1]) == me and int(fields[3]) != session:
            found.append(int(entry))
    return found


def _kill_strays() -> None:
    if not _subreaper:
        return
    for _ in range(10):  # a killed stray's own children are reparented to the judge in turn
        with _SPAWN_LOCK:
            strays = _strays()
            for pid in strays:
                _kill_group(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError, PermissionError):
                    pass
        if not strays:
            return
