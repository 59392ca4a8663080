"""Gemini: function declarations, ``functionCall`` parts and ``functionResponse`` parts.

::

    decl = gemini.tools(registry)
    config = types.GenerateContentConfig(tools=decl.tools)
    response = client.models.generate_content(model=..., contents=history, config=config)
    calls = decl.calls(response)               # list[ToolCall], names and numbers mapped back
    history += [response.candidates[0].content, gemini.as_sdk(decl.results(results))]

Schemas are lowered to the OpenAPI subset of Gemini's ``Schema`` (``schema="openapi"``, the
default), or sent as JSON Schema in ``parametersJsonSchema`` (``schema="json"``). Gemini has
no error flag: an error result's response is ``{"error": {"kind": …, "message": …}}``, a
success's is ``{"output": …}``. Everything produced is the JSON (REST) form; the
``google-genai`` package is needed only for :func:`as_sdk`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from invokit._calls import JsonPart, ToolCall, ToolResult
from invokit._gc import collector_paused
from invokit.exceptions import MissingExtra, UnsupportedSchema
from invokit.providers._content import as_data, field, images, texts
from invokit.providers._declarations import UNNAMED, Declarations, Restorer, Source, specs_of
from invokit.providers._gemini_schema import lower_gemini
from invokit.providers._lowered import fresh, lowered
from invokit.providers._names import GEMINI_NAMES, NameMap
from invokit.providers._report import Change, LoweringReport
from invokit.providers._restore import ArgumentRestorer

if TYPE_CHECKING:
    from google.genai import types

__all__ = ["GeminiTools", "SchemaMode", "as_sdk", "calls", "results", "tools"]

SchemaMode: TypeAlias = Literal["openapi", "json", "auto"]

SYNTHETIC_ID_PREFIX = "invokit-gemini-"
"""Gemini may return calls without ids; those get an id starting with this, never sent back."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GeminiTools(Declarations):
    """Declarations for Gemini, with the way back from its calls."""

    schema: SchemaMode = "openapi"
    """How parameters were declared: lowered ``Schema``, ``parametersJsonSchema``, or
    ``auto`` (lowered where possible)."""

    def calls(self, response: Any) -> list[ToolCall]:
        """The function calls in ``response``; see :func:`calls`."""
        return calls(response, declarations=self)

    def results(self, results: Iterable[ToolResult]) -> dict[str, Any]:
        """The content that carries ``results`` back; see :func:`results`."""
        return results_content(results, self)


@collector_paused()
def tools(source: Source, *, schema: SchemaMode = "openapi") -> GeminiTools:
    """Declare the tools of ``source`` for Gemini, as one ``Tool`` with every declaration.

    The schemas in the declarations are shared with the specs (and with later calls): copy
    one before changing it.

    Args:
        source: a registry, or tools or specs.
        schema: ``openapi`` lowers each input schema to Gemini's ``Schema`` subset and reports
            what changed; ``json`` sends it unchanged as ``parametersJsonSchema``; ``auto``
            lowers where it can and sends the others as JSON Schema, saying so in the report.

    Raises:
        UnsupportedSchema: with ``openapi``, a schema Gemini's ``Schema`` cannot represent.
    """
    specs = specs_of(source)
    names = NameMap.build((str(s.name) for s in specs), GEMINI_NAMES)
    changes: list[Change] = list(names.changes())
    restorers: dict[str, Restorer] = {}
    declared: list[dict[str, Any]] = []
    for spec in specs:
        name = str(spec.name)
        entry: dict[str, Any] = {"name": names.provider_name(name)}
        if spec.description:
            entry["description"] = spec.description
        if schema == "json":
            entry["parametersJsonSchema"] = spec.input_schema
        else:
            done = lowered("gemini", lower_gemini, spec)
            if isinstance(done, UnsupportedSchema):
                if schema == "openapi":
                    raise fresh(done)
                changes.append(Change.fallback(done, "sent as parametersJsonSchema"))
                entry["parametersJsonSchema"] = spec.input_schema
            else:
                parameters = done[0]
                changes.extend(done[1])
                # A function without parameters leaves them out; Gemini refuses an empty OBJECT.
                if parameters.get("properties"):
                    entry["parameters"] = parameters
        restorers[name] = ArgumentRestorer(spec.input_schema, whole_floats=True)
        declared.append(entry)
    return GeminiTools(
        tools=[{"functionDeclarations": declared}] if declared else [],
        names=names,
        report=LoweringReport(provider="gemini", changes=tuple(changes)),
        restorers=MappingProxyType(restorers),
        schema=schema,
    )


def calls(response: Any, *, declarations: Declarations | None = None) -> list[ToolCall]:
    """The function calls of a Gemini response, in order, parallel calls included.

    Only the first candidate is read (the one a conversation continues with). A call without
    an ``id`` gets one starting with :data:`SYNTHETIC_ID_PREFIX`.

    Args:
        response: a ``GenerateContentResponse``, a ``Content``, or its parts; SDK objects,
            their dumps (``function_call``) or REST JSON (``functionCall``).
        declarations: what :func:`tools` returned, to map names and numbers back.
    """
    decl = declarations or UNNAMED
    data = as_data(response)
    response_id = field(data, "response_id", "responseId") if isinstance(data, Mapping) else None
    out: list[ToolCall] = []
    for index, part in enumerate(_parts(data)):
        call = field(part, "function_call", "functionCall") if isinstance(part, Mapping) else None
        if not isinstance(call, Mapping):
            continue
        call_id = call.get("id") or f"{SYNTHETIC_ID_PREFIX}{response_id or 'call'}-{index}"
        metadata: dict[str, Any] = {"provider": "gemini"}
        signature = field(part, "thought_signature", "thoughtSignature")
        if signature is not None:
            metadata["thought_signature"] = signature
        out.append(
            decl.tool_call(
                call_id=call_id,
                provider_name=call["name"],
                arguments=call.get("args") or {},
                metadata=metadata,
            )
        )
    return out


def results(
    results: Iterable[ToolResult], *, declarations: Declarations | None = None
) -> dict[str, Any]:
    """The ``user`` content with one ``functionResponse`` part per result, in order.

    The response is ``{"output": …}`` (the JSON value when the result is one JSON part, else
    the text) or, for an error, ``{"error": {"kind": …, "message": …}}``. Images travel as
    ``inlineData`` parts of the function response.
    """
    return results_content(results, declarations or UNNAMED)


def results_content(results: Iterable[ToolResult], decl: Declarations) -> dict[str, Any]:
    return {"role": "user", "parts": [_function_response(r, decl) for r in results]}


def as_sdk(content: Mapping[str, Any]) -> types.Content:
    """A ``google.genai.types.Content`` from :func:`results`'s JSON form.

    Raises:
        MissingExtra: ``google-genai`` is not installed.
    """
    try:
        from google.genai import types
    except ImportError:
        raise MissingExtra("Gemini SDK objects", "gemini") from None
    # Through JSON so that base64 image data is decoded into bytes as the REST API would.
    return types.Content.model_validate_json(json.dumps(content))


def _function_response(result: ToolResult, decl: Declarations) -> dict[str, Any]:
    text = "\n".join(texts(result))
    response: dict[str, Any]
    if result.is_error:
        kind = result.error.kind if result.error is not None else "execution_failed"
        response = {"error": {"kind": kind, "message": text}}
    elif len(result.content) == 1 and isinstance(result.content[0], JsonPart):
        response = {"output": result.content[0].value}
    elif not result.content and result.structured is not None:
        response = {"output": result.structured}
    else:
        response = {"output": text}
    body: dict[str, Any] = {"name": decl.names.provider_name(result.name), "response": response}
    if not result.call_id.startswith(SYNTHETIC_ID_PREFIX):
        body["id"] = result.call_id
    found = images(result)
    if found:
        body["parts"] = [
            {"inlineData": {"mimeType": image.mime_type, "data": image.data}} for image in found
        ]
    return {"functionResponse": body}


def _parts(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, Mapping):
        raise TypeError(f"not a Gemini response: {type(data).__name__}")
    if "candidates" in data:
        candidates = data["candidates"] or []
        if not candidates:
            return []
        content = candidates[0].get("content") or {}
        return list(content.get("parts") or ())
    if "parts" in data:
        return list(data["parts"] or ())
    raise TypeError("not a Gemini response: expected candidates or parts")
