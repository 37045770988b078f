"""The learner's progress: a small JSON file in the working tree (git ignores it), written
atomically so that a judge stopped half-way never leaves it corrupt.

Per exercise it keeps the last verdict on the learner's file (with the file's content hash, so
that `hint` can tell whether it still describes the file), whether the file ever passed, the
hints taken per stage (`hints`: stage number -> how many of the stage's own hints; `test_hints`:
stage number -> test name -> how many of that test's hints; a file written before tests had
hints has no `test_hints` and loads as none taken) and the last quiz score."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from .catalog import ROOT, Exercise
from .files import write_atomically

STATE = ROOT / ".alloclab" / "progress.json"
_VERDICT_KEYS = ("status", "stage", "when", "hash", "test")


def load(path: Path = STATE) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save(data: dict, path: Path = STATE) -> None:
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True).encode("utf-8"))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _update(exercise: Exercise, path: Path, change) -> None:
    data = load(path)
    exercises = data.get("exercises")
    if not isinstance(exercises, dict):
        exercises = data["exercises"] = {}
    entry = exercises.get(exercise.name)
    if not isinstance(entry, dict):
        entry = exercises[exercise.name] = {}
    change(entry)
    save(data, path)


def digest(file: Path) -> str | None:
    """The content hash a verdict is recorded with; None when the file cannot be read."""
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError:
        return None


def record(exercise: Exercise, passed: bool, failing_stage: int | None, path: Path = STATE, *,
           only_stage: int | None = None, compiles: bool = True, file_hash: str | None = None,
           failing_test: str | None = None) -> None:
    """Records a verdict on the learner's file. `only_stage`: the run judged that stage alone,
    so it says nothing about the exercise as a whole and never counts as a pass. `failing_test`:
    the first test that fails (`Suite.Test`), whose own hints `hint` gives first."""
    if not compiles:
        status, stage = "does not compile", None
    elif only_stage is not None:
        status, stage = ("stage passed" if passed else "stage failed"), only_stage
    else:
        status, stage = ("passed" if passed else "failing"), failing_stage

    def change(entry: dict) -> None:
        for key in _VERDICT_KEYS:
            entry.pop(key, None)
        entry.update(status=status, stage=stage, when=_now())
        if failing_test and not passed and compiles:
            entry["test"] = failing_test
        if file_hash:
            entry["hash"] = file_hash
        if status == "passed":
            entry["passed_once"] = True  # survives a reset and a later edit: the reference stays unlocked
    _update(exercise, path, change)


def record_verdict(exercise: Exercise, verdict, file_hash: str | None, path: Path = STATE) -> None:
    """Records a verify.Verdict on the learner's file; a run of fewer stages than the exercise
    has (`test N --stage K`) is recorded as the stage it judged."""
    only = None
    if not verdict.complete:
        judged = [s.number for c in verdict.configs for s in c.stages]
        only = verdict.first_failing_stage() or max(judged, default=None)
    record(exercise, verdict.passed, verdict.first_failing_stage(), path, only_stage=only,
           compiles=all(c.build.ok for c in verdict.configs), file_hash=file_hash,
           failing_test=verdict.first_failing_test())


def restart(exercise: Exercise, path: Path = STATE) -> None:
    """After a reset the file is the skeleton again: the exercise shows as not started, and
    what the learner earned (hints seen, a pass, a quiz score) is kept."""
    def change(entry: dict) -> None:
        for key in _VERDICT_KEYS:
            entry.pop(key, None)
    _update(exercise, path, change)


def has_passed(exercise: Exercise, path: Path = STATE) -> bool:
    entry = status(exercise, path)
    return entry.get("status") == "passed" or bool(entry.get("passed_once"))


def is_fresh(exercise: Exercise, path: Path = STATE, file: Path | None = None) -> bool:
    """Whether the last verdict judged every stage of the file as it is now."""
    entry = status(exercise, path)
    current = digest(file or exercise.exercise_file)
    return (entry.get("status") in ("passed", "failing", "does not compile") and current is not None
            and entry.get("hash") == current)


def note(exercise: Exercise, key: str, value, path: Path = STATE) -> None:
    _update(exercise, path, lambda entry: entry.__setitem__(key, value))


def status(exercise: Exercise, path: Path = STATE) -> dict:
    exercises = load(path).get("exercises")
    entry = exercises.get(exercise.name) if isinstance(exercises, dict) else None
    return entry if isinstance(entry, dict) else {}


def failing_test(exercise: Exercise, path: Path = STATE) -> str | None:
    """The first failing test of the last verdict (`Suite.Test`), when it recorded one."""
    test = status(exercise, path).get("test")
    return test if isinstance(test, str) and test else None


def _counts(raw) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def _stage_hints_taken(exercise: Exercise, path: Path) -> dict[int, int]:
    return {int(k): v for k, v in _counts(status(exercise, path).get("hints")).items() if k.isdigit()}


def test_hints_taken(exercise: Exercise, stage: int, path: Path = STATE) -> dict[str, int]:
    """How many of each test's own hints the learner has taken in `stage`, by test name."""
    by_stage = status(exercise, path).get("test_hints")
    return _counts(by_stage.get(str(stage))) if isinstance(by_stage, dict) else {}


def hints_taken(exercise: Exercise, path: Path = STATE) -> dict[int, int]:
    """How many hints of each stage the learner has taken, by stage number: the stage's own and
    those of its tests together."""
    taken = _stage_hints_taken(exercise, path)
    by_stage = status(exercise, path).get("test_hints")
    for key, tests in (by_stage.items() if isinstance(by_stage, dict) else ()):
        if str(key).isdigit() and (count := sum(_counts(tests).values())):
            taken[int(key)] = taken.get(int(key), 0) + count
    return taken


def take_hint(exercise: Exercise, stage: int, path: Path = STATE) -> tuple[int, bool]:
    """The number (1-based) of the stage's own hint (one for the whole stage) to show next, and
    whether it is new: once every one of them has been shown, the last one, not new."""
    count = len(exercise.stages[stage - 1].stage_hints)
    taken = _stage_hints_taken(exercise, path).get(stage, 0)
    if taken >= count:
        return count, False

    def change(entry: dict) -> None:
        hints = entry.get("hints") if isinstance(entry.get("hints"), dict) else {}
        hints[str(stage)] = taken + 1
        entry["hints"] = hints
    _update(exercise, path, change)
    return taken + 1, True


def take_test_hint(exercise: Exercise, stage: int, test: str, path: Path = STATE) -> tuple[int, bool]:
    """As take_hint, for the hints written for one test of the stage (its name in the suite)."""
    count = len(exercise.stages[stage - 1].hints_for(test))
    taken = test_hints_taken(exercise, stage, path).get(test, 0)
    if taken >= count:
        return count, False

    def change(entry: dict) -> None:
        by_stage = entry.get("test_hints") if isinstance(entry.get("test_hints"), dict) else {}
        tests = by_stage.get(str(stage)) if isinstance(by_stage.get(str(stage)), dict) else {}
        tests[test] = taken + 1
        by_stage[str(stage)] = tests
        entry["test_hints"] = by_stage
    _update(exercise, path, change)
    return taken + 1, True


def record_quiz(exercise: Exercise, right: int, of: int, path: Path = STATE) -> None:
    _update(exercise, path, lambda entry: entry.__setitem__("quiz", {"right": right, "of": of, "when": _now()}))
