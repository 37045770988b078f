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

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
VERDICT_SCHEMA = SCHEMAS / "verdict.schema.json"
JUNIT_XSD = SCHEMAS / "junit.xsd"

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}
_KNOWN = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "enum", "required", "properties",
          "additionalProperties", "items", "minimum", "pattern", "oneOf"}


def json_errors(value, schema: dict | None = None, root: dict | None = None, where: str = "$") -> list[str]:
    """Every way `value` breaks the schema; empty when it is valid."""
    if schema is None:
        schema = json.loads(VERDICT_SCHEMA.read_text(encoding="utf-8"))
    root = root or schema
    unknown = set(schema) - _KNOWN
    if unknown:  # a keyword this validator would silently ignore: refuse instead
        return [f"{where}: the schema uses {sorted(unknown)}, which this validator does not check"]
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return json_errors(value, target, root, where)
    errors: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [f"{where}: {type(value).__name__} is not {' or '.join(types)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        errors.append(f"{where}: {value} is below {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not json_errors(value, s, root, where)]
        if len(matching) != 1:
            errors.append(f"{where}: matches {len(matching)} of the oneOf alternatives, not exactly 1")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                errors.extend(json_errors(item, properties[key], root, f"{where}.{key}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected property {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors.extend(json_errors(item, schema["items"], root, f"{where}[{i}]"))
    return errors


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
