"""Reading inside one JSON Schema document: local ``$ref``s, pointers, and subschema checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema_rs

_DEF_KEYS = ("$defs", "definitions")

JSON_TYPE_OF: dict[type, str] = {
    str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null",
    list: "array", dict: "object",
}  # fmt: skip
"""The JSON Schema type name of a parsed JSON value's Python type."""


MAX_DEPTH = 64
"""Schemas nested deeper than this are refused by every lowering (no provider takes them,
and walking them would only spend the stack)."""


def inline_budget(schema: Any) -> int:
    """How many schema nodes a lowering may produce from ``schema``: twice its length as JSON
    (every node takes at least two characters, so at least four times its node count) plus
    2,000. Ordinary schemas stay far below; only references inlined again and again (growth
    exponential in their nesting) reach it."""
    try:
        return 2 * len(json.dumps(schema, default=str)) + 2_000
    except (RecursionError, ValueError):  # nested too deep to write: the depth cap refuses it
        return 2_000


def accepts_null(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool | None:
    """Whether ``schema`` accepts ``null``, read from its keywords; ``None`` when that takes a
    real validator (``not``, ``if``, ``allOf`` …). Linear in the part of the schema read."""
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None
    for key in schema:
        if key not in _NULL_NEUTRAL:
            return None
    declared = schema.get("type")
    if isinstance(declared, str) and declared != "null":
        return False
    if isinstance(declared, list) and "null" not in declared:
        return False
    if "enum" in schema and None not in schema["enum"]:
        return False
    if "const" in schema and schema["const"] is not None:
        return False
    if "$ref" in schema:
        try:
            target = resolve_ref(root, schema["$ref"])
        except LookupError:
            return None
        answer = accepts_null(target, root, depth + 1)
        if answer is not True:
            return answer
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if branches is None:
            continue
        if not isinstance(branches, list):
            return None
        answers = [accepts_null(b, root, depth + 1) for b in branches]
        if None in answers:
            return None
        hits = answers.count(True)
        if hits == 0 or (keyword == "oneOf" and hits > 1):
            return False
    return True


# Keywords whose effect on a null is known: annotations, and those that apply to other types.
_NULL_NEUTRAL = frozenset(
    {
        "type", "enum", "const", "$ref", "anyOf", "oneOf", "title", "description", "default",
        "examples", "$comment", "format", "pattern", "minLength", "maxLength", "minimum",
        "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "items", "prefixItems",
        "minItems", "maxItems", "uniqueItems", "contains", "properties", "required",
        "additionalProperties", "patternProperties", "minProperties", "maxProperties",
        "propertyNames", "$defs", "definitions", "deprecated", "readOnly", "writeOnly",
    }
)  # fmt: skip


def escape(key: str) -> str:
    """``key`` as one JSON pointer segment."""
    if "~" not in key and "/" not in key:
        return key
    return key.replace("~", "~0").replace("/", "~1")


def resolve_ref(root: Mapping[str, Any], ref: str) -> Any:
    """The subschema a local ``$ref`` (``#`` or ``#/…``) points to in ``root``.

    Raises:
        LookupError: the reference is not local or points nowhere.
    """
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise LookupError(f"only local references are supported, got {ref!r}")
    node: Any = root
    for raw in ref[2:].split("/"):
        segment = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            raise LookupError(f"reference {ref!r} points nowhere")
    return node


class SubschemaChecks:
    """Validates values against subschemas of one document, resolving refs against its root.

    Validators are compiled once per subschema and cached for the life of the object.
    """

    __slots__ = ("_cache", "_root")

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._cache: dict[int, tuple[Any, Any]] = {}

    def accepts(self, subschema: Any, value: Any) -> bool:
        """Whether ``value`` is valid against ``subschema`` (a part of the root document)."""
        if value is None:
            # Most schemas say plainly whether they take null; compiling a validator (with
            # every definition of the root) for each would make lowering quadratic.
            known = accepts_null(subschema, self._root)
            if known is not None:
                return known
        if subschema is True:
            return True
        if subschema is False:
            return False
        key = id(subschema)
        cached = self._cache.get(key)
        if cached is None or cached[0] is not subschema:
            cached = (subschema, self._compile(subschema))
            self._cache[key] = cached
        validator = cached[1]
        return bool(validator.is_valid(value))

    def _compile(self, subschema: Mapping[str, Any]) -> Any:
        document = dict(subschema)
        # Refs inside the subschema name the root's definitions; carry them along.
        for key in (*_DEF_KEYS, "$schema"):
            if key in self._root and key not in document:
                document[key] = self._root[key]
        return jsonschema_rs.validator_for(document)
