"""Mapping a call's arguments back to what the tool's original schema expects.

Two provider quirks are undone here, each only where the original schema is unambiguous:

- ``placeholder_nulls``: strict lowering makes every optional property required and nullable,
  so a model that means "leave it out" sends ``null``. Such a ``null`` is removed again, but
  only for an optional property whose original schema does not itself accept ``null``; there
  it can only mean "left out", and removing it never turns a valid call into an invalid one.
- ``whole_floats``: Gemini carries arguments in a protobuf ``Struct``, whose numbers are all
  doubles, so ``3`` may come back as ``3.0``. Where the original schema wants an integer (and
  not any number), a whole float becomes an ``int``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from invokit.providers._refs import SubschemaChecks, resolve_ref


class ArgumentRestorer:
    """Undoes provider quirks in a call's arguments, guided by the tool's original schema.

    Args:
        schema: the tool's original input schema.
        placeholder_nulls: remove strict-mode placeholder nulls.
        whole_floats: turn whole floats into ints where the schema wants an integer.
    """

    __slots__ = ("_checks", "_floats", "_nulls", "_root")

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        placeholder_nulls: bool = False,
        whole_floats: bool = False,
    ) -> None:
        self._root = schema
        self._checks = SubschemaChecks(schema)
        self._nulls = placeholder_nulls
        self._floats = whole_floats

    def __call__(self, arguments: Any) -> Any:
        """A restored copy of ``arguments``; the input is not changed."""
        return self._walk(arguments, self._root, frozenset())

    def _walk(self, value: Any, schema: Any, refs_here: frozenset[str]) -> Any:
        if not isinstance(schema, Mapping):
            return value
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref not in refs_here:
            # refs_here stops a reference cycle that does not descend into the value.
            try:
                target = resolve_ref(self._root, ref)
            except LookupError:
                target = None
            value = self._walk(value, target, refs_here | {ref})
        for branch in schema.get("allOf", ()):
            value = self._walk(value, branch, refs_here)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                value = self._choose(value, schema[keyword], refs_here)
        if isinstance(value, dict):
            return self._object(value, schema)
        if self._floats and isinstance(value, float) and value.is_integer():
            declared = schema.get("type")
            kinds = declared if isinstance(declared, list) else [declared]
            if "integer" in kinds and "number" not in kinds:
                return int(value)
        items = schema.get("items")
        if isinstance(value, list) and isinstance(items, Mapping):
            return [self._walk(item, items, frozenset()) for item in value]
        return value

    def _object(self, value: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                out[key] = item
            elif (
                self._nulls
                and item is None
                and key not in required
                and not self._checks.accepts(sub, None)
            ):
                continue
            else:
                out[key] = self._walk(item, sub, frozenset())
        return out

    def _choose(self, value: Any, branches: Any, refs_here: frozenset[str]) -> Any:
        # The branch the value was meant for is the one it satisfies once restored.
        for branch in branches:
            candidate = self._walk(value, branch, refs_here)
            if self._checks.accepts(branch, candidate):
                return candidate
        return value
