"""`test --junit FILE`: the verdict as JUnit XML, the format classroom autograders and CI
services read. One <testsuite> per stage per configuration, one <testcase> per test.

The subset written here is described by judge/schemas/junit.xsd. A stage can fail without any
single test failing (a leak found at exit, the program ending early, a header that changes
the test framework); such a failure becomes a test case of its own, named `(stage checks)`,
so that a tool that only counts test cases still sees it. The tests of a stage that does not
count (not built, or run through the framework's macros the header changed) are each an error
that says why, whatever they reported."""
from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ..model.files import write_atomically
from ..model.results import ConfigResult, StageResult, StageStatus, TestOutcome, TestStatus, Verdict
from .report import TAMPERED

STAGE_CHECKS = "(stage checks)"

# Characters XML 1.0 cannot carry, not even escaped. A test's output may contain any byte.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def to_xml(verdict: Verdict) -> ET.Element:
    root = ET.Element("testsuites", name=f"AllocLab {verdict.exercise}")
    suites = []
    if verdict.tampering:
        suites.append(_integrity_suite(verdict))
    for config in verdict.configs:
        for stage in config.stages:
            suites.append(_stage_suite(verdict, config, stage))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", _seconds(verdict.seconds))
    root.extend(suites)
    return root


def write(verdict: Verdict, path: Path) -> None:
    """Writes the XML atomically: an autograder polling for the file never reads half of it."""
    tree = ET.ElementTree(to_xml(verdict))
    ET.indent(tree)
    path = path.expanduser().resolve()
    write_atomically(path, ET.tostring(tree.getroot(), encoding="UTF-8", xml_declaration=True) + b"\n")


def _suite(name: str, seconds: float, properties: dict[str, str]) -> ET.Element:
    suite = ET.Element("testsuite", name=name, tests="0", failures="0", errors="0", skipped="0",
                       time=_seconds(seconds), timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"),
                       hostname=socket.gethostname() or "localhost")
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=key, value=value)
    return suite


def _count(suite: ET.Element, key: str) -> None:
    suite.set(key, str(int(suite.get(key, "0")) + 1))


def _stage_suite(verdict: Verdict, config: ConfigResult, stage: StageResult) -> ET.Element:
    label = f"{config.compiler}-{config.sanitizer}"
    suite = _suite(f"{verdict.exercise}.stage{stage.number}-{stage.title}[{label}]", stage.seconds, {
        "exercise": verdict.exercise, "stage": str(stage.number), "suite": stage.suite,
        "compiler": config.compiler, "sanitizer": config.sanitizer, "implementation": verdict.file,
        "status": stage.status})
    classname = f"{verdict.exercise}.{stage.suite}.{label}"
    if stage.status in (StageStatus.NOT_BUILT, StageStatus.TAMPERED):
        # No test of the stage counts, whatever it reported: each is an error that says why.
        message, kind, reason = ("not built", "build", _build_failure(config)) if stage.status == StageStatus.NOT_BUILT \
            else (TAMPERED, "tampered", "\n".join(verdict.tampering))
        for test in stage.tests or [TestOutcome(f"{stage.suite}.(build)", TestStatus.NOT_RUN)]:
            case = _case(suite, classname, test.name, test.seconds)
            ET.SubElement(case, "error", message=message, type=kind).text = _safe(reason)
            _count(suite, "errors")
        return suite
    for test in stage.tests:
        case = _case(suite, classname, test.name, test.seconds)
        text = "\n\n".join(test.messages)
        if test.finding:
            text += "\n\n" + test.finding.raw
        if test.status == TestStatus.FAILED:
            ET.SubElement(case, "failure", message=_first_line(text) or "failed", type="failed").text = _safe(text)
            _count(suite, "failures")
        elif test.status in ("crashed", "timeout", "not run"):
            ET.SubElement(case, "error", message=_first_line(text) or test.status, type=test.status).text = _safe(text)
            _count(suite, "errors")
        elif test.status == "skipped":
            # A skipped test has not passed: the judge counts it as a failure, and so does this file.
            ET.SubElement(case, "failure", message="skipped: " + (_first_line(text) or "the test skipped itself"),
                          type="skipped").text = _safe(text)
            _count(suite, "failures")
    if stage.problems:
        case = _case(suite, classname, f"{stage.suite}.{STAGE_CHECKS}", 0.0)
        text = "\n".join(stage.problems)
        ET.SubElement(case, "failure", message=_first_line(text), type="stage").text = _safe(text)
        _count(suite, "failures")
    notes = getattr(stage, "notes", None)
    if notes:
        ET.SubElement(suite, "system-out").text = _safe("\n".join(notes))
    return suite


def _integrity_suite(verdict: Verdict) -> ET.Element:
    suite = _suite(f"{verdict.exercise}.integrity", 0.0, {"exercise": verdict.exercise,
                                                         "implementation": verdict.file})
    case = _case(suite, f"{verdict.exercise}.integrity", "TestFrameworkUntouched", 0.0)
    text = "\n".join(verdict.tampering)
    ET.SubElement(case, "failure", message="the header changes the test framework's macros",
                  type="tampering").text = _safe(text)
    _count(suite, "failures")
    return suite


def _case(suite: ET.Element, classname: str, name: str, seconds: float) -> ET.Element:
    _count(suite, "tests")
    return ET.SubElement(suite, "testcase", name=name.split(".", 1)[-1], classname=classname,
                         time=_seconds(seconds))


def _build_failure(config: ConfigResult) -> str:
    error = config.build.error
    if error:
        return "\n".join([f"{error.where()}: {error.severity}: {error.message}", *error.context])
    return config.build.problem or "the build failed"


def _first_line(text: str) -> str:
    return _safe(next((line.strip() for line in text.splitlines() if line.strip()), "")[:500])


def _safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"
