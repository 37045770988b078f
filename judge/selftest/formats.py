"""Checks that the judge's machine-readable output is what it claims to be: `test --json`
against judge/schemas/verdict.schema.json, `test --junit` against judge/schemas/junit.xsd.

Standard library only, so the checks run everywhere: a validator for the part of JSON Schema
the schema file uses, and the XSD's rules for the JUnit subset written out in Python. When
xmllint (Debian package libxml2-utils) is installed, the XML is also checked against the XSD
itself, so the two descriptions cannot drift apart unnoticed."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from lab.model.schema import errors as schema_errors

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
VERDICT_SCHEMA = SCHEMAS / "verdict.schema.json"
JUNIT_XSD = SCHEMAS / "junit.xsd"

def json_errors(value, schema: dict | None = None) -> list[str]:
    """Every way `value` breaks the schema (the verdict's when none is given); empty when valid."""
    return schema_errors(value, schema if schema is not None else json.loads(VERDICT_SCHEMA.read_text(encoding="utf-8")))


_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_COUNTS = ("tests", "failures", "errors", "skipped")


def junit_errors(xml_text: str) -> list[str]:
    """Every way the XML breaks the rules of judge/schemas/junit.xsd, and every count that
    disagrees with the test cases it counts; empty when it is valid."""
    try:
        root = ET.fromstring(xml_text.encode("utf-8"))
    except ET.ParseError as err:
        return [f"not well-formed XML: {err}"]
    errors: list[str] = []
    if root.tag != "testsuites":
        return [f"the root element is <{root.tag}>, not <testsuites>"]
    errors += _attributes(root, {"name": None, "time": _DECIMAL, **{c: re.compile(r"^\d+$") for c in _COUNTS}})
    totals = dict.fromkeys(_COUNTS, 0)
    for suite in root:
        if suite.tag != "testsuite":
            errors.append(f"<testsuites> may hold only <testsuite>, not <{suite.tag}>")
            continue
        errors += _suite(suite, totals)
    for key in _COUNTS:
        if root.get(key, "").isdigit() and int(root.get(key)) != totals[key]:
            errors.append(f"<testsuites {key}={root.get(key)}> but the suites hold {totals[key]}")
    return errors


def _suite(suite: ET.Element, totals: dict[str, int]) -> list[str]:
    name = suite.get("name", "?")
    errors = _attributes(suite, {"name": None, "time": _DECIMAL, "timestamp": _DATETIME, "hostname": None,
                                 **{c: re.compile(r"^\d+$") for c in _COUNTS}})
    order = {"properties": 0, "testcase": 1, "system-out": 2, "system-err": 3}
    last = -1
    counted = dict.fromkeys(_COUNTS, 0)
    for child in suite:
        rank = order.get(child.tag)
        if rank is None:
            errors.append(f"testsuite {name}: unexpected <{child.tag}>")
            continue
        if rank < last or (rank == last and child.tag != "testcase"):
            errors.append(f"testsuite {name}: <{child.tag}> is out of order or repeated")
        last = rank
        if child.tag == "properties":
            for prop in child:
                if prop.tag != "property" or set(prop.attrib) != {"name", "value"}:
                    errors.append(f"testsuite {name}: a property needs exactly name and value")
        elif child.tag == "testcase":
            counted["tests"] += 1
            errors += _attributes(child, {"name": None, "classname": None, "time": _DECIMAL}, f"testcase in {name}")
            outcomes = list(child)
            if len(outcomes) > 1:
                errors.append(f"testsuite {name}: a testcase holds {len(outcomes)} outcomes, at most 1 is allowed")
            for outcome in outcomes:
                if outcome.tag not in ("failure", "error", "skipped"):
                    errors.append(f"testsuite {name}: a testcase may hold failure, error or skipped, not {outcome.tag}")
                    continue
                errors += _attributes(outcome, {"message": None, "type": None}, f"<{outcome.tag}> in {name}")
                counted[{"failure": "failures", "error": "errors", "skipped": "skipped"}[outcome.tag]] += 1
    for key in _COUNTS:
        if suite.get(key, "").isdigit() and int(suite.get(key)) != counted[key]:
            errors.append(f"testsuite {name}: {key}={suite.get(key)} but it holds {counted[key]}")
        totals[key] += counted[key]
    return errors


def _attributes(element: ET.Element, allowed: dict, what: str = "") -> list[str]:
    what = what or f"<{element.tag}>"
    errors = []
    for key, pattern in allowed.items():
        value = element.get(key)
        if value is None:
            errors.append(f"{what}: missing the {key} attribute")
        elif pattern is not None and not pattern.match(value):
            errors.append(f"{what}: {key}={value!r} is malformed")
    extra = set(element.attrib) - set(allowed)
    if extra:
        errors.append(f"{what}: unexpected attributes {sorted(extra)}")
    return errors


def xmllint_errors(path: Path) -> list[str] | None:
    """The XSD's own verdict through xmllint, or None when xmllint is not installed."""
    if not shutil.which("xmllint"):
        return None
    proc = subprocess.run(["xmllint", "--noout", "--schema", str(JUNIT_XSD), str(path)],
                          capture_output=True, text=True, timeout=60)
    return [] if proc.returncode == 0 else [proc.stderr.strip()[-2000:]]
