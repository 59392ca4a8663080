"""Reading inside one JSON Schema document: local ``$ref``s, pointers, and subschema checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs

_DEF_KEYS = ("$defs", "definitions")

JSON_TYPE_OF: dict[type, str] = {
    str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null",
    list: "array", dict: "object",
}  # fmt: skip
"""The JSON Schema type name of a parsed JSON value's Python type."""


def escape(key: str) -> str:
    """``key`` as one JSON pointer segment."""
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
