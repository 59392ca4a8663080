"""Anthropic: tool declarations, ``tool_use`` calls and ``tool_result`` messages.

::

    decl = anthropic.tools(registry)
    message = client.messages.create(model=..., messages=history, tools=decl.tools)
    calls = decl.calls(message)                # list[ToolCall], names mapped back
    history += [{"role": "assistant", "content": message.content}, decl.results(results)]

Anthropic takes JSON Schema as it is, so only names are mapped. Error results carry
``is_error: true``. The ``anthropic`` package is not needed: SDK objects and their plain-dict
forms are both read, and everything produced is the plain-dict form the SDK accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from invokit._calls import ImagePart, ToolCall, ToolResult
from invokit._gc import collector_paused
from invokit.providers._content import as_data, part_text, texts
from invokit.providers._declarations import UNNAMED, Declarations, Source, specs_of
from invokit.providers._names import ANTHROPIC_NAMES, NameMap
from invokit.providers._report import LoweringReport

__all__ = ["AnthropicTools", "calls", "results", "tools"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AnthropicTools(Declarations):
    """Declarations for Anthropic, with the way back from its calls."""

    def calls(self, response: Any) -> list[ToolCall]:
        """The tool calls in ``response``; see :func:`calls`."""
        return calls(response, declarations=self)

    def results(self, results: Iterable[ToolResult]) -> dict[str, Any]:
        """The user message that carries ``results`` back; see :func:`results`."""
        return results_message(results)


@collector_paused()
def tools(source: Source, *, cache: bool = False) -> AnthropicTools:
    """Declare the tools of ``source`` for Anthropic.

    The schemas in the declarations are shared with the specs (and with later calls): copy
    one before changing it.

    Args:
        source: a registry, or tools or specs.
        cache: mark the last declaration with ``cache_control`` so the whole (sorted, so
            byte-stable) tool list is a prompt-cache prefix.
    """
    specs = specs_of(source)
    names = NameMap.build((str(s.name) for s in specs), ANTHROPIC_NAMES)
    declared: list[dict[str, Any]] = []
    for spec in specs:
        entry: dict[str, Any] = {"name": names.provider_name(str(spec.name))}
        if spec.description:
            entry["description"] = spec.description
        entry["input_schema"] = spec.input_schema
        declared.append(entry)
    if cache and declared:
        declared[-1]["cache_control"] = {"type": "ephemeral"}
    return AnthropicTools(
        tools=declared,
        names=names,
        report=LoweringReport(provider="anthropic", changes=names.changes()),
    )


def calls(response: Any, *, declarations: Declarations | None = None) -> list[ToolCall]:
    """The ``tool_use`` blocks of an Anthropic message as calls, in order.

    Args:
        response: a ``Message``, its ``content`` blocks, or a message dict (SDK object or dict).
        declarations: what :func:`tools` returned, to map names back.
    """
    decl = declarations or UNNAMED
    data = as_data(response)
    if isinstance(data, Mapping):
        if "content" not in data:
            raise TypeError("not an Anthropic message: no content")
        data = data["content"]
    if isinstance(data, str):
        return []
    if not isinstance(data, list):
        raise TypeError(f"not an Anthropic message: {type(data).__name__}")
    return [
        decl.tool_call(
            call_id=block["id"],
            provider_name=block["name"],
            arguments=block.get("input"),
            metadata={"provider": "anthropic"},
        )
        for block in data
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
    ]


def results(results: Iterable[ToolResult]) -> dict[str, Any]:
    """The user message with one ``tool_result`` block per result, in order.

    Text, JSON and resource links become text blocks, images image blocks; an error result
    has ``is_error: true``.
    """
    return results_message(results)


def results_message(results: Iterable[ToolResult]) -> dict[str, Any]:
    return {"role": "user", "content": [_tool_result(result) for result in results]}


def _tool_result(result: ToolResult) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for part in result.content:
        if isinstance(part, ImagePart):
            source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
            blocks.append({"type": "image", "source": source})
        else:
            blocks.append({"type": "text", "text": part_text(part)})
    if not result.content:
        blocks.extend({"type": "text", "text": text} for text in texts(result))
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    if blocks:
        block["content"] = blocks
    if result.is_error:
        block["is_error"] = True
    return block
