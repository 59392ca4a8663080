"""The script's view of the tools: one Python function per tool, with typed parameters.

The stubs are generated from the tools' specs, sorted by name, so the compose tool's
description is byte-identical from run to run (prompt caches stay warm).
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from invokit._spec import ToolSpec

_NOT_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
RESERVED = frozenset({"print", "len", "range", "open", "input", "ToolDenied"})


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptFunction:
    """How a function of the script maps onto a tool."""

    name: str
    """The function's name in the script (``fs.read`` is ``fs_read``)."""
    tool: str
    """The tool it calls."""
    params: tuple[str, ...]
    """Parameter names in signature order: positional arguments bind to them."""


def function_name(tool: str) -> str:
    """The script's name for ``tool``: dots and dashes become underscores; a keyword or a
    builtin the script needs gets a trailing underscore."""
    name = _NOT_IDENTIFIER.sub("_", tool)
    if name[:1].isdigit():
        name = "_" + name
    if keyword.iskeyword(name) or name in RESERVED:
        name += "_"
    return name


def _ordered(schema: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], bool]]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    found = [(n, p if isinstance(p, Mapping) else {}, n in required) for n, p in properties.items()]
    return [f for f in found if f[2]] + [f for f in found if not f[2]]


def type_of(schema: Any, depth: int = 0) -> str:
    """A Python annotation for a JSON Schema (``Any`` where it has no simple form)."""
    if not isinstance(schema, Mapping) or depth > 4:
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            parts = dict.fromkeys(type_of(s, depth + 1) for s in schema[union])
            return " | ".join(parts) if "Any" not in parts else "Any"
    kind = schema.get("type")
    if isinstance(kind, list):
        parts = dict.fromkeys(type_of({**schema, "type": k}, depth + 1) for k in kind)
        return " | ".join(parts)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return f"list[{type_of(schema.get('items'), depth + 1)}]"
    if kind == "object":
        extra = schema.get("additionalProperties")
        return (
            f"dict[str, {type_of(extra, depth + 1)}]"
            if isinstance(extra, Mapping)
            else "dict[str, Any]"
        )
    return "Any"


def _default(param: Mapping[str, Any]) -> str:
    if "default" in param:
        value = param["default"]
        if value is None or isinstance(value, bool | int | float | str):
            return repr(value)
    return "None"


def stub(spec: ToolSpec) -> str:
    """One tool as a Python function stub with its first description line as docstring."""
    params = []
    for name, schema, required in _ordered(spec.input_schema):
        shown = f"{name}: {type_of(schema)}"
        params.append(shown if required else f"{shown} = {_default(schema)}")
    returns = type_of(spec.output_schema) if spec.output_schema else "Any"
    summary = (spec.description or "").strip().splitlines()
    doc = summary[0].replace('"""', "'''") if summary else f"Call the tool {spec.name}."
    return (
        f'def {function_name(str(spec.name))}({", ".join(params)}) -> {returns}:\n    """{doc}"""\n'
    )


def script_functions(specs: Iterable[ToolSpec]) -> dict[str, ScriptFunction]:
    """The script's functions by name; two tools with one script name is an error."""
    found: dict[str, ScriptFunction] = {}
    for spec in specs:
        name = function_name(str(spec.name))
        if name in found:
            raise ValueError(
                f"the tools {found[name].tool!r} and {spec.name!r} are both {name}() in a "
                "script; rename one or leave one out of compose"
            )
        params = tuple(n for n, _, _ in _ordered(spec.input_schema))
        found[name] = ScriptFunction(name=name, tool=str(spec.name), params=params)
    return found


def render_stubs(specs: Iterable[ToolSpec]) -> str:
    """Every tool's stub, sorted by tool name."""
    return "\n".join(stub(s) for s in sorted(specs, key=lambda s: str(s.name)))
