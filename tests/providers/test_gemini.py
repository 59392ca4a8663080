"""Gemini declarations, functionCall parsing and functionResponse parts, against SDK types."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types

from invokit import ImagePart, JsonPart, TextPart, ToolRegistry, ToolResult
from invokit.providers import gemini
from tests.providers.conftest import payload

WEATHER = {
    "name": "weather.current",
    "description": "Get the current weather for a location.",
    "parameters": {
        "type": "OBJECT",
        "properties": {
            "location": {"type": "STRING", "description": "City and country, e.g. Paris, France"},
            "unit": {
                "type": "STRING",
                "default": "c",
                "description": "Temperature unit.",
                "enum": ["c", "f"],
            },
            "days": {
                "type": "INTEGER",
                "default": 1,
                "description": "How many days of forecast to include.",
            },
        },
        "required": ["location"],
    },
}


def test_declarations_are_one_tool_of_lowered_functions(registry: ToolRegistry) -> None:
    """All functions go in one Tool; Gemini keeps dotted names; the SDK reads the JSON form."""
    decl = gemini.tools(registry)
    (tool,) = decl.tools
    assert [f["name"] for f in tool["functionDeclarations"]] == ["send_email", "weather.current"]
    assert tool["functionDeclarations"][1] == WEATHER
    parsed = types.Tool.model_validate(tool)
    assert parsed.function_declarations is not None
    assert parsed.function_declarations[1].parameters == types.Schema.model_validate(
        WEATHER["parameters"]
    )
    assert decl.names.provider_name("weather.current") == "weather.current"
    email = tool["functionDeclarations"][0]["parameters"]["properties"]["cc"]
    assert email["nullable"] is True
    assert email["items"] == {"type": "STRING"}


def test_report_says_additional_properties_were_dropped(registry: ToolRegistry) -> None:
    """The report names each dropped additionalProperties and how it loosens the schema."""
    report = gemini.tools(registry).report
    assert {(c.tool, c.path, c.effect) for c in report.loosened} == {
        ("send_email", "/additionalProperties", "loosened"),
        ("weather.current", "/additionalProperties", "loosened"),
    }


def test_json_schema_mode_sends_the_schema_as_is(registry: ToolRegistry) -> None:
    """schema='json' sends parametersJsonSchema unchanged and reports no schema change."""
    decl = gemini.tools(registry, schema="json")
    weather = decl.tools[0]["functionDeclarations"][1]
    assert weather["parametersJsonSchema"] == registry["weather.current"].spec.input_schema
    assert "parameters" not in weather
    assert len(decl.report) == 0
    types.Tool.model_validate(decl.tools[0])


def test_a_function_without_parameters_leaves_them_out() -> None:
    """A tool with no parameters is declared without a parameters schema."""
    from invokit import tool

    @tool(name="clock.now")
    def now() -> str:
        """Tell the time."""
        return "noon"

    (declared,) = gemini.tools([now]).tools[0]["functionDeclarations"]
    assert declared == {"name": "clock.now", "description": "Tell the time."}


@pytest.mark.parametrize("as_sdk", [False, True], ids=["rest", "sdk"])
def test_parallel_calls_get_stable_ids_and_ints(registry: ToolRegistry, as_sdk: bool) -> None:
    """Calls without ids get synthetic ones; whole floats become ints where the schema says so."""
    data = payload("gemini_parallel.json")
    response: Any = types.GenerateContentResponse.model_validate(data) if as_sdk else data
    calls = gemini.tools(registry).calls(response)
    assert [(c.id, c.name) for c in calls] == [
        ("invokit-gemini-P8kHaM_4Ds2qz7IPrPDn0Ak-0", "weather.current"),
        ("invokit-gemini-P8kHaM_4Ds2qz7IPrPDn0Ak-1", "send_email"),
    ]
    assert calls[0].arguments == {"location": "Mountain View, CA", "days": 3}
    assert isinstance(calls[0].arguments["days"], int)
    for call in calls:
        registry[call.name].validate(call.arguments)


@pytest.mark.parametrize("as_sdk", [False, True], ids=["rest", "sdk"])
def test_call_ids_and_thought_signatures_are_kept(registry: ToolRegistry, as_sdk: bool) -> None:
    """A call's own id is used, and its thought signature travels in metadata."""
    data = payload("gemini_with_ids.json")
    response: Any = types.GenerateContentResponse.model_validate(data) if as_sdk else data
    (call,) = gemini.calls(response, declarations=gemini.tools(registry))
    assert call.id == "fc-7b1d2c3a"
    assert call.metadata["thought_signature"] == (
        "CiQBVKhc7p3MJT0xXNmSgFiRbRGAmmQTaPEW2ZcZ1Rk6Zr8hL4Q="
    )


def test_results_answer_by_name_and_flag_errors_by_content(registry: ToolRegistry) -> None:
    """Outputs go under 'output', errors under 'error'; synthetic ids are not sent back."""
    decl = gemini.tools(registry)
    weather, email = decl.calls(payload("gemini_parallel.json"))
    ok = ToolResult(call_id=weather.id, name=weather.name, content=(JsonPart(value={"t": 9}),))
    failed = ToolResult.failure(email, "approval_denied", "the user said no")
    content = decl.results([ok, failed])
    assert content == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "weather.current", "response": {"output": {"t": 9}}}},
            {
                "functionResponse": {
                    "name": "send_email",
                    "response": {
                        "error": {"kind": "approval_denied", "message": "the user said no"}
                    },
                }
            },
        ],
    }
    sdk = gemini.as_sdk(content)
    assert sdk.parts is not None
    assert sdk.parts[1].function_response is not None
    assert sdk.parts[1].function_response.name == "send_email"


def test_real_ids_and_images_are_sent_back() -> None:
    """A call's real id is echoed and images travel as inline data the SDK decodes."""
    result = ToolResult(
        call_id="fc-7b1d2c3a",
        name="weather.current",
        content=(TextPart(text="map attached"), ImagePart(data="iVBORw0KGgo=")),
    )
    content = gemini.results([result])
    (part,) = content["parts"]
    assert part["functionResponse"]["id"] == "fc-7b1d2c3a"
    assert part["functionResponse"]["response"] == {"output": "map attached"}
    sdk = gemini.as_sdk(content)
    assert sdk.parts is not None
    response = sdk.parts[0].function_response
    assert response is not None
    assert response.parts is not None
    assert response.parts[0].inline_data is not None
    assert response.parts[0].inline_data.data == b"\x89PNG\r\n\x1a\n"
    assert json.loads(sdk.model_dump_json(exclude_none=True))["role"] == "user"


def test_unknown_payloads_are_refused() -> None:
    """A payload of another provider is an error; a response without candidates has no calls."""
    with pytest.raises(TypeError):
        gemini.calls(payload("openai_chat_parallel.json"))
    assert gemini.calls({"candidates": []}) == []


def test_a_content_object_alone_is_read(registry: ToolRegistry) -> None:
    """A model Content (SDK object) is accepted without the whole response."""
    response = types.GenerateContentResponse.model_validate(payload("gemini_with_ids.json"))
    assert response.candidates is not None
    content = response.candidates[0].content
    (call,) = gemini.tools(registry).calls(content)
    assert (call.id, call.name) == ("fc-7b1d2c3a", "weather.current")
