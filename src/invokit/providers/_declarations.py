"""What every provider's ``tools()`` returns: the declarations and the way back.

:class:`Declarations` keeps together what was sent (``tools``), how names were mapped
(``names``), what the lowering changed (``report``) and how to map a call's arguments back
to the original schema. Each provider module subclasses it with ``calls()`` and ``results()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeAlias

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.providers._names import NameMap
from invokit.providers._report import LoweringReport
from invokit.registry import Registry
from invokit.tools import Tool

Restorer: TypeAlias = Callable[[Any], Any]
Source: TypeAlias = Registry | Iterable[ToolSpec | Tool]
"""Where declarations come from: a registry, or tools or specs (listed sorted by name)."""


def specs_of(source: Source) -> list[ToolSpec]:
    """The specs to declare, sorted by name so that prompts stay byte-identical across runs."""
    if isinstance(source, Registry):
        return source.specs()
    specs: list[ToolSpec] = []
    for item in source:
        spec = item.current_spec() if isinstance(item, Tool) else item
        if spec is not None:
            specs.append(spec)
    return sorted(specs, key=lambda spec: str(spec.name))


@dataclass(frozen=True, kw_only=True, slots=True)
class Declarations:
    """Tool declarations for one provider, and the mapping back from its calls."""

    tools: list[dict[str, Any]]
    """The declarations to send, in the provider's JSON form (its SDKs accept it as is)."""
    names: NameMap
    """invokit name ↔ provider name."""
    report: LoweringReport
    """Everything the lowering changed, with its effect on what the model may send."""
    restorers: Mapping[str, Restorer] = field(default_factory=lambda: MappingProxyType({}))
    """Per invokit tool name, how a call's arguments are mapped back (absent: unchanged)."""

    def tool_call(
        self,
        *,
        call_id: str,
        provider_name: str,
        arguments: str | Mapping[str, Any] | None,
        metadata: dict[str, Any],
    ) -> ToolCall:
        """A :class:`ToolCall` under the invokit name with its arguments mapped back."""
        name = self.names.invokit_name(provider_name)
        if provider_name != name:
            metadata = {**metadata, "provider_name": provider_name}
        return ToolCall(
            id=call_id,
            name=name,
            arguments=self.restore(name, arguments),
            metadata=metadata,
        )

    def restore(
        self, name: str, arguments: str | Mapping[str, Any] | None
    ) -> str | Mapping[str, Any]:
        """``arguments`` mapped back to the original schema of the tool ``name``.

        No arguments (``None`` or blank text, as some models send for a tool without
        parameters) is an empty object. Other text that is not a JSON object is returned
        untouched, so that the executor reports exactly what is wrong with it.
        """
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        restorer = self.restorers.get(name)
        if restorer is None:
            return arguments
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except ValueError:
                return arguments
            if not isinstance(parsed, dict):
                return arguments
            arguments = parsed
        restored: Mapping[str, Any] = restorer(dict(arguments))
        return restored


UNNAMED = Declarations(tools=[], names=NameMap(), report=LoweringReport(provider="none"))
"""Declarations that map nothing: used when calls are parsed without a ``tools()`` result."""
