"""What a call's span says, as OpenTelemetry attributes: event data as attribute values, the
call's arguments only when content is captured, and the tool's description.

Kept apart from the sink (``_otel.py``), which starts and ends spans: this is only the
mapping from invokit's records and specs to the GenAI semantic conventions' attributes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from invokit.execution._audit_encoding import jsonable

if TYPE_CHECKING:
    from invokit._spec import ToolSpec
    from invokit.registry import Registry

CONTENT = frozenset({"arguments", "edited_arguments"})
"""Event data that holds the call's arguments (as sent, or as a person edited them): on a span
only with ``capture_content``. (The permission requests stay: what the policy decided on.)"""


def attributes_of(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: scalars, lists of text, else JSON text."""
    out: dict[str, Any] = {}
    for key, value in jsonable(dict(data)).items():
        name = f"{prefix}.{key}"
        scalar = isinstance(value, str | bool | int | float)
        if scalar or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            out[name] = value
        elif value is not None:
            out[name] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return out


def without_content(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``data`` without what the call was given (:data:`CONTENT`)."""
    if CONTENT.isdisjoint(data):
        return data
    return {key: value for key, value in data.items() if key not in CONTENT}


def json_text(value: Any) -> str:
    return json.dumps(jsonable(value), ensure_ascii=False, sort_keys=True)


class ToolDescriptions:
    """``gen_ai.tool.description`` and ``gen_ai.tool.type`` per tool, kept per spec."""

    def __init__(self) -> None:
        self._descriptions: dict[str, tuple[ToolSpec, dict[str, Any]]] = {}

    def describe(self, registry: Registry, name: str) -> Mapping[str, Any]:
        """``gen_ai.tool.description`` and ``gen_ai.tool.type`` of the tool ``name``:
        ``extension`` for a tool of a remote (MCP) server, ``function`` for a local one
        (kept per spec: a changed tool is described again)."""
        from invokit.permissions.internal import remote_server

        try:
            found = registry.get(name)
            spec = found.current_spec() if found is not None else None
        except Exception:  # a tool that cannot say what it is: no description
            return {}
        if spec is None:
            return {}
        cached = self._descriptions.get(name)
        if cached is not None and cached[0] is spec:
            return cached[1]
        out: dict[str, Any] = {
            "gen_ai.tool.type": "extension" if remote_server(spec) is not None else "function"
        }
        if spec.description:
            out["gen_ai.tool.description"] = spec.description
        if len(self._descriptions) >= 4096:
            self._descriptions.clear()
        self._descriptions[name] = (spec, out)
        return out
