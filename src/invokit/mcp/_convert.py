"""invokit specs and results in MCP's shapes, and back.

Results are built as wire dictionaries (camelCase keys, as MCP sends them): the server hands them
to the SDK as they are, which spares a pydantic model per call on the hot path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
import mcp_types

from invokit._calls import ContentPart, ImagePart, JsonPart, ResourceLink, TextPart, ToolResult
from invokit._spec import ToolAnnotations, ToolSpec

ERROR_META = "invokit/error"
"""``_meta`` key of an error result: ``{"kind": ..., "data": ...}`` for hosts; models read the text."""
TAGS_META = "invokit/tags"
CATEGORY_META = "invokit/category"
RESULT_KEY = "result"
"""The property that carries a non-object result under an MCP output schema (MCP needs objects)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputShape:
    """How one tool's structured result travels in ``structuredContent``."""

    schema: dict[str, Any] | None
    """The MCP ``outputSchema`` (always an object schema), or ``None``."""
    wrapped: bool
    """The tool's own schema is not an object: its value travels as ``{"result": value}``."""
    validator: Any = None
    """A compiled validator of :attr:`schema`."""

    @classmethod
    def of(cls, spec: ToolSpec) -> OutputShape:
        own = spec.output_schema
        if own is None:
            return cls(schema=None, wrapped=False)
        if own.get("type") == "object":
            schema, wrapped = own, False
        else:
            schema = {"type": "object", "properties": {RESULT_KEY: own}, "required": [RESULT_KEY]}
            for key in ("$defs", "definitions"):
                # References inside the wrapped schema point at the root; keep them resolvable.
                if key in own:
                    schema[key] = own[key]
            wrapped = True
        try:
            validator = jsonschema_rs.validator_for(schema)
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError):
            validator = None
        return cls(schema=schema, wrapped=wrapped, validator=validator)


def tool_dict(spec: ToolSpec, shape: OutputShape | None = None) -> dict[str, Any]:
    """The MCP ``Tool`` for ``spec`` in wire form."""
    shape = shape or OutputShape.of(spec)
    data: dict[str, Any] = {
        "name": str(spec.name),
        "description": spec.description,
        "inputSchema": spec.input_schema,
    }
    if shape.schema is not None:
        data["outputSchema"] = shape.schema
    hints = spec.annotations.to_mcp()
    if hints:
        data["annotations"] = hints
    meta: dict[str, Any] = {}
    if spec.tags:
        meta[TAGS_META] = sorted(spec.tags)
    if spec.category is not None:
        meta[CATEGORY_META] = spec.category
    if meta:
        data["_meta"] = meta
    return data


def to_mcp_tool(spec: ToolSpec) -> mcp_types.Tool:
    """The MCP tool declaration for ``spec``: name, description, schemas, hints.

    A non-object output schema is wrapped as ``{"result": ...}`` (MCP output schemas are
    objects); tags and category travel in ``_meta``.
    """
    return mcp_types.Tool.model_validate(tool_dict(spec), by_name=False)


def part_dict(part: ContentPart) -> dict[str, Any]:
    """One content part as an MCP content block."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, JsonPart):
        return {"type": "text", "text": json.dumps(part.value, ensure_ascii=False)}
    if isinstance(part, ImagePart):
        return {"type": "image", "data": part.data, "mimeType": part.mime_type}
    link: dict[str, Any] = {"type": "resource_link", "uri": part.uri, "name": part.name or part.uri}
    if part.mime_type is not None:
        link["mimeType"] = part.mime_type
    if part.description is not None:
        link["description"] = part.description
    return link


def result_dict(result: ToolResult, shape: OutputShape | None = None) -> dict[str, Any]:
    """The MCP ``CallToolResult`` for ``result`` in wire form.

    An error result carries its message as text and its ``kind`` in ``_meta``; it never has
    ``structuredContent`` (clients must not validate an error against the output schema). A
    success under an output schema carries ``structuredContent`` that matches it; a value that
    does not match turns the result into an error rather than a protocol violation.
    """
    if result.is_error:
        return _error_dict(result)
    content = [part_dict(p) for p in result.content]
    data: dict[str, Any] = {"content": content, "isError": False}
    structured = result.structured
    if shape is not None and shape.schema is not None:
        if result.truncated:
            # A cut result has no structured value (it would be the whole output again), so
            # it cannot meet the output schema: say why, rather than blame the tool.
            # The cut text still goes along: it says where the rest went, if it was spilled.
            message = (
                f"The output of {result.name!r} was over the output limit and was cut, so it "
                "cannot be returned as its declared structured output. Ask for less."
            )
            cut = result_text(result)
            return error_dict("output_too_large", f"{message}\n\n{cut}" if cut else message)
        value = {RESULT_KEY: structured} if shape.wrapped else structured
        if shape.validator is not None and not shape.validator.is_valid(value):
            problems = "; ".join(
                f"{_path(e.instance_path)}: {e.message}"
                for _, e in zip(range(3), shape.validator.iter_errors(value), strict=False)
            )
            return error_dict(
                "output_invalid",
                f"Tool {result.name!r} returned a result that does not match its output schema "
                f"({problems}). This is a bug in the tool.",
            )
        data["structuredContent"] = value
    elif isinstance(structured, dict) and not result.truncated:
        data["structuredContent"] = structured
    return data


def to_call_tool_result(
    result: ToolResult, spec: ToolSpec | None = None
) -> mcp_types.CallToolResult:
    """The MCP ``CallToolResult`` for ``result``; pass the tool's ``spec`` for structured output."""
    shape = OutputShape.of(spec) if spec is not None else None
    return mcp_types.CallToolResult.model_validate(result_dict(result, shape), by_name=False)


def error_dict(kind: str, message: str, data: Any = None) -> dict[str, Any]:
    """An MCP error result (``isError``) with ``message`` for the model and ``kind`` for hosts."""
    meta: dict[str, Any] = {"kind": kind}
    if data is not None:
        meta["data"] = data
    return {
        "content": [{"type": "text", "text": message}],
        "isError": True,
        "_meta": {ERROR_META: meta},
    }


def _error_dict(result: ToolResult) -> dict[str, Any]:
    kind = result.error.kind if result.error is not None else "execution_failed"
    data = error_dict(kind, "", result.structured)
    data["content"] = [part_dict(p) for p in result.content] or [
        {"type": "text", "text": result.error.message if result.error else "The tool failed."}
    ]
    return data


def result_text(result: ToolResult) -> str:
    """The text parts of ``result``, joined."""
    return "\n".join(p.text for p in result.content if isinstance(p, TextPart))


def _path(parts: Any) -> str:
    items = list(parts)
    return "/".join(str(p) for p in items) if items else "(root)"


# -- MCP → invokit (the client side) -------------------------------------------------------


def spec_from_mcp(tool: mcp_types.Tool, *, name: str | None = None) -> ToolSpec:
    """An invokit spec for a remote MCP tool (``name`` overrides the tool's own).

    The server's own labels are its claims, and policy rules select tools by tag and category
    (``tag:read & category:filesystem``). So a remote tool is tagged ``mcp``, its labels are
    kept only under an ``mcp:`` prefix, and its category goes to the spec's metadata.
    """
    hints = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    )
    meta = tool.meta or {}
    remote_tags = meta.get(TAGS_META)
    remote_category = meta.get(CATEGORY_META)
    tags = {"mcp"}
    if isinstance(remote_tags, list):
        tags.update(f"mcp:{t}" for t in remote_tags if isinstance(t, str))
    input_schema = dict(tool.input_schema)
    input_schema.setdefault("type", "object")
    return ToolSpec(
        name=name or tool.name,
        description=tool.description or tool.title or "",
        input_schema=input_schema,
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=ToolAnnotations.from_mcp(hints),
        tags=frozenset(tags),
        metadata={"mcp_category": remote_category} if isinstance(remote_category, str) else {},
    )


def parts_from_mcp(blocks: list[mcp_types.ContentBlock]) -> tuple[ContentPart, ...]:
    """invokit content parts for MCP content blocks (audio and embedded blobs described in text)."""
    out: list[ContentPart] = []
    for block in blocks:
        if isinstance(block, mcp_types.TextContent):
            out.append(TextPart(text=block.text))
        elif isinstance(block, mcp_types.ImageContent):
            out.append(ImagePart(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, mcp_types.ResourceLink):
            out.append(
                ResourceLink(
                    uri=str(block.uri),
                    name=block.name,
                    mime_type=block.mime_type,
                    description=block.description,
                )
            )
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                out.append(TextPart(text=text))
            else:
                out.append(ResourceLink(uri=str(resource.uri), mime_type=resource.mime_type))
        else:
            out.append(TextPart(text=f"[{block.type} content ({block.mime_type}) not shown]"))
    return tuple(out)


def error_kind_of(result: mcp_types.CallToolResult) -> str:
    """The invokit error kind an invokit server put in ``_meta``, else ``remote_error``."""
    meta = result.meta or {}
    info = meta.get(ERROR_META)
    if isinstance(info, Mapping) and isinstance(info.get("kind"), str):
        return str(info["kind"])
    return "remote_error"
