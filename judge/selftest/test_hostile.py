"""The hostile corpus: broken and adversarial learner files (judge/selftest/hostile/*.hpp),
each judged for real, and each must get the verdict it states in its header, in bounded time,
with nothing left running and the file untouched. Through the command line too: no Python
traceback, and the exit status that matches the verdict.

Each file starts with lines the test reads:
    // Judge: exercise 1, stage 1[, asan]   what to build and run (one stage keeps it quick)
    // Verdict: passed | failed
    // Outcome: timeout | crashed | not run | skipped | not built | tampering | problem
    // Report says: <text the learner's report must contain, such as the limit that was hit>
    // Command line: no   (optional: skip the CLI run, which would use the catalog's full limits)

The judge runs with small limits (seconds, not the catalog's) and in build trees of its own
(slot "selftest"), so the learner's trees are never reconfigured."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from lab.core import build, judging
from lab.model import catalog as cat, results
from lab.learner import report
from lab.model.catalog import ROOT, Exercise, Stage

from . import formats

HOSTILE = Path(__file__).resolve().parent / "hostile"
SLOT = "selftest"
JUDGE = ROOT / "judge" / "judge.py"
LIMITS = dict(test_timeout_seconds=5, output_bytes=65536, memory_mb=256, build_timeout_seconds=600)

_META = re.compile(r"^//\s*(Judge|Verdict|Outcome|Report says|Command line):\s*(.+?)\s*$", re.M)


@dataclasses.dataclass
class Case:
    path: Path
    exercise: int
    stage: int
    sanitizer: str | None
    verdict: str
    outcome: str | None
    says: list[str]
    cli: bool


def load_case(path: Path) -> Case:
    fields: dict[str, list[str]] = {}
    for key, value in _META.findall(path.read_text(encoding="utf-8")):
        fields.setdefault(key, []).append(value)
    judge = re.match(r"exercise (\d+), stage (\d+)(?:, (asan|tsan))?$", fields["Judge"][0])
    if judge is None:
        raise ValueError(f"{path.name}: malformed Judge line")
    return Case(path, int(judge.group(1)), int(judge.group(2)), judge.group(3), fields["Verdict"][0],
                (fields.get("Outcome") or [None])[0], fields.get("Report says", []),
                not (fields.get("Command line") or ["yes"])[0].startswith("no"))


def small_catalog() -> cat.Catalog:
    catalog = cat.load()
    return dataclasses.replace(catalog, limits=dataclasses.replace(catalog.limits, **LIMITS))


def exercise_for(catalog: cat.Catalog, number: int) -> Exercise:
    found = next((ex for ex in catalog.exercises if ex.id == number), None)
    if found is not None:
        return found
    if number == 2:  # before exercise 02 has its catalog entry: its threaded stage, as the tests define it
        return Exercise(2, "fixed-pool", "The fixed-size pool", "", "medium", "fixed_pool.hpp", ("asan", "tsan"),
                        (Stage(4, "PoolShared", "shared", "", ("asan", "tsan")),))
    raise unittest.SkipTest(f"exercise {number} is not in the catalog")


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def leftover_processes() -> list[str]:
    """Test programs of the self-test trees still running among this process's descendants.
    The judge makes itself a subreaper, so even a program that left its session ends up
    below it. Other judges (another checkout, another self-test run) are not ours to count."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    mine, changed = {os.getpid()}, True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                changed = True
    marker = f"{build.BUILD_ROOT}/"
    found = []
    for pid in sorted(mine - {os.getpid()}):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if args.startswith(marker) and f"-{SLOT}/test_" in args:
            found.append(f"{pid} {args}")
    return found


def wait_for_no_leftovers(seconds: float = 3.0) -> list[str]:
    """A killed process may take a moment to be reaped by the kernel."""
    deadline = time.monotonic() + seconds
    while True:
        left = leftover_processes()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def cli_env() -> dict[str, str]:
    return dict(os.environ, ALLOCLAB_SLOT=SLOT, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")


class HostileCorpus(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        missing = [tool for tool in ("clang++", "cmake", "ninja") if not _which(tool)]
        if missing:
            raise unittest.SkipTest(f"{', '.join(missing)} not installed")
        cls.catalog = small_catalog()

    def judge_case(self, case: Case):
        exercise = exercise_for(self.catalog, case.exercise)
        before = fingerprint(case.path)
        start = time.monotonic()
        request = judging.Request(exercise, build.Impl("source", case.path), ("clang",), (case.stage,), slot=SLOT,
                                  sanitizers=(case.sanitizer,) if case.sanitizer else (), compile_only_judged=True)
        verdict = judging.judge(request, self.catalog.limits)
        took = time.monotonic() - start
        text = report.render(verdict, exercise, verbose=False)
        where = f"{case.path.name}:\n{text}"

        self.assertEqual("passed" if verdict.passed else "failed", case.verdict, where)
        tests = [t for c in verdict.configs for s in c.stages for t in s.tests]
        if case.outcome == "not built":
            self.assertTrue(any(not c.build.ok for c in verdict.configs), where)
        elif case.outcome == "tampering":
            self.assertTrue(verdict.tampering, where)
            # A stage whose tests ran through the altered macros reads so, never as passed, in every output.
            self.assertLessEqual({s.status for c in verdict.configs for s in c.stages},
                                 {results.StageStatus.TAMPERED, results.StageStatus.NOT_BUILT}, where)
        elif case.outcome == "problem":
            self.assertTrue(any(s.problems for c in verdict.configs for s in c.stages), where)
        elif case.outcome:
            self.assertIn(case.outcome, {t.status for t in tests}, where)
        for words in case.says:
            self.assertIn(words, text, where)

        # Bounded: the build, then at most one run per test of the stage, each within the limit.
        runs = max(len(tests), 1) + 1
        build_seconds = sum(c.build.seconds for c in verdict.configs)
        self.assertLess(took - build_seconds, runs * (LIMITS["test_timeout_seconds"] + 5), where)
        self.assertEqual(wait_for_no_leftovers(), [], f"{case.path.name}: test programs left running")
        self.assertEqual(fingerprint(case.path), before, f"{case.path.name}: the judge changed the learner's file")

        # Every verdict, however strange, is valid JSON and valid JUnit.
        data = json.loads(json.dumps(verdict.to_json()))
        self.assertEqual(formats.json_errors(data), [], case.path.name)
        from lab.learner import junit
        with tempfile.TemporaryDirectory() as tmp:
            xml_path = Path(tmp) / "results.xml"
            junit.write(verdict, xml_path)
            self.assertEqual(formats.junit_errors(xml_path.read_text(encoding="utf-8")), [], case.path.name)
            self.assertIn(f'failures="0" errors="0"' if verdict.passed else "<testcase",
                          xml_path.read_text(encoding="utf-8"))
            if verdict.tampering:
                cases = ET.fromstring(xml_path.read_text(encoding="utf-8")).iter("testcase")
                self.assertEqual([c.get("name") for c in cases if not len(c)], [], f"{case.path.name}: a test case passes")

        if case.cli:
            self.judge_through_cli(case, exercise, verdict)

    def judge_through_cli(self, case: Case, exercise: Exercise, verdict: results.Verdict):
        """The same file through `judge.py test`: the tree is already built as wanted, so this
        costs only the runs. Full catalog limits apply here, hence no hanging cases."""
        before = fingerprint(case.path)
        argv = [sys.executable, str(JUDGE), "test", str(exercise.id), "--source", str(case.path),
                "--stage", str(case.stage), "--json"]
        proc = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), cwd=ROOT, timeout=900)
        self.assertNotIn("Traceback", proc.stderr, f"{case.path.name}: the judge itself failed:\n{proc.stderr}")
        self.assertEqual(proc.returncode, 0 if case.verdict == "passed" else 1,
                         f"{case.path.name}: exit status\n{proc.stderr[-2000:]}")
        data = json.loads(proc.stdout)  # one JSON object, nothing else on standard output
        # One stage judged: a pass says so, and never that the exercise passed.
        self.assertEqual(data["verdict"], "stages passed" if case.verdict == "passed" else case.verdict, case.path.name)
        self.assertEqual(formats.json_errors(data), [], case.path.name)
        if verdict.tampering:
            self.assertLessEqual({s["status"] for s in data["stages"]}, {"tampered", "not built"}, case.path.name)
        self.assertEqual(wait_for_no_leftovers(), [], f"{case.path.name}: test programs left running (CLI)")
        self.assertEqual(fingerprint(case.path), before, f"{case.path.name}: the CLI changed the learner's file")


def _which(tool: str) -> bool:
    from shutil import which
    return which(tool) is not None


def _add_cases() -> None:
    for path in sorted(HOSTILE.glob("*.hpp")):
        case = load_case(path)
        name = "test_" + re.sub(r"\W", "_", path.stem)
        setattr(HostileCorpus, name, lambda self, case=case: self.judge_case(case))


_add_cases()


class CorpusIsComplete(unittest.TestCase):
    """The issue's list of hostile files, each present and stating what it expects."""

    REQUIRED = {
        "does-not-compile": "failed", "warnings-only": "passed", "infinite-loop": "failed", "deadlock": "failed",
        "segfault": "failed", "abort": "failed", "stack-overflow": "failed", "undefined-behaviour": "failed",
        "leak": "failed", "absurd-allocation": "failed", "exit-zero-in-a-test": "failed",
        "exit-zero-before-main": "failed", "redefines-assertions": "failed", "undefines-failure-reporting": "failed",
        "floods-stdout": "passed", "floods-stderr": "passed",
    }

    def test_every_item_has_a_file_with_its_expected_verdict(self):
        for stem, verdict in self.REQUIRED.items():
            path = HOSTILE / f"{stem}.hpp"
            self.assertTrue(path.is_file(), f"the hostile corpus lacks {path.name}")
            self.assertEqual(load_case(path).verdict, verdict, path.name)

    def test_every_file_names_an_outcome_or_a_passing_verdict(self):
        for path in HOSTILE.glob("*.hpp"):
            case = load_case(path)
            self.assertTrue(case.verdict == "passed" or case.outcome, f"{path.name}: say which outcome proves it fails")
            self.assertTrue(case.says, f"{path.name}: say what the report must tell the learner")


class TwoJudgesAtOnce(unittest.TestCase):
    """Two judges started together on the same build tree take turns at its lock, and each
    reports on its own file."""

    def test_both_finish_with_their_own_verdict(self):
        if not all(_which(t) for t in ("clang++", "cmake", "ninja")):
            self.skipTest("toolchain not installed")
        good = ROOT / "solutions" / "01-arena" / "arena.hpp"
        bad = HOSTILE / "abort.hpp"
        procs = {}
        for label, path in (("good", good), ("bad", bad)):
            argv = [sys.executable, str(JUDGE), "test", "1", "--source", str(path), "--stage", "1", "--json"]
            procs[label] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            env=cli_env(), cwd=ROOT)
        results = {label: proc.communicate(timeout=900) + (proc.returncode,) for label, proc in procs.items()}
        for label, (out, err, code) in results.items():
            self.assertNotIn("Traceback", err, f"{label}: {err}")
        good_out, _, good_code = results["good"]
        bad_out, _, bad_code = results["bad"]
        self.assertEqual((json.loads(good_out)["verdict"], good_code), ("stages passed", 0),
                         "the reference must pass the stage judged")
        self.assertEqual((json.loads(bad_out)["verdict"], bad_code), ("failed", 1), "abort.hpp must fail")
        self.assertTrue(json.loads(good_out)["file"].endswith("solutions/01-arena/arena.hpp"))
        self.assertTrue(json.loads(bad_out)["file"].endswith("hostile/abort.hpp"))
        self.assertEqual(wait_for_no_leftovers(), [])


if __name__ == "__main__":
    unittest.main()
