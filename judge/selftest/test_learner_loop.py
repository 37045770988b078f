"""The learner's loop: watch (its loop with a stand-in judge, its keys through a real pseudo
terminal, and once end to end with the real judge), reset, solution and list.

Commands that change the learner's files run in a clone of the repository in a temporary
folder, never in this working tree."""
from __future__ import annotations

import io
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from lab.model import progress
from lab.model.catalog import ROOT, Catalog, Exercise, Hint, Limits, Stage
from lab.learner.watch import Keys, Watcher, first_unpassed
from lab.model.progress import Progress

from .progress_files import saved


PY = sys.executable


def fake_exercise(number: int) -> Exercise:
    hints = tuple(Hint(level, f"{level} hint of {number}") for level in ("concept", "approach", "code"))
    return Exercise(number, f"ex{number}", f"Exercise {number}", "", "easy", f"ex{number}.hpp", ("asan",),
                    (Stage(1, "S1", "one", "", ("asan",), hints), Stage(2, "S2", "two", "", ("asan",), hints)))


class FakeKit:
    """Two exercises whose "judge" passes a file that contains DONE, and records progress as
    the real one does."""

    def __init__(self, tmp: Path):
        self.exercises = (fake_exercise(1), fake_exercise(2))
        self.catalog = Catalog(self.exercises, Limits(20, 65536, 4096, 300, 600))
        self.state = tmp / "progress.json"
        self.files = {ex.id: tmp / ex.header for ex in self.exercises}
        for path in self.files.values():
            path.write_text("// skeleton\n")
        self.judged: list[int] = []

    def judge(self, exercise: Exercise, progress: Progress) -> bool:
        self.judged.append(exercise.id)
        passed = "DONE" in self.files[exercise.id].read_text()
        progress.record(exercise, passed, None if passed else 1)
        return passed

    def watcher(self, out, keys=None) -> Watcher:
        return Watcher(self.catalog, self.judge, Progress(self.state), file_of=lambda ex: self.files[ex.id],
                       keys=keys or Keys(io.StringIO()), out=out, interval=0.05, settle=0.05)


def wait_until(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


class WatchLoop(unittest.TestCase):
    def test_judges_on_save_and_moves_on_when_it_passes(self):
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            out = io.StringIO()
            watcher = kit.watcher(out)
            result = {}
            thread = threading.Thread(target=lambda: result.setdefault("ok", watcher.run(kit.exercises[0])))
            thread.start()
            self.assertTrue(wait_until(lambda: kit.judged == [1]), "watch judges the exercise at once")
            time.sleep(0.2)
            self.assertEqual(kit.judged, [1], "nothing changed, so nothing is judged again")
            kit.files[1].write_text("// DONE: the learner's fix\n")
            self.assertTrue(wait_until(lambda: kit.judged == [1, 1, 2]),
                            f"a save is judged, and a pass moves on to the next exercise: {kit.judged}")
            kit.files[2].write_text("// DONE as well\n")
            thread.join(20)
            self.assertFalse(thread.is_alive(), "after the last exercise passes, watch ends")
            self.assertIs(result.get("ok"), True)
            text = out.getvalue()
            self.assertIn("On to exercise 02", text)
            self.assertIn("every other", text)
            self.assertIn("[############] 2/2", text, "the overall progress bar is shown")

    def test_starts_at_the_first_exercise_not_passed(self):
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            self.assertEqual(first_unpassed(kit.catalog, Progress(kit.state)).id, 1)
            saved(kit.state, "record", kit.exercises[0], True, None)
            self.assertEqual(first_unpassed(kit.catalog, Progress(kit.state)).id, 2)
            saved(kit.state, "record", kit.exercises[1], True, None)
            self.assertIsNone(first_unpassed(kit.catalog, Progress(kit.state)))

    def test_a_pass_counts_only_on_the_file_that_passed(self):
        """A header broken again after its pass is where the learner has work to do: watch starts
        there, not at the next exercise."""
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            kit.files[1].write_text("// DONE\n")
            saved(kit.state, "record", kit.exercises[0], True, None, file_hash=progress.digest(kit.files[1]))
            where = first_unpassed(kit.catalog, Progress(kit.state), file_of=lambda ex: kit.files[ex.id])
            self.assertEqual(where.id, 2)
            kit.files[1].write_text("// broken again\n")
            where = first_unpassed(kit.catalog, Progress(kit.state), file_of=lambda ex: kit.files[ex.id])
            self.assertEqual(where.id, 1)

    def test_a_stage_judged_alone_keeps_the_pass_of_the_same_file(self):
        """`test N --stage K` after a full pass says nothing new about the file: the pass stays
        (serve keeps using the learner's header), unless the file changed or the stage failed."""
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            ex = kit.exercises[0]
            saved(kit.state, "record", ex, True, None, file_hash="h1")
            saved(kit.state, "record", ex, True, None, only_stage=2, file_hash="h1")
            self.assertEqual(Progress(kit.state).standing(ex), (progress.Standing.PASSED, None))
            saved(kit.state, "record", ex, False, 2, only_stage=2, file_hash="h1")   # another seed found a mistake
            self.assertEqual(Progress(kit.state).standing(ex), (progress.Standing.STAGE_FAILED, 2))
            saved(kit.state, "record", ex, True, None, file_hash="h1")
            saved(kit.state, "record", ex, True, None, only_stage=2, file_hash="h2")   # an edited file
            self.assertEqual(Progress(kit.state).standing(ex), (progress.Standing.STAGE_PASSED, 2))

    def test_hint_all_shows_again_the_hints_taken(self):
        from lab.learner import overview
        from .progress_files import take_hint_at
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            ex = kit.exercises[0]
            self.assertIn("You have taken no hint for exercise 01 yet", overview.hints_seen(ex, Progress(kit.state)))
            saved(kit.state, "record", ex, False, 1)
            take_hint_at(kit.state, ex)
            take_hint_at(kit.state, ex)
            again = overview.hints_seen(ex, Progress(kit.state))
            self.assertIn("The 2 hints you have taken for exercise 01, stage by stage:", again)
            self.assertIn("Hint 1 of 3 for stage 1 (concept): concept hint of 1", again)
            self.assertIn("Hint 2 of 3 for stage 1 (approach): approach hint of 1", again)
            self.assertNotIn("code hint", again, "a hint not taken yet stays hidden")
            self.assertEqual(Progress(kit.state).hints_taken(ex), {1: 2}, "reading them again takes none")

    def test_list_wraps_between_words(self):
        from unittest import mock
        from lab.learner import overview
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"COLUMNS": "50"}):
            kit = FakeKit(Path(tmp))
            long = fake_exercise(1).__class__(1, "ex1", "Exercise 1", "a summary " * 12, "easy", "ex1.hpp",
                                              ("asan",), kit.exercises[0].stages)
            text = overview.render(kit.catalog.__class__((long,), kit.catalog.limits), Progress(kit.state))
            summary = [line for line in text.splitlines() if "summary" in line]
            self.assertGreater(len(summary), 1)
            for line in summary:
                self.assertLessEqual(len(line), 49)
                self.assertTrue(line.startswith("    a summary") or line.startswith("    summary"), line)
                self.assertTrue(line.endswith(("a", "summary")), line)

    def test_a_first_judge_says_it_builds_the_tests_and_where(self):
        import contextlib
        from unittest import mock
        from lab.core import build
        from lab.learner import verbs
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"ALLOCLAB_SLOT": "selftest-never-built"}), contextlib.redirect_stdout(out):
            verbs._first_build(fake_exercise(1), build.Impl("source", Path("/x/arena.hpp")), "clang")
            verbs._first_build(fake_exercise(1), build.Impl("exercises"), "clang")
        source, mine = out.getvalue().splitlines()
        self.assertIn("not built yet in build/clang-asan-source-selftest-never-built", source)
        self.assertIn("a tree of its own", source)
        self.assertNotIn("a tree of its own", mine)

    def test_a_file_replaced_by_rename_is_seen(self):
        """Many editors save by writing a new file and renaming it over the old one."""
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            watcher = kit.watcher(io.StringIO())
            thread = threading.Thread(target=watcher.run, args=(kit.exercises[0],), daemon=True)
            thread.start()
            self.assertTrue(wait_until(lambda: kit.judged == [1]))
            new = Path(tmp) / ".ex1.hpp.swp"
            new.write_text("// same size!\n")
            os.replace(new, kit.files[1])
            self.assertTrue(wait_until(lambda: kit.judged == [1, 1]), "a rename over the file is a save")
            kit.files[1].write_text("DONE")
            kit.files[2].write_text("DONE")
            thread.join(20)


    def test_a_save_while_judging_is_judged_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            kit = FakeKit(Path(tmp))
            saved_during_judging = threading.Event()

            def slow_judge(exercise, progress):
                if not saved_during_judging.is_set():
                    kit.files[1].write_text("// saved while the judge was compiling\n")
                    saved_during_judging.set()
                return kit.judge(exercise, progress)

            watcher = Watcher(kit.catalog, slow_judge, Progress(kit.state), file_of=lambda ex: kit.files[ex.id],
                              keys=Keys(io.StringIO()), out=io.StringIO(), interval=0.05, settle=0.05)
            thread = threading.Thread(target=watcher.run, args=(kit.exercises[0],), daemon=True)
            thread.start()
            self.assertTrue(wait_until(lambda: kit.judged == [1, 1]),
                            f"a save made while the file was being judged is judged too: {kit.judged}")
            kit.files[1].write_text("DONE")
            kit.files[2].write_text("DONE")
            thread.join(20)


class WatchKeys(unittest.TestCase):
    """watch on a real (pseudo) terminal: single keys, no Enter, and the terminal restored."""

    def spawn(self, tmp: Path):
        pid, master = pty.fork()
        if pid == 0:  # the child: a watcher on the pseudo terminal
            try:
                kit = FakeKit(tmp)
                watcher = Watcher(kit.catalog, kit.judge, Progress(kit.state), file_of=lambda ex: kit.files[ex.id],
                                  interval=0.05, settle=0.05)
                code = 0 if watcher.run(kit.exercises[0]) else 1
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 3
            sys.stdout.flush()
            os._exit(code)
        return pid, master

    def read_until(self, master: int, buffer: bytearray, text: str, seconds: float = 20.0) -> bool:
        deadline = time.monotonic() + seconds
        while text.encode() not in buffer and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buffer.extend(chunk)
        return text.encode() in buffer

    def finish(self, pid: int, master: int, buffer: bytearray) -> int:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                self.read_until(master, buffer, "\0", 0.2)
                os.close(master)
                return os.waitstatus_to_exitcode(status)
            self.read_until(master, buffer, "\0", 0.1)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(master)
        self.fail("watch did not exit")

    def test_h_l_r_q(self):
        with tempfile.TemporaryDirectory() as tmp:
            pid, master = self.spawn(Path(tmp))
            out = bytearray()
            self.assertTrue(self.read_until(master, out, "q quit"), out.decode(errors="replace"))
            import termios
            attrs = termios.tcgetattr(master)
            self.assertFalse(attrs[3] & termios.ICANON, "while waiting, keys are read one by one (no Enter)")
            self.assertFalse(attrs[3] & termios.ECHO, "and not echoed")
            os.write(master, b"h")
            self.assertTrue(self.read_until(master, out, "concept hint of 1"), "h shows a hint")
            self.assertIn(b"Hint 1 of 3 for stage 1 (concept):", out, "the first of the failing stage")
            os.write(master, b"h")
            self.assertTrue(self.read_until(master, out, "Hint 2 of 3 for stage 1 (approach)"),
                            "h again shows the one after")
            os.write(master, b"l")
            self.assertTrue(self.read_until(master, out, "Exercise 2 "), "l shows the list")
            self.assertTrue(self.read_until(master, out, "\nProgress ["), "with the overall progress bar")
            judged_before = out.count(b"judging")
            os.write(master, b"r")
            self.assertTrue(wait_until(lambda: self.read_until(master, out, "\0", 0.1) or
                                       out.count(b"judging") > judged_before), "r judges again")
            os.write(master, b"q")
            code = self.finish(pid, master, out)
            self.assertEqual(code, 0, out.decode(errors="replace"))
            self.assertNotIn(b"Traceback", out)
            self.assertIn(b"Stopped watching", out)

    def test_ctrl_c_exits_cleanly(self):
        with tempfile.TemporaryDirectory() as tmp:
            pid, master = self.spawn(Path(tmp))
            out = bytearray()
            self.assertTrue(self.read_until(master, out, "q quit"))
            os.write(master, b"\x03")  # the terminal turns it into SIGINT
            code = self.finish(pid, master, out)
            self.assertEqual(code, 0, out.decode(errors="replace"))
            self.assertNotIn(b"Traceback", out)
            self.assertIn(b"Stopped watching", out)


def clone_kit(tmp: Path) -> Path:
    """A clone of this repository with this working tree's judge: a learner's checkout, with
    an upstream, where commands may change files."""
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        raise unittest.SkipTest("not a git checkout")
    dest = tmp / "kit"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True, capture_output=True, timeout=120)
    for name in ("lab", "schemas"):
        shutil.rmtree(dest / "judge" / name, ignore_errors=True)
        shutil.copytree(ROOT / "judge" / name, dest / "judge" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "judge" / "catalog.toml", dest / "judge" / "catalog.toml")
    for args in (["config", "user.email", "learner@example.invalid"], ["config", "user.name", "Learner"]):
        subprocess.run(["git", *args], cwd=dest, check=True, timeout=30)
    return dest


def judge_cli(kit: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([PY, str(kit / "judge" / "judge.py"), *args], cwd=kit, env=env, capture_output=True,
                          text=True, timeout=900, **kwargs)


class ResetAndSolution(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.kit = clone_kit(Path(cls.tmp.name))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_reset_restores_the_upstream_skeleton_and_keeps_a_backup(self):
        header = self.kit / "exercises" / "01-arena" / "arena.hpp"
        skeleton = header.read_bytes()
        mine = b"// my arena, half done\n" + skeleton
        header.write_bytes(mine)
        # The learner even commits the work: HEAD is no longer the skeleton, upstream still is.
        subprocess.run(["git", "commit", "-qam", "my work"], cwd=self.kit, check=True, timeout=30)
        proc = judge_cli(self.kit, "reset", "1")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(header.read_bytes(), skeleton, "reset restores the skeleton as upstream has it")
        self.assertIn("upstream", proc.stdout, "reset says where the skeleton came from")
        backups = list((self.kit / ".alloclab" / "backups" / "01-arena").glob("arena-*.hpp"))
        self.assertEqual(len(backups), 1)
        self.assertEqual(backups[0].read_bytes(), mine, "the learner's file is kept")
        self.assertIn(str(backups[0].relative_to(self.kit)), proc.stdout, "and the backup is named")
        again = judge_cli(self.kit, "reset", "1")
        self.assertEqual(again.returncode, 0)
        self.assertIn("already the untouched skeleton", again.stdout)
        self.assertEqual(len(list(backups[0].parent.iterdir())), 1, "no backup of an untouched file")
        status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=self.kit, capture_output=True,
                                text=True).stdout
        self.assertIn("!! .alloclab/", status, "backups and progress live where git ignores them")

    def test_solution_waits_for_a_pass_or_force(self):
        state = self.kit / ".alloclab" / "progress.json"
        state.unlink(missing_ok=True)
        locked = judge_cli(self.kit, "solution", "1")
        self.assertEqual(locked.returncode, 1)
        self.assertNotIn("class Arena", locked.stdout, "no reference before the learner's file passes")
        self.assertIn("--force", locked.stdout, "the refusal says how to see it anyway")
        forced = judge_cli(self.kit, "solution", "1", "--force")
        self.assertEqual(forced.returncode, 0)
        self.assertIn("class Arena", forced.stdout)
        self.assertIn("--force", forced.stdout, "--force says what it did")
        self.assertIn("solution_forced", state.read_text())
        # Once passed (the progress file says so), no --force is needed, even after a reset.
        from lab.model.catalog import load
        exercise = load(self.kit / "judge" / "catalog.toml").resolve("1")
        saved(state, "record", exercise, True, None)
        saved(state, "restart", exercise)
        earned = judge_cli(self.kit, "solution", "1")
        self.assertEqual(earned.returncode, 0)
        self.assertIn("class Arena", earned.stdout)
        self.assertNotIn("--force", earned.stdout)

    def test_list_shows_progress(self):
        state = self.kit / ".alloclab" / "progress.json"
        state.unlink(missing_ok=True)
        from lab.model.catalog import load
        catalog = load(self.kit / "judge" / "catalog.toml")
        saved(state, "record", catalog.exercises[0], True, None)
        saved(state, "record", catalog.exercises[1], False, 3)
        proc = judge_cli(self.kit, "list")
        self.assertEqual(proc.returncode, 0)
        lines = proc.stdout.splitlines()
        row = {line[:2]: line for line in lines if line[:2].isdigit()}   # a summary may wrap over lines
        self.assertIn("✓ passed", row["01"])
        self.assertIn(f"at stage 3 of {len(catalog.exercises[1].stages)}", row["02"])
        if len(catalog.exercises) > 2:
            self.assertIn("not started", row["03"])
        self.assertIn(f"1/{len(catalog.exercises)}", lines[-1])
        self.assertIn("Progress [", lines[-1])


class CourseCommands(unittest.TestCase):
    """`quiz` through a pipe, and `hint` and `test --stage` as a learner meets them, in a clone."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.kit = clone_kit(Path(cls.tmp.name))
        cls.state = cls.kit / ".alloclab" / "progress.json"

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_quiz_through_a_pipe(self):
        quiz_file = self.kit / "chapters" / "01-arena.quiz.toml"
        shutil.copy(Path(__file__).parent / "fixtures" / "sample.quiz.toml", quiz_file)
        done = judge_cli(self.kit, "quiz", "1", input="2\nb\n2\n3000\n500\n")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("Your answer (1-3): b\nType the number of a choice", done.stdout)
        self.assertIn("Score: 3 of 4 right.", done.stdout)
        self.assertIn("quiz: 3 of 4 right", judge_cli(self.kit, "list").stdout, "list shows the score")
        cut = judge_cli(self.kit, "quiz", "1", input="1\n")
        self.assertEqual(cut.returncode, 1, "a quiz cut short is not done")
        self.assertIn("Stopped at question 2 of 4; nothing is recorded.", cut.stdout)
        closed = judge_cli(self.kit, "quiz", "1", stdin=subprocess.DEVNULL)
        self.assertEqual(closed.returncode, 1)
        for proc in (cut, closed):
            self.assertNotIn("Traceback", proc.stdout + proc.stderr)
        self.assertIn("quiz: 3 of 4 right", judge_cli(self.kit, "list").stdout, "the last full score stays")
        quiz_file.unlink()
        missing = judge_cli(self.kit, "quiz", "1", input="")
        self.assertEqual(missing.returncode, 2)
        self.assertIn("chapter 1 has no quiz yet: chapters/01-arena.quiz.toml does not exist", missing.stderr)

    def test_hint_and_stage_runs_follow_the_learner(self):
        if not all(shutil.which(t) for t in ("clang++", "cmake", "ninja")):
            self.skipTest("toolchain not installed")
        from lab.maintainer import mistakes
        from lab.model.catalog import load
        arena = load(self.kit / "judge" / "catalog.toml").resolve("1")
        self.state.unlink(missing_ok=True)
        first = judge_cli(self.kit, "hint", "1")
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertIn("Judging arena.hpp to find the first stage that fails", first.stdout,
                      "with no verdict on the file, hint judges it first")
        self.assertIn("Hint 1 of", first.stdout)
        hint = first.stdout.split("for stage 1 (concept):", 1)
        self.assertEqual(len(hint), 2, "on an untouched clone, the first hint is stage 1's concept:\n" + first.stdout)
        self.assertNotIn("`", hint[1], "a concept hint shows no code")
        second = judge_cli(self.kit, "hint", "1")
        self.assertNotIn("Judging", second.stdout, "the file has not changed: the last verdict holds")
        self.assertIn("for stage 1 (approach):", second.stdout)

        # A header that passes stages 1-3: the reference with a mistake only stage 4 (and the model
        # stage after it) catches.
        header = self.kit / "exercises" / "01-arena" / "arena.hpp"
        mistake = next(m for m in mistakes.mistakes(arena)
                       if all(t.startswith(("ArenaAsan.", "ArenaModel.")) for t in m.caught_by))
        header.write_text(mistakes.apply((self.kit / "solutions" / "01-arena" / "arena.hpp").read_text(),
                                         mistake.path.read_text()))
        third = judge_cli(self.kit, "hint", "1")
        self.assertIn("Judging", third.stdout, "an edit makes the last verdict stale")
        self.assertIn("Hint 1 of", third.stdout)
        self.assertIn("for stage 4 (concept):", third.stdout, third.stdout)

        staged = judge_cli(self.kit, "test", "1", "--stage", "1")
        self.assertEqual(staged.returncode, 0, "the exit status is for what ran:\n" + staged.stdout)
        self.assertIn("Stage 1 passes; stages 2-5 not judged", staged.stdout)
        self.assertNotIn("passes every stage", staged.stdout)
        listing = judge_cli(self.kit, "list").stdout.splitlines()[0]
        self.assertIn("stage 1 of 5 passes (judged alone)", listing)
        self.assertNotIn("✓ passed", listing)

        header.write_text(header.read_text() + "\nthis does not compile\n")
        judge_cli(self.kit, "test", "1")
        self.assertIn("does not compile", judge_cli(self.kit, "list").stdout.splitlines()[0])


class WatchEndToEnd(unittest.TestCase):
    """As a new learner would: `watch` judges exercise 01, the learner saves a working arena,
    and watch, untouched, judges it, says it passes and moves on to exercise 02."""

    def test_from_the_first_exercise_through_a_fix_to_the_next(self):
        if not all(shutil.which(t) for t in ("clang++", "cmake", "ninja")):
            self.skipTest("toolchain not installed")
        with tempfile.TemporaryDirectory() as tmp:
            kit = clone_kit(Path(tmp))
            env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
            log = Path(tmp) / "watch.log"
            with open(log, "wb") as sink, open(os.devnull, "rb") as nothing:
                # Ctrl-C as a learner's terminal delivers it: a shell that starts a command in the
                # background without job control (CI may) makes it ignore SIGINT, and the child
                # would inherit that, where no learner's watch ever runs.
                proc = subprocess.Popen([PY, str(kit / "judge" / "judge.py"), "watch"], cwd=kit, env=env,
                                        stdin=nothing, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            try:
                text = lambda: log.read_text(errors="replace")  # noqa: E731
                self.assertTrue(wait_until(lambda: "save the file to judge it again" in text(), 600),
                                "watch judges exercise 01 and waits:\n" + text()[-3000:])
                self.assertIn("Stage 1", text())
                shutil.copy(kit / "solutions" / "01-arena" / "arena.hpp", kit / "exercises" / "01-arena" / "arena.hpp")
                self.assertTrue(wait_until(lambda: "On to exercise 02" in text(), 600),
                                "the save is judged, passes, and watch moves on:\n" + text()[-3000:])
                self.assertTrue(wait_until(lambda: text().count("save the file to judge it again") >= 2, 600),
                                "exercise 02 is judged and watched:\n" + text()[-3000:])
                self.assertIn("fixed_pool.hpp", text())
            finally:
                proc.send_signal(signal.SIGINT)
                stuck = ""
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:   # say what it was doing, for whoever reads the failure
                    stuck = subprocess.run(["ps", "-o", "pid,stat,wchan:20,etime,args", "-s", str(proc.pid)],
                                           capture_output=True, text=True).stdout
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            self.assertEqual(proc.returncode, 0, f"watch did not stop on Ctrl-C; its processes were:\n{stuck}\n"
                             + text()[-2000:])
            self.assertNotIn("Traceback", text())
            self.assertIn("Stopped watching", text())
            listing = judge_cli(kit, "list").stdout
            self.assertIn("✓ passed", listing.splitlines()[0])


if __name__ == "__main__":
    unittest.main()
