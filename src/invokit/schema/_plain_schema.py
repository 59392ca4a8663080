"""JSON Schema for the common parameter types, without pydantic, byte-identical to its output.

Most tool parameters are ``str``, ``int``, ``float``, ``bool``, a ``Literal`` of strings or
numbers, a ``list`` or ``dict[str, …]`` of those, or an optional one. pydantic describes each
by building a model class (about 3 ms a function), so rendering 1,000 tools took 3 s. Here each
distinct annotation is described once, from a small grammar, and remembered; anything outside
the grammar (models, dataclasses, ``Annotated`` metadata, tuples, enums …) returns ``None`` and
pydantic describes it as before. ``tests/schema/test_plain_schema.py`` checks the two agree.
"""

from __future__ import annotations

import json
import math
import types
from typing import Any, Literal, Union, get_args, get_origin

_UNKNOWN = "?"
_cache: dict[Any, str] = {}
"""Per annotation, its schema as JSON text (or ``_UNKNOWN``); copies are made by parsing."""
_MAX_CACHE = 4_096
_flat: dict[str, dict[str, Any]] = {}
"""Schemas without nested containers, by their JSON text."""
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}


def annotation_key(annotation: Any) -> Any:
    """What caches of facts about ``annotation`` are keyed by.

    Unions compare equal whatever their order (``int | str == str | int``) but are described
    in their order, so all but plain classes are also keyed by their repr.
    """
    return annotation if isinstance(annotation, type) else (annotation, repr(annotation))


def plain_schema(annotation: Any, key: Any = None) -> dict[str, Any] | None:
    """A fresh JSON Schema for ``annotation``, or ``None`` when it is outside the grammar.

    ``key`` is :func:`annotation_key` of it, when the caller has it already.
    """
    if key is None:
        key = annotation_key(annotation)
    try:
        known = _cache.get(key)
    except TypeError:  # an unhashable annotation: leave it to pydantic
        return None
    if known is None:
        schema = _describe(annotation, 0)
        known = _UNKNOWN if schema is None else json.dumps(schema)
        if len(_cache) < _MAX_CACHE:
            _cache[key] = known
    if known == _UNKNOWN:
        return None
    flat = _flat.get(known)
    if flat is not None:  # no nested containers: a shallow copy is a full one
        return dict(flat)
    copy: dict[str, Any] = json.loads(known)
    if len(_flat) < _MAX_CACHE and not any(isinstance(v, dict | list) for v in copy.values()):
        _flat[known] = dict(copy)
    return copy


def plain_default(value: Any) -> bool:
    """Whether ``value`` is a default pydantic writes into the schema unchanged."""
    if value is None or type(value) in (str, bool, int):
        return True
    return type(value) is float and math.isfinite(value)


def _describe(annotation: Any, depth: int) -> dict[str, Any] | None:
    if depth > 8:
        return None
    if annotation is Any:
        return {}
    scalar = _SCALARS.get(annotation)
    if scalar is not None:
        return dict(scalar)
    origin = get_origin(annotation)
    args = get_args(annotation)
    if annotation is list or (origin is list and not args):
        return {"items": {}, "type": "array"}
    if origin is list and len(args) == 1:
        items = _describe(args[0], depth + 1)
        return None if items is None else {"items": items, "type": "array"}
    if origin is dict and len(args) == 2 and args[0] is str:
        values = _describe(args[1], depth + 1)
        if values is None or args[1] is Any:
            return None
        return {"additionalProperties": values, "type": "object"}
    if origin is Literal:
        return _literal(args)
    if origin in (Union, types.UnionType):
        if any(arg is Any for arg in args):
            return None
        branches = [_describe(arg, depth + 1) for arg in args]
        if any(b is None for b in branches):
            return None
        return {"anyOf": branches}
    return None


def _literal(values: tuple[Any, ...]) -> dict[str, Any] | None:
    kinds = {type(v) for v in values}
    if len(kinds) != 1 or len(set(values)) != len(values):
        return None
    kind = kinds.pop()
    if kind not in (str, int, bool):
        return None
    name = {str: "string", int: "integer", bool: "boolean"}[kind]
    if len(values) == 1:
        return {"const": values[0], "type": name}
    return {"enum": list(values), "type": name}
