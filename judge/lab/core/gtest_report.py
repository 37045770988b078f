"""Reading what a GoogleTest program said: its JSON report (--gtest_output=json) and, when it
died before writing one, its console output (which tests finished, which one was running)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..model.catalog import without_root
from ..model.results import TestOutcome, TestStatus, StageResult

CANARY = "AllocLabCanary"   # the suite of judge/tests/support/canary.cpp

_EVENT_RE = re.compile(r"^\[ +(RUN|OK|FAILED|SKIPPED) +\] ([\w/]+\.[\w/]+)", re.M)


def read_report(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def record_report(report: dict, wanted: list[str], outcomes: dict[str, TestOutcome], result: StageResult) -> None:
    seen = {}
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            seen[f"{suite.get('name')}.{test.get('name')}"] = test
    canary = [t for name, t in seen.items() if name.startswith(CANARY + ".")]
    if canary and not all(started(t) for t in canary):
        result.problems.append("the test framework's own check never started: something stopped every test "
                               "from running (a global test environment that skips or fails?), so no verdict "
                               "is possible")
    elif not canary or any(t.get("failures") for t in canary):
        result.problems.append("the assertion checks of the test framework no longer fail when they should: "
                               "the code under test has changed the framework's macros, so no verdict is possible")
    for name in wanted:
        if name in outcomes:
            continue
        test = seen.get(name)
        if test is None or test.get("status") != "RUN" or not started(test):
            continue  # recorded as "not run" below
        failures = [without_root(f.get("failure", "")).strip() for f in test.get("failures", [])]
        seconds = float(str(test.get("time", "0s")).rstrip("s") or 0)
        if failures:
            outcomes[name] = TestOutcome(name, TestStatus.FAILED, failures, None, seconds)
        elif test.get("result") == "SKIPPED":
            outcomes[name] = TestOutcome(name, TestStatus.SKIPPED, ["the test skipped itself in this configuration"],
                                         None, seconds)
        else:
            outcomes[name] = TestOutcome(name, TestStatus.PASSED, [], None, seconds)


def started(test: dict) -> bool:
    """GoogleTest lists a test as run and completed even when a global set-up that skipped or
    failed kept it from starting; only its start time, left at the epoch, tells."""
    stamp = str(test.get("timestamp", ""))
    return not stamp.startswith(("1970-01-01", "1969-12-31"))  # the epoch, in local time


def record_finished(stdout: str, outcomes: dict[str, TestOutcome], wanted: list[str]) -> None:
    """Before a crash, the tests that finished printed their results: keep them."""
    current, lines = None, []
    for line in stdout.splitlines():
        m = _EVENT_RE.match(line)
        if not m:
            if current:
                lines.append(line)
            continue
        event, name = m.groups()
        if event == "RUN":
            current, lines = name, []
        elif current == name and name in wanted and name not in outcomes:
            if event == "OK":
                outcomes[name] = TestOutcome(name, TestStatus.PASSED)
            elif event == "FAILED":
                outcomes[name] = TestOutcome(name, TestStatus.FAILED, [without_root("\n".join(lines)).strip()])
            current = None


def running_test(stdout: str) -> str | None:
    running = None
    for event, name in _EVENT_RE.findall(stdout):
        running = name if event == "RUN" else (None if name == running else running)
    return running
