"""OpenAI: tool declarations, calls and results for Chat Completions and the Responses API.

::

    decl = openai.tools(registry, api="responses", strict=True)
    response = client.responses.create(model=..., input=..., tools=decl.tools)
    calls = decl.calls(response)               # list[ToolCall], names and nulls mapped back
    results = [ (await executor.execute(c)).result for c in calls ]
    next_input = decl.results(results)         # function_call_output items

The ``openai`` package is not needed: SDK objects and their plain-dict forms are both read,
and everything produced is the plain-dict form the SDK accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from invokit._calls import ToolCall, ToolResult
from invokit._gc import collector_paused
from invokit.exceptions import UnsupportedSchema
from invokit.providers._content import as_data, data_url, flagged_text, images
from invokit.providers._declarations import UNNAMED, Declarations, Restorer, Source, specs_of
from invokit.providers._lowered import fresh, lowered
from invokit.providers._names import OPENAI_NAMES, NameMap
from invokit.providers._openai_strict import lower_strict
from invokit.providers._report import Change, LoweringReport
from invokit.providers._restore import ArgumentRestorer

__all__ = ["Api", "OpenAITools", "Strict", "calls", "results", "tools"]

Api: TypeAlias = Literal["chat", "responses"]
Strict: TypeAlias = bool | Literal["auto"]


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenAITools(Declarations):
    """Declarations for OpenAI, with the way back from its calls."""

    api: Api = "chat"
    """Which API the declarations are shaped for."""
    strict: Strict = False
    """Whether schemas were lowered for strict mode (``auto``: where they can be)."""

    def calls(self, response: Any) -> list[ToolCall]:
        """The tool calls in ``response``; see :func:`calls`."""
        return calls(response, declarations=self)

    def results(self, results: Iterable[ToolResult]) -> list[dict[str, Any]]:
        """The messages (chat) or input items (responses) that carry ``results`` back."""
        return results_for(results, api=self.api)


@collector_paused()
def tools(source: Source, *, api: Api = "chat", strict: Strict = False) -> OpenAITools:
    """Declare the tools of ``source`` for OpenAI.

    The schemas in the declarations are shared with the specs (and with later calls): copy
    one before changing it.

    Args:
        source: a registry, or tools or specs.
        api: ``chat`` (Chat Completions) or ``responses`` (the Responses API).
        strict: lower every schema for strict mode (Structured Outputs): calls then always
            match the lowered schema, and placeholder nulls are mapped back before validation.
            ``"auto"`` declares a tool whose schema strict mode cannot represent without
            strict mode, and says so in the report.

    Raises:
        UnsupportedSchema: with ``strict=True``, a schema that strict mode cannot represent.
    """
    specs = specs_of(source)
    names = NameMap.build((str(s.name) for s in specs), OPENAI_NAMES)
    changes: list[Change] = list(names.changes())
    restorers: dict[str, Restorer] = {}
    declared: list[dict[str, Any]] = []
    for spec in specs:
        name = str(spec.name)
        parameters: dict[str, Any] = spec.input_schema
        strict_here = bool(strict)
        if strict:
            done = lowered("openai-strict", lower_strict, spec)
            if isinstance(done, UnsupportedSchema):
                if strict is True:
                    raise fresh(done)
                changes.append(Change.fallback(done, "declared without strict mode"))
                strict_here = False
            else:
                parameters = done[0]
                changes.extend(done[1])
                restorers[name] = ArgumentRestorer(spec.input_schema, placeholder_nulls=True)
        function: dict[str, Any] = {"name": names.provider_name(name)}
        if spec.description:
            function["description"] = spec.description
        function["parameters"] = parameters
        # The Responses API defaults to strict, so the flag is always sent.
        function["strict"] = strict_here
        declared.append(
            {"type": "function", **function}
            if api == "responses"
            else {"type": "function", "function": function}
        )
    return OpenAITools(
        tools=declared,
        names=names,
        report=LoweringReport(provider="openai", changes=tuple(changes)),
        restorers=MappingProxyType(restorers),
        api=api,
        strict=strict,
    )


def calls(response: Any, *, declarations: Declarations | None = None) -> list[ToolCall]:
    """The tool calls in an OpenAI response, in order, parallel calls included.

    Args:
        response: a Chat Completions ``ChatCompletion`` or its ``message``, a Responses API
            ``Response`` or its ``output`` items, as SDK objects or plain dicts.
        declarations: what :func:`tools` returned, to map names and arguments back.

    Only function calls are read: calls of OpenAI's built-in or custom (free-text) tools are
    not invokit tools and are left to the host.
    """
    decl = declarations or UNNAMED
    data = as_data(response)
    out: list[ToolCall] = []
    for item in _call_items(data):
        if item.get("type") == "function_call":  # Responses API
            metadata: dict[str, Any] = {"provider": "openai", "api": "responses"}
            if item.get("id"):
                metadata["item_id"] = item["id"]
            out.append(
                decl.tool_call(
                    call_id=item["call_id"],
                    provider_name=item["name"],
                    arguments=item.get("arguments"),
                    metadata=metadata,
                )
            )
        elif item.get("type", "function") == "function" and "function" in item:  # chat
            function = item["function"]
            out.append(
                decl.tool_call(
                    call_id=item["id"],
                    provider_name=function["name"],
                    arguments=function.get("arguments"),
                    metadata={"provider": "openai", "api": "chat"},
                )
            )
    return out


def results(results: Iterable[ToolResult], *, api: Api = "chat") -> list[dict[str, Any]]:
    """The messages (``chat``) or input items (``responses``) that carry ``results`` back.

    OpenAI has no error flag for tool output, so an error result's text starts with
    ``Error (<kind>):``. Chat tool messages take only text: images follow in one user message.
    """
    return results_for(results, api=api)


def results_for(results: Iterable[ToolResult], *, api: Api) -> list[dict[str, Any]]:
    if api == "responses":
        return [_output_item(result) for result in results]
    messages: list[dict[str, Any]] = []
    pictures: list[dict[str, Any]] = []
    for result in results:
        messages.append(
            {"role": "tool", "tool_call_id": result.call_id, "content": flagged_text(result)}
        )
        found = images(result)
        if found:
            pictures.append({"type": "text", "text": f"Images from tool call {result.call_id}:"})
            pictures.extend(
                {"type": "image_url", "image_url": {"url": data_url(image)}} for image in found
            )
    if pictures:
        messages.append({"role": "user", "content": pictures})
    return messages


def _output_item(result: ToolResult) -> dict[str, Any]:
    text = flagged_text(result)
    found = images(result)
    output: str | list[dict[str, Any]] = text
    if found:
        output = [{"type": "input_text", "text": text}] if text else []
        output.extend({"type": "input_image", "image_url": data_url(image)} for image in found)
    return {"type": "function_call_output", "call_id": result.call_id, "output": output}


def _call_items(data: Any) -> list[Mapping[str, Any]]:
    if isinstance(data, list):
        return [item for item in data if isinstance(item, Mapping)]
    if not isinstance(data, Mapping):
        raise TypeError(f"not an OpenAI response: {type(data).__name__}")
    if "choices" in data:  # ChatCompletion: the first choice is the one a loop continues
        choices = data["choices"]
        return list(choices[0]["message"].get("tool_calls") or ()) if choices else []
    if "output" in data and isinstance(data["output"], list):  # Responses API Response
        return list(data["output"])
    if "tool_calls" in data or (  # a chat message (Anthropic's have a list of blocks)
        data.get("role") == "assistant" and not isinstance(data.get("content"), list)
    ):
        return list(data.get("tool_calls") or ())
    if data.get("type") == "function_call":  # one output item
        return [data]
    raise TypeError("not an OpenAI response: expected choices, output items or tool_calls")
