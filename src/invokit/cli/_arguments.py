"""Tool arguments from the command line: ``key=value`` pairs, ``key:=JSON``, or ``--args JSON``.

``key=value`` keeps ``value`` a string when the tool's schema wants a string there, and reads
it as JSON otherwise (``offset=3`` is the number 3, ``recursive=true`` the boolean), falling
back to the string when it is not JSON. ``key:=JSON`` is always JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


class ArgumentSyntaxError(ValueError):
    """A command-line argument that is neither ``key=value`` nor ``key:=JSON``."""


def _wants_only_strings(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "string":
        return True
    if "enum" in schema:
        return all(isinstance(v, str) for v in schema["enum"])
    if "const" in schema:
        return isinstance(schema["const"], str)
    return False


def parse_pairs(
    pairs: Sequence[str], input_schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The arguments object ``pairs`` describe, shaped by ``input_schema`` when known."""
    properties: Mapping[str, Any] = (input_schema or {}).get("properties") or {}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ArgumentSyntaxError(
                f"{pair!r} is not key=value (or key:=JSON); quote values with spaces"
            )
        if key.endswith(":"):
            key = key[:-1]
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ArgumentSyntaxError(f"{key}:= needs JSON: {exc}") from None
            continue
        schema = properties.get(key)
        if isinstance(schema, Mapping) and _wants_only_strings(schema):
            out[key] = value
            continue
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def merge_arguments(
    pairs: Sequence[str], args_json: str | None, input_schema: Mapping[str, Any] | None
) -> str | dict[str, Any]:
    """``--args`` JSON text as given (the tool validates it), else the parsed pairs.

    Both together: the pairs override keys of the ``--args`` object.
    """
    if args_json is not None and not pairs:
        return args_json
    parsed = parse_pairs(pairs, input_schema)
    if args_json is None:
        return parsed
    try:
        base = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise ArgumentSyntaxError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(base, dict):
        raise ArgumentSyntaxError("--args must be a JSON object")
    return {**base, **parsed}
