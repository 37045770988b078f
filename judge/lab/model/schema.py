"""The part of JSON Schema that the kit's schemas (judge/schemas/*.schema.json) use, checked with
the standard library alone: the judge's tests validate every machine-readable output against its
schema, and `check` validates the serving engine's real output. A keyword outside this part is
refused rather than silently ignored."""
from __future__ import annotations

import re

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


def errors(value, schema: dict, root: dict | None = None, where: str = "$") -> list[str]:
    """Every way `value` breaks `schema`; empty when it is valid."""
    root = root or schema
    unknown = set(schema) - _KNOWN
    if unknown:  # a keyword this validator would silently ignore: refuse instead
        return [f"{where}: the schema uses {sorted(unknown)}, which this validator does not check"]
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return errors(value, target, root, where)
    found: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [f"{where}: {type(value).__name__} is not {' or '.join(types)}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        found.append(f"{where}: {value} is below {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not errors(value, s, root, where)]
        if len(matching) != 1:
            found.append(f"{where}: matches {len(matching)} of the oneOf alternatives, not exactly 1")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                found.extend(errors(item, properties[key], root, f"{where}.{key}"))
            elif schema.get("additionalProperties") is False:
                found.append(f"{where}: unexpected property {key!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found.extend(errors(item, schema["additionalProperties"], root, f"{where}.{key}"))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found.extend(errors(item, schema["items"], root, f"{where}[{i}]"))
    return found
