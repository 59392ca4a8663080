"""Anthropic declarations, tool_use parsing and tool_result messages, against SDK types."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message, MessageParam, ToolParam

from invokit import ImagePart, JsonPart, ResourceLink, TextPart, ToolCall, ToolRegistry, ToolResult
from invokit.providers import anthropic
from tests.providers._sdk import sdk_accepts
from tests.providers.conftest import payload


def test_declarations_send_the_schema_as_is(registry: ToolRegistry) -> None:
    """Anthropic takes JSON Schema unchanged; only the dotted name is mapped."""
    decl = anthropic.tools(registry)
    weather = decl.tools[1]
    assert weather["name"] == "weather_current"
    assert weather["input_schema"] == registry["weather.current"].spec.input_schema
    assert weather["description"] == "Get the current weather for a location."
    for declared in decl.tools:
        sdk_accepts(ToolParam, declared)
    assert [(c.tool, c.keyword) for c in decl.report] == [("weather.current", "name")]


def test_cache_marks_the_last_declaration(registry: ToolRegistry) -> None:
    """With cache=True only the last declaration carries cache_control."""
    decl = anthropic.tools(registry, cache=True)
    assert "cache_control" not in decl.tools[0]
    assert decl.tools[-1]["cache_control"] == {"type": "ephemeral"}
    sdk_accepts(ToolParam, decl.tools[-1])


@pytest.mark.parametrize("form", ["dict", "sdk", "blocks"])
def test_parallel_tool_use_blocks_become_calls(registry: ToolRegistry, form: str) -> None:
    """Each tool_use block is a call, text blocks are skipped, names are mapped back."""
    data = payload("anthropic_parallel.json")
    response: Any = {
        "dict": data,
        "sdk": Message.model_validate(data),
        "blocks": Message.model_validate(data).content,
    }[form]
    calls = anthropic.tools(registry).calls(response)
    assert [(c.id, c.name) for c in calls] == [
        ("toolu_01A09q90qw90lq917835lq9", "weather.current"),
        ("toolu_01B19r01rx01mr028946mr0", "weather.current"),
        ("toolu_01C29s12sy12ns139057ns1", "send_email"),
    ]
    assert calls[0].arguments == {"location": "San Francisco, CA", "unit": "c"}
    for call in calls:
        registry[call.name].validate(call.arguments)


def test_a_text_only_message_has_no_calls() -> None:
    """A message without tool_use blocks gives no calls."""
    data = payload("anthropic_parallel.json")
    data["content"] = data["content"][:1]
    assert anthropic.calls(data) == []


def test_results_flag_errors_with_is_error() -> None:
    """Results go back in one user message; an error has is_error and its kind-free text."""
    ok = ToolResult(
        call_id="toolu_01A09q90qw90lq917835lq9",
        name="weather.current",
        content=(JsonPart(value={"temp": 15}),),
    )
    failed = ToolResult.failure(
        ToolCall(id="toolu_01C29s12sy12ns139057ns1", name="send_email"), "denied", "not allowed"
    )
    message = anthropic.results([ok, failed])
    assert message == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                "content": [{"type": "text", "text": '{"temp": 15}'}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01C29s12sy12ns139057ns1",
                "content": [{"type": "text", "text": "not allowed"}],
                "is_error": True,
            },
        ],
    }
    sdk_accepts(MessageParam, message)


def test_images_and_links_become_blocks() -> None:
    """Images become base64 image blocks and resource links readable text."""
    result = ToolResult(
        call_id="toolu_1",
        name="screenshot",
        content=(
            ImagePart(data="iVBORw0KGgo=", mime_type="image/png"),
            ResourceLink(uri="file:///tmp/report.pdf", name="report", mime_type="application/pdf"),
        ),
    )
    (block,) = anthropic.results([result])["content"]
    assert block["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {"type": "text", "text": "[resource report (application/pdf) <file:///tmp/report.pdf>]"},
    ]
    sdk_accepts(MessageParam, {"role": "user", "content": [block]})


def test_structured_value_is_sent_when_there_is_no_content() -> None:
    """A result with only a structured value sends it as JSON text."""
    result = ToolResult(call_id="t", name="x", structured={"a": [1, 2]})
    (block,) = anthropic.results([result])["content"]
    assert block["content"] == [{"type": "text", "text": '{"a": [1, 2]}'}]
    empty = ToolResult(call_id="t", name="x", content=(TextPart(text=""),))
    assert anthropic.results([empty])["content"][0]["content"] == [{"type": "text", "text": ""}]
