"""`watch`: the learner's edit loop. Judges an exercise, then again each time its file is
saved; when it passes, says so and moves on to the next exercise. While it waits it shows one
status line and reads single keys: h (next hint), l (list), t (judge
the learner's own tests, as `examine`), r (run again), q (quit).

Standard library only: the file is polled (its modification time, size and inode, which also
catch editors that save by renaming a new file over the old one), and keys are read from the
terminal in cbreak mode with select(), which leaves Ctrl-C working. Without a terminal (a
pipe, CI, an editor's task runner) no key is read and the loop only watches the file."""
from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from ..core import build
from . import examine, workspace, overview, report
from ..model.progress import Progress
from .. import ui
from ..model.catalog import Catalog, Exercise, shown, translated
from ..model.words import say


def watch_command(args, catalog: Catalog) -> bool:
    compilers = build.compilers_for(args.compiler)
    start = catalog.resolve(args.exercise) if args.exercise else first_unpassed(catalog, Progress())
    if start is None:
        print(ui.paint(say("every_exercise_passes", mark=ui.OK), "green") + say("watch_again"))
        return True

    def judge(exercise: Exercise, progress: Progress) -> bool:
        verdict = workspace.judge(catalog, exercise, compilers, progress)
        print(report.render(verdict, exercise, watching=True), flush=True)
        return verdict.passed

    return Watcher(catalog, judge, Progress()).run(start)


def first_unpassed(catalog: Catalog, progress: Progress, after: Exercise | None = None,
                   file_of: Callable[[Exercise], Path] = lambda ex: ex.exercise_file) -> Exercise | None:
    """The first exercise not yet passed after `after` (or from the start), wrapping around. A
    pass counts only while the file is the one that passed: a header broken again after its
    pass is where the learner has work to do."""
    order = list(catalog.exercises)
    if after is not None and after in order:
        i = order.index(after) + 1
        order = order[i:] + order[:i]
    return next((ex for ex in order if not progress.passes_as_it_is(ex, file_of(ex))), None)


def signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None  # an editor between deleting and renaming; wait for the file to come back
    return st.st_mtime_ns, st.st_size, st.st_ino


class Keys:
    """Single keys from the terminal, or none when standard input is not one."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stdin
        try:
            self.fd = self.stream.fileno()
            self.interactive = os.isatty(self.fd)
        except (AttributeError, OSError, ValueError):
            self.fd, self.interactive = -1, False
        self._saved = None
        self._pending = ""  # keys typed faster than they are handled, in order

    def __enter__(self) -> "Keys":
        if self.interactive:
            import termios
            import tty
            try:
                self._saved = termios.tcgetattr(self.fd)
                tty.setcbreak(self.fd)  # keys arrive one by one, unechoed; Ctrl-C still interrupts
            except termios.error:
                self.interactive = False
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            import termios
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def read(self, timeout: float) -> str | None:
        """The next key pressed within `timeout` seconds, or None."""
        if not self._pending:
            if not self.interactive:
                time.sleep(timeout)
                return None
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            data = os.read(self.fd, 64)
            if not data:  # the terminal went away: behave as if no one is typing
                self.interactive = False
                return None
            self._pending = data.decode("utf-8", "replace")
        key, self._pending = self._pending[0], self._pending[1:]
        return key.lower()


class Watcher:
    """The loop itself. `judge` judges an exercise and records its verdict in the progress it
    is given; the watcher saves that progress after each verdict and each hint."""

    def __init__(self, catalog: Catalog, judge: Callable[[Exercise, Progress], bool], progress: Progress, *,
                 file_of: Callable[[Exercise], Path] = lambda ex: ex.exercise_file, keys: Keys | None = None,
                 out=None, interval: float = 0.5, settle: float = 0.2):
        self.catalog, self.judge, self.progress, self.file_of = catalog, judge, progress, file_of
        self.keys = keys or Keys()
        self.out = out or sys.stdout
        self.interval, self.settle = interval, settle
        self.line = ui.ProgressLine(stream=self.out)

    # -- output ------------------------------------------------------------------
    def say(self, text: str = "") -> None:
        self.line.clear()
        print(text, file=self.out, flush=True)

    def status(self, exercise: Exercise) -> None:
        """The status line, redrawn where keys are read; elsewhere a line of its own."""
        path = self.file_of(exercise)
        where = overview.status_text(exercise, self.progress, colour=False)
        summary = overview.summary(self.catalog, self.progress)
        if tests := overview.tests_score(exercise, self.progress):
            summary += " · " + tests   # last: a narrow terminal cuts the line's end, never the keys
        self.line.live = self.keys.interactive
        # The keys come before the overview: on a narrow terminal the line's end is cut off.
        self.line.draw(say("watching", file=shown(path), where=where, keys=say("keys"), summary=summary),
                       plain=say("watching_plain", file=shown(path), where=where, summary=summary))

    # -- the loop ----------------------------------------------------------------
    def run(self, exercise: Exercise) -> bool:
        previous = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
        try:
            with self.keys:
                return self._loop(exercise)
        except KeyboardInterrupt:
            self.say("\n" + say("stopped_watching"))
            return True
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def _loop(self, exercise: Exercise) -> bool:
        while True:
            # The file as it is judged: a save during the judging, which takes seconds, is a
            # change to judge again, not the starting point of the wait.
            judged = signature(self.file_of(exercise))
            passed = self._judge(exercise)
            if passed:
                following = first_unpassed(self.catalog, self.progress, after=exercise, file_of=self.file_of)
                if following is None:
                    self.say(ui.paint(say("kit_done", mark=ui.OK, id=exercise.id), "green"))
                    self.say(overview.render(self.catalog, self.progress))
                    return True
                words = translated(following)
                self.say(ui.paint(say("on_to", mark=ui.OK, id=exercise.id), "green") +
                         say("on_to_next", id=following.id, title=words.title, file=shown(self.file_of(following)),
                             chapter=shown(words.reader_chapter)))
                exercise = following
                continue
            action = self._wait(exercise, judged)
            if action == "quit":
                self.say(say("stopped_watching"))
                return True

    def _judge(self, exercise: Exercise) -> bool:
        self.say(ui.paint(say("watch_judging", time=time.strftime('%H:%M:%S'), file=shown(self.file_of(exercise)),
                              id=exercise.id), "dim"))
        passed = bool(self.judge(exercise, self.progress))
        self.progress.save()
        self.say(say("progress", bar=overview.summary(self.catalog, self.progress)))
        return passed

    def _wait(self, exercise: Exercise, seen: tuple[int, int, int] | None) -> str:
        """Until the file differs from `seen` ("changed"), or the learner asks to run again or to quit."""
        path = self.file_of(exercise)
        self.status(exercise)
        while True:
            key = self.keys.read(self.interval)
            if key == "q":
                return "quit"
            if key == "r":
                return "run"
            if key == "h":
                self._hint(exercise)
                self.status(exercise)
            elif key == "t":
                self._examine(exercise)
                self.status(exercise)
            elif key == "l":
                self.say()
                self.say(overview.render(self.catalog, self.progress))
                self.status(exercise)
            elif key is not None and key.strip():
                self.say(say("watch_keys", keys=say("keys")))
                self.status(exercise)
            now = signature(path)
            if now is not None and now != seen:
                self._settle(path)
                return "changed"

    def _settle(self, path: Path) -> None:
        """Waits until the file has stopped changing: an editor may write it in several steps."""
        last = signature(path)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(self.settle)
            now = signature(path)
            if now == last and now is not None:
                return
            last = now

    def _examine(self, exercise: Exercise) -> None:
        """The learner's own tests of the exercise, judged as `examine` judges them."""
        mine = examine.my_tests_file(exercise)
        if not mine.is_file():
            self.say(say("no_my_tests", file=shown(mine), id=exercise.id, header=exercise.header))
            return
        self.say(ui.paint(say("examining", file=shown(mine), id=exercise.id), "dim"))
        verdict, hint = examine.examined(self.catalog, translated(exercise), mine, self.progress)
        self.progress.save()
        self.say(examine.render(verdict, hint))

    def _hint(self, exercise: Exercise) -> None:
        self.say(overview.take_next_hint(exercise, self.progress))
        self.progress.save()


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # leave through the same door as Ctrl-C: the terminal is restored


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()
