"""Specs and results in MCP's shapes, and remote MCP tools as invokit specs."""

from __future__ import annotations

from typing import Any

import mcp_types

from invokit import (
    ImagePart,
    JsonPart,
    ResourceLink,
    TextPart,
    ToolAnnotations,
    ToolResult,
    ToolSpec,
)
from invokit.mcp import to_call_tool_result, to_mcp_tool
from invokit.mcp._convert import OutputShape, error_kind_of, result_dict, spec_from_mcp


def _spec(output_schema: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(
        name="fs.read",
        description="Read a file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        output_schema=output_schema,
        annotations=ToolAnnotations(read_only=True, open_world=False),
        tags=frozenset({"fs"}),
        category="filesystem",
    )


def test_tool_keeps_name_schemas_and_hints() -> None:
    """A spec becomes an MCP tool with its dotted name, input schema and MCP hints."""
    tool = to_mcp_tool(_spec({"type": "object", "properties": {"text": {"type": "string"}}}))
    assert tool.name == "fs.read"
    assert tool.input_schema["properties"] == {"path": {"type": "string"}}
    assert tool.output_schema == {"type": "object", "properties": {"text": {"type": "string"}}}
    assert tool.annotations == mcp_types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    assert tool.meta == {"invokit/tags": ["fs"], "invokit/category": "filesystem"}


def test_non_object_output_schema_is_wrapped_in_result() -> None:
    """MCP output schemas are objects: a string schema travels as {"result": ...}."""
    spec = _spec({"type": "string"})
    tool = to_mcp_tool(spec)
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "string"}},
        "required": ["result"],
    }
    result = ToolResult(
        call_id="1", name="fs.read", content=(TextPart(text="hi"),), structured="hi"
    )
    converted = to_call_tool_result(result, spec)
    assert converted.structured_content == {"result": "hi"}


def test_parts_become_content_blocks() -> None:
    """Text, JSON, image and resource-link parts map to MCP content blocks in order."""
    result = ToolResult(
        call_id="1",
        name="t",
        content=(
            TextPart(text="a"),
            JsonPart(value={"b": 1}),
            ImagePart(data="aGk=", mime_type="image/png"),
            ResourceLink(uri="file:///x.txt", mime_type="text/plain"),
        ),
    )
    blocks = result_dict(result)["content"]
    assert blocks == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": '{"b": 1}'},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {
            "type": "resource_link",
            "uri": "file:///x.txt",
            "name": "file:///x.txt",
            "mimeType": "text/plain",
        },
    ]


def test_error_result_has_kind_and_no_structured_content() -> None:
    """An error result is isError with its message; structured data goes to _meta, not content."""
    result = ToolResult.make_error("1", "t", "denied", "no", structured={"rule": "x"})
    converted = to_call_tool_result(result, _spec({"type": "object"}))
    assert converted.is_error is True
    assert converted.structured_content is None
    assert converted.meta == {"invokit/error": {"kind": "denied", "data": {"rule": "x"}}}
    assert error_kind_of(converted) == "denied"


def test_structured_value_breaking_the_output_schema_becomes_an_error() -> None:
    """A success whose value does not match the output schema is sent as an error, not as-is."""
    shape = OutputShape.of(
        _spec({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    )
    result = ToolResult(call_id="1", name="t", structured={"n": "x"})
    converted = result_dict(result, shape)
    assert converted["isError"] is True
    assert converted["_meta"]["invokit/error"]["kind"] == "output_invalid"
    assert "structuredContent" not in converted


def test_a_cut_result_under_an_output_schema_is_output_too_large() -> None:
    """A result cut to its output limit has no structured value; under an output schema it is
    sent as output_too_large, not blamed on the tool as output_invalid."""
    shape = OutputShape.of(
        _spec({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    )
    cut = ToolResult(call_id="1", name="t", content=(TextPart(text="{..."),), truncated=True)
    converted = result_dict(cut, shape)
    assert converted["isError"] is True
    assert converted["_meta"]["invokit/error"]["kind"] == "output_too_large"
    assert "structuredContent" not in converted


def test_object_result_without_schema_is_structured_unless_truncated() -> None:
    """A dict result travels as structuredContent, except when the text was cut to a limit."""
    whole = ToolResult(call_id="1", name="t", structured={"a": 1})
    cut = ToolResult(call_id="1", name="t", structured={"a": 1}, truncated=True)
    assert result_dict(whole)["structuredContent"] == {"a": 1}
    assert "structuredContent" not in result_dict(cut)


def test_remote_tool_becomes_a_spec_with_hints() -> None:
    """An MCP tool maps back to a spec: description, schemas and hints; the server's tags and
    category are its claims, so they are kept where no policy rule selects by them."""
    remote = to_mcp_tool(_spec({"type": "object"}))
    spec = spec_from_mcp(remote, name="srv.fs.read")
    assert spec.name == "srv.fs.read"
    assert spec.description == "Read a file."
    assert spec.annotations == ToolAnnotations(read_only=True, open_world=False)
    assert spec.tags == frozenset({"mcp", "mcp:fs"})
    assert spec.category is None
    assert spec.metadata["mcp_category"] == "filesystem"
    assert spec.output_schema == {"type": "object"}
