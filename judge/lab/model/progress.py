"""The learner's progress: a small JSON file in the working tree (git ignores it), written
atomically so that a judge stopped half-way never leaves it corrupt.

Per exercise it keeps the last verdict on the learner's file (with the file's content hash, so
that `hint` can tell whether it still describes the file), whether the file ever passed, the
hints taken per stage (`hints`: stage number -> how many of the stage's own hints; `test_hints`:
stage number -> test name -> how many of that test's hints; a file written before tests had
hints has no `test_hints` and loads as none taken), the last quiz score, and the last verdict on
the learner's own tests (`my_tests`: valid, chaffs caught, of how many) with how many hints for
writing tests were shown (`my_tests_hints`).

`Progress` is the file's only reader and writer: a command loads it once, asks and changes it
in memory, and saves once. A save applies the command's changes to the file as it is then, so
that two commands at once (a `watch` in one terminal, a `quiz` in another) keep each other's."""
from __future__ import annotations

import hashlib
import json
import time
from enum import StrEnum
from pathlib import Path
from typing import Callable

from .catalog import ROOT, Exercise
from .files import write_atomically

STATE = ROOT / ".alloclab" / "progress.json"
_VERDICT_KEYS = ("status", "stage", "when", "hash", "test")


class Standing(StrEnum):
    """Where the learner's file stands, by its last verdict; the values are the file's words."""
    PASSED = "passed"
    FAILING = "failing"
    NOT_COMPILING = "does not compile"
    STAGE_PASSED = "stage passed"     # one stage judged alone (`test N --stage K`)
    STAGE_FAILED = "stage failed"
    NOT_STARTED = "not started"       # never written: no verdict, or one about the skeleton before a reset

    @property
    def judged_every_stage(self) -> bool:
        return self in (Standing.PASSED, Standing.FAILING, Standing.NOT_COMPILING)


def digest(file: Path) -> str | None:
    """The content hash a verdict is recorded with; None when the file cannot be read."""
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError:
        return None


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _entry(data: dict, name: str) -> dict:
    exercises = data.get("exercises")
    if not isinstance(exercises, dict):
        exercises = data["exercises"] = {}
    entry = exercises.get(name)
    if not isinstance(entry, dict):
        entry = exercises[name] = {}
    return entry


def _counts(raw) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


class Progress:
    def __init__(self, path: Path = STATE):
        self.path = path
        self._data = _read(path)
        self._changes: list[tuple[str, Callable[[dict], None]]] = []

    def save(self) -> None:
        """Writes the changes made since the last save, over the file as it is now."""
        if not self._changes:
            return
        data = _read(self.path)
        for name, change in self._changes:
            change(_entry(data, name))
        write_atomically(self.path, json.dumps(data, indent=2, sort_keys=True).encode("utf-8"))
        self._data, self._changes = data, []

    def _change(self, exercise: Exercise, change: Callable[[dict], None]) -> None:
        change(_entry(self._data, exercise.name))
        self._changes.append((exercise.name, change))

    # -- what it says ----------------------------------------------------------------------------
    def entry(self, exercise: Exercise) -> dict:
        exercises = self._data.get("exercises")
        entry = exercises.get(exercise.name) if isinstance(exercises, dict) else None
        return entry if isinstance(entry, dict) else {}

    def standing(self, exercise: Exercise) -> tuple[Standing, int | None]:
        """Where the file stands, and the stage that is about: the first failing one, or the one
        judged alone."""
        entry = self.entry(exercise)
        try:
            standing = Standing(entry.get("status"))
        except ValueError:
            return Standing.NOT_STARTED, None
        stage = entry.get("stage")
        return standing, stage if isinstance(stage, int) and 1 <= stage <= len(exercise.stages) else None

    def has_passed(self, exercise: Exercise) -> bool:
        """Passes now, or passed once (which survives a reset and a later edit)."""
        return self.standing(exercise)[0] == Standing.PASSED or bool(self.entry(exercise).get("passed_once"))

    def passes_as_it_is(self, exercise: Exercise, file: Path | None = None) -> bool:
        """Whether the last verdict passed, on the file as it is now when that verdict recorded
        which file it judged."""
        recorded = self.entry(exercise).get("hash")
        return (self.standing(exercise)[0] == Standing.PASSED
                and (not recorded or recorded == digest(file or exercise.exercise_file)))

    def is_fresh(self, exercise: Exercise, file: Path | None = None) -> bool:
        """Whether the last verdict judged every stage of the file as it is now."""
        current = digest(file or exercise.exercise_file)
        return (self.standing(exercise)[0].judged_every_stage and current is not None
                and self.entry(exercise).get("hash") == current)

    def failing_test(self, exercise: Exercise) -> str | None:
        """The first failing test of the last verdict (`Suite.Test`), when it recorded one."""
        test = self.entry(exercise).get("test")
        return test if isinstance(test, str) and test else None

    def quiz_score(self, exercise: Exercise) -> tuple[int, int] | None:
        quiz = self.entry(exercise).get("quiz")
        if isinstance(quiz, dict) and isinstance(quiz.get("right"), int) and isinstance(quiz.get("of"), int):
            return quiz["right"], quiz["of"]
        return None

    def _taken(self, exercise: Exercise, stage: int, test: str) -> int:
        entry = self.entry(exercise)
        if not test:
            return _counts(entry.get("hints")).get(str(stage), 0)
        by_stage = entry.get("test_hints")
        return _counts(by_stage.get(str(stage)) if isinstance(by_stage, dict) else None).get(test, 0)

    def hints_seen(self, exercise: Exercise) -> list[tuple[int, str, int]]:
        """What `hint` has shown: (stage, test, how many of its hints) for each list of hints taken
        from, the test's name in its suite or "" for the stage's own hints; stage by stage, a
        stage's tests (in the order their hints come) before the stage's own, as `hint` gives them."""
        seen = []
        for stage in exercise.stages:
            for test in (*stage.hinted_tests, ""):
                count = min(self._taken(exercise, stage.number, test),
                            len(stage.hints_for(test) if test else stage.stage_hints))
                if count:
                    seen.append((stage.number, test, count))
        return seen

    def hints_taken(self, exercise: Exercise) -> dict[int, int]:
        """How many hints of each stage the learner has taken, by stage number: the stage's own and
        those of its tests together."""
        entry = self.entry(exercise)
        taken = {int(k): v for k, v in _counts(entry.get("hints")).items() if k.isdigit()}
        by_stage = entry.get("test_hints")
        for key, tests in (by_stage.items() if isinstance(by_stage, dict) else ()):
            if str(key).isdigit() and (count := sum(_counts(tests).values())):
                taken[int(key)] = taken.get(int(key), 0) + count
        return taken

    # -- what changes it -------------------------------------------------------------------------
    def record(self, exercise: Exercise, passed: bool, failing_stage: int | None, *,
               only_stage: int | None = None, compiles: bool = True, file_hash: str | None = None,
               failing_test: str | None = None) -> None:
        """Records a verdict on the learner's file. `only_stage`: the run judged that stage alone,
        so it says nothing about the exercise as a whole and never counts as a pass; nor does it take
        away the pass of the same file, when it passes too (a stage that fails on it, at another
        seed, is a mistake found, and is recorded). `failing_test`:
        the first test that fails (`Suite.Test`), whose own hints `hint` gives first."""
        if not compiles:
            standing, stage = Standing.NOT_COMPILING, None
        elif only_stage is not None:
            standing, stage = (Standing.STAGE_PASSED if passed else Standing.STAGE_FAILED), only_stage
        else:
            standing, stage = (Standing.PASSED if passed else Standing.FAILING), failing_stage
        when = _now()

        def change(entry: dict) -> None:
            if (standing == Standing.STAGE_PASSED and entry.get("status") == str(Standing.PASSED)
                    and file_hash and entry.get("hash") == file_hash):
                return  # a stage passing again on the very file that passed every stage keeps that pass
            for key in _VERDICT_KEYS:
                entry.pop(key, None)
            entry.update(status=str(standing), stage=stage, when=when)
            if failing_test and not passed and compiles:
                entry["test"] = failing_test
            if file_hash:
                entry["hash"] = file_hash
            if standing == Standing.PASSED:
                entry["passed_once"] = True  # survives a reset and a later edit: the reference stays unlocked
        self._change(exercise, change)

    def record_verdict(self, exercise: Exercise, verdict, file_hash: str | None) -> None:
        """Records a Verdict on the learner's file; a run of fewer stages than the exercise has
        (`test N --stage K`) is recorded as the stage it judged."""
        only = None
        if not verdict.complete:
            judged = [s.number for c in verdict.configs for s in c.stages]
            only = verdict.first_failing_stage() or max(judged, default=None)
        self.record(exercise, verdict.passed, verdict.first_failing_stage(), only_stage=only,
                    compiles=all(c.build.ok for c in verdict.configs), file_hash=file_hash,
                    failing_test=verdict.first_failing_test())

    def restart(self, exercise: Exercise) -> None:
        """After a reset the file is the skeleton again: the exercise shows as not started, and
        what the learner earned (hints seen, a pass, a quiz score) is kept."""
        def change(entry: dict) -> None:
            for key in _VERDICT_KEYS:
                entry.pop(key, None)
        self._change(exercise, change)

    def note(self, exercise: Exercise, key: str, value) -> None:
        self._change(exercise, lambda entry: entry.__setitem__(key, value))

    def take_hint(self, exercise: Exercise, stage: int, test: str = "") -> tuple[int, bool]:
        """The number (1-based) of the hint to show next, of the stage's own (`test` empty) or of
        those written for one test of the stage (its name in the suite), and whether it is new:
        once every one of them has been shown, the last one, not new."""
        current = exercise.stages[stage - 1]
        count = len(current.hints_for(test) if test else current.stage_hints)
        taken = self._taken(exercise, stage, test)
        if taken >= count:
            return count, False

        def change(entry: dict) -> None:
            if test:
                by_stage = entry.get("test_hints") if isinstance(entry.get("test_hints"), dict) else {}
                counts = by_stage.get(str(stage)) if isinstance(by_stage.get(str(stage)), dict) else {}
                by_stage[str(stage)], entry["test_hints"] = counts, by_stage
                counts[test] = taken + 1
            else:
                counts = entry.get("hints") if isinstance(entry.get("hints"), dict) else {}
                entry["hints"] = counts
                counts[str(stage)] = taken + 1
        self._change(exercise, change)
        return taken + 1, True

    def tests_score(self, exercise: Exercise) -> tuple[bool, int, int] | None:
        """The last verdict on the learner's own tests (`examine`): valid, chaffs caught, of how many."""
        tests = self.entry(exercise).get("my_tests")
        if isinstance(tests, dict) and isinstance(tests.get("valid"), bool) and \
                isinstance(tests.get("caught"), int) and isinstance(tests.get("of"), int):
            return tests["valid"], tests["caught"], tests["of"]
        return None

    def record_tests(self, exercise: Exercise, valid: bool, caught: int, of: int, file_hash: str | None) -> None:
        score = {"valid": valid, "caught": caught, "of": of, "when": _now(), "hash": file_hash}
        self._change(exercise, lambda entry: entry.__setitem__("my_tests", score))

    def take_test_hint(self, exercise: Exercise) -> int:
        """The number (1-based) of the hint for writing tests to show next: one more each time, then
        the last again."""
        taken = self.entry(exercise).get("my_tests_hints", 0)
        taken = taken if isinstance(taken, int) and not isinstance(taken, bool) and taken > 0 else 0
        number = min(taken + 1, len(exercise.test_hints))
        self._change(exercise, lambda entry: entry.__setitem__("my_tests_hints", number))
        return number

    def record_quiz(self, exercise: Exercise, right: int, of: int) -> None:
        score = {"right": right, "of": of, "when": _now()}
        self._change(exercise, lambda entry: entry.__setitem__("quiz", score))
