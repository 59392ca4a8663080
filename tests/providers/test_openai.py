"""OpenAI declarations, call parsing and results, against recorded payloads and SDK types."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam

from invokit import ErrorInfo, ImagePart, JsonPart, TextPart, ToolCall, ToolRegistry, ToolResult
from invokit.providers import openai
from tests.providers._sdk import sdk_accepts
from tests.providers.conftest import payload

WEATHER_PARAMETERS = {
    "additionalProperties": False,
    "properties": {
        "location": {"description": "City and country, e.g. Paris, France", "type": "string"},
        "unit": {
            "default": "c",
            "description": "Temperature unit.",
            "enum": ["c", "f"],
            "type": "string",
        },
        "days": {
            "default": 1,
            "description": "How many days of forecast to include.",
            "type": "integer",
        },
    },
    "required": ["location"],
    "type": "object",
}

WEATHER_STRICT = {
    "additionalProperties": False,
    "properties": {
        "location": {"description": "City and country, e.g. Paris, France", "type": "string"},
        "unit": {
            "description": "Temperature unit.",
            "enum": ["c", "f", None],
            "type": ["string", "null"],
        },
        "days": {
            "description": "How many days of forecast to include.",
            "type": ["integer", "null"],
        },
    },
    "required": ["location", "unit", "days"],
    "type": "object",
}


def test_chat_declarations_are_sorted_renamed_and_sdk_valid(registry: ToolRegistry) -> None:
    """Chat declarations list tools sorted by name, with dots mapped, in the SDK's shape."""
    decl = openai.tools(registry)
    assert [t["function"]["name"] for t in decl.tools] == ["send_email", "weather_current"]
    weather = decl.tools[1]
    assert weather == {
        "type": "function",
        "function": {
            "name": "weather_current",
            "description": "Get the current weather for a location.",
            "parameters": WEATHER_PARAMETERS,
            "strict": False,
        },
    }
    for declared in decl.tools:
        sdk_accepts(ChatCompletionFunctionToolParam, declared)
    assert decl.names.provider_name("weather.current") == "weather_current"
    assert [c.keyword for c in decl.report] == ["name"]


def test_responses_declarations_are_flat_and_sdk_valid(registry: ToolRegistry) -> None:
    """Responses API declarations are flat function tools that always say whether they are strict."""
    decl = openai.tools(registry, api="responses", strict=True)
    weather = decl.tools[1]
    assert weather == {
        "type": "function",
        "name": "weather_current",
        "description": "Get the current weather for a location.",
        "parameters": WEATHER_STRICT,
        "strict": True,
    }
    for declared in decl.tools:
        sdk_accepts(FunctionToolParam, declared)


def test_strict_report_says_what_changed(registry: ToolRegistry) -> None:
    """Strict lowering reports each optional property made nullable and each dropped default."""
    report = openai.tools(registry, strict=True).report
    weather = report.for_tool("weather.current")
    assert {(c.path, c.keyword, c.effect) for c in weather} == {
        ("", "name", "none"),
        ("/properties/unit/default", "default", "none"),
        ("/properties/unit", "required", "none"),
        ("/properties/days/default", "default", "none"),
        ("/properties/days", "required", "none"),
    }
    assert report.exact


@pytest.mark.parametrize("as_sdk", [False, True], ids=["dict", "sdk"])
def test_chat_parallel_calls_map_names_back(registry: ToolRegistry, as_sdk: bool) -> None:
    """Every parallel chat tool call becomes a ToolCall under its invokit name, in order."""
    data = payload("openai_chat_parallel.json")
    response: Any = ChatCompletion.model_validate(data) if as_sdk else data
    decl = openai.tools(registry)
    calls = decl.calls(response)
    assert [(c.id, c.name) for c in calls] == [
        ("call_12345xyz", "weather.current"),
        ("call_67890abc", "weather.current"),
        ("call_99999def", "send_email"),
    ]
    assert calls[1].arguments == '{"location":"Bogotá, Colombia","unit":"f"}'
    assert calls[0].metadata == {
        "provider": "openai",
        "api": "chat",
        "provider_name": "weather_current",
    }
    for call in calls:
        registry[call.name].validate(call.arguments)


def test_chat_message_alone_is_read(registry: ToolRegistry) -> None:
    """A chat message (not the whole completion) is accepted too."""
    message = ChatCompletion.model_validate(payload("openai_chat_parallel.json")).choices[0].message
    assert len(openai.calls(message, declarations=openai.tools(registry))) == 3


@pytest.mark.parametrize("as_sdk", [False, True], ids=["dict", "sdk"])
def test_strict_nulls_are_dropped_before_validation(registry: ToolRegistry, as_sdk: bool) -> None:
    """Placeholder nulls vanish where the original refuses null, and stay where it takes null."""
    data = payload("openai_chat_strict.json")
    response: Any = ChatCompletion.model_validate(data) if as_sdk else data
    weather, email = openai.tools(registry, strict=True).calls(response)
    assert weather.arguments == {"location": "Paris, France"}
    assert email.arguments == {"to": "bob@email.com", "body": "Hi bob", "cc": None}
    assert registry["weather.current"].validate(weather.arguments) == {"location": "Paris, France"}
    registry["send_email"].validate(email.arguments)


def test_strict_nulls_break_validation_without_mapping_back(registry: ToolRegistry) -> None:
    """Without the declarations, the same strict payload fails validation (so mapping matters)."""
    weather, _ = openai.calls(payload("openai_chat_strict.json"))
    with pytest.raises(ValueError, match="unit"):
        registry["weather.current"].validate(weather.arguments)


@pytest.mark.parametrize("as_sdk", [False, True], ids=["dict", "sdk"])
def test_responses_parallel_calls(registry: ToolRegistry, as_sdk: bool) -> None:
    """Responses API function_call items become ToolCalls keyed by call_id, item id kept."""
    data = payload("openai_responses_parallel.json")
    response: Any = Response.model_validate(data) if as_sdk else data
    calls = openai.tools(registry, api="responses").calls(response)
    assert [(c.id, c.name) for c in calls] == [
        ("call_unLAR8MvFNptuiZK6K6HCy5k", "weather.current"),
        ("call_Xm2ioFeHA1mxWsUj0pBmJt9u", "send_email"),
    ]
    assert calls[0].metadata["item_id"] == "fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0"
    assert calls[0].metadata["api"] == "responses"


def test_malformed_arguments_are_passed_on_untouched(registry: ToolRegistry) -> None:
    """Arguments that are not JSON are left as text for the executor to report precisely."""
    data = payload("openai_chat_strict.json")
    data["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"location": '
    (weather, _) = openai.tools(registry, strict=True).calls(data)
    assert weather.arguments == '{"location": '


def test_unknown_names_come_back_unchanged(registry: ToolRegistry) -> None:
    """A name the model invented is kept, so the executor can say which tools exist."""
    data = payload("openai_chat_parallel.json")
    data["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = "made_up"
    assert openai.tools(registry).calls(data)[0].name == "made_up"


def test_a_response_without_calls_gives_none() -> None:
    """A plain text answer has no calls."""
    data = payload("openai_chat_parallel.json")
    data["choices"][0]["message"]["tool_calls"] = None
    data["choices"][0]["message"]["content"] = "It is sunny."
    assert openai.calls(data) == []


def test_something_else_is_refused() -> None:
    """A payload of another provider is an error, not an empty list."""
    with pytest.raises(TypeError):
        openai.calls(payload("anthropic_parallel.json"))


def _results() -> list[ToolResult]:
    ok = ToolResult(
        call_id="call_12345xyz",
        name="weather.current",
        content=(JsonPart(value={"temp": 21}),),
    )
    call = ToolCall(id="call_99999def", name="send_email")
    failed = ToolResult.failure(call, "denied", "sending email needs approval")
    return [ok, failed]


def test_chat_results_flag_errors_by_content() -> None:
    """Chat tool messages carry text; an error's text starts with its kind."""
    messages = openai.results(_results())
    assert messages == [
        {"role": "tool", "tool_call_id": "call_12345xyz", "content": '{"temp": 21}'},
        {
            "role": "tool",
            "tool_call_id": "call_99999def",
            "content": "Error (denied): sending email needs approval",
        },
    ]
    for message in messages:
        sdk_accepts(ChatCompletionMessageParam, message)


def test_responses_results_are_function_call_outputs() -> None:
    """Responses API results are function_call_output items keyed by call id."""
    items = openai.results(_results(), api="responses")
    assert items[1] == {
        "type": "function_call_output",
        "call_id": "call_99999def",
        "output": "Error (denied): sending email needs approval",
    }
    for item in items:
        sdk_accepts(ResponseInputItemParam, item)


def test_images_follow_chat_tool_messages_and_join_responses_outputs() -> None:
    """Chat puts images in one user message after the tool messages; Responses inlines them."""
    result = ToolResult(
        call_id="call_1",
        name="screenshot",
        content=(TextPart(text="the page"), ImagePart(data="iVBORw0KGgo=", mime_type="image/png")),
    )
    tool_message, user_message = openai.results([result])
    assert tool_message["content"] == "the page"
    assert user_message["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    sdk_accepts(ChatCompletionMessageParam, user_message)
    for part in user_message["content"]:
        sdk_accepts(ChatCompletionContentPartParam, part)
    (item,) = openai.results([result], api="responses")
    assert item["output"] == [
        {"type": "input_text", "text": "the page"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    ]
    sdk_accepts(ResponseInputItemParam, item)


def test_an_error_without_error_info_still_reads_as_an_error() -> None:
    """An error is flagged even without ErrorInfo, and an empty one reads its error message."""
    result = ToolResult(
        call_id="c", name="x", content=(TextPart(text="boom"),), is_error=True, error=None
    )
    assert openai.results([result])[0]["content"] == "Error (execution_failed): boom"
    other = ToolResult(
        call_id="c", name="x", is_error=True, error=ErrorInfo(kind="timeout", message="slow")
    )
    assert openai.results([other])[0]["content"] == "Error (timeout): slow"


def test_blank_arguments_are_an_empty_object(registry: ToolRegistry) -> None:
    """A call with blank arguments (a tool without parameters) reads as {}."""
    data = payload("openai_chat_parallel.json")
    data["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = ""
    assert openai.tools(registry).calls(data)[0].arguments == {}


def test_output_items_alone_are_read(registry: ToolRegistry) -> None:
    """The Responses API output list (SDK items) is accepted without the Response."""
    response = Response.model_validate(payload("openai_responses_parallel.json"))
    calls = openai.tools(registry, api="responses").calls(response.output)
    assert [c.name for c in calls] == ["weather.current", "send_email"]


def test_colliding_names_round_trip_through_a_response() -> None:
    """With fs.read beside a real fs_read, each call comes back to the right tool."""
    from invokit.tools import declare

    dotted = declare("fs.read", "Read (namespaced).")
    plain = declare("fs_read", "Read (plain).")
    decl = openai.tools([dotted, plain])
    sent = {t["function"]["name"] for t in decl.tools}
    assert "fs_read" in sent and len(sent) == 2
    (moved,) = sent - {"fs_read"}
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": moved, "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "fs_read", "arguments": "{}"}},
        ],
    }
    assert [c.name for c in decl.calls(message)] == ["fs.read", "fs_read"]
