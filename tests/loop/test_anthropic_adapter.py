"""The Anthropic adapter against a local server speaking the Messages API format."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import AsyncAnthropic
from anthropic.types import MessageParam
from pydantic import TypeAdapter

from invokit import Executor, ToolFailed, tool
from invokit.loop import AnthropicModel, RunResult, SystemMessage, UserMessage, run

from ._server import replay
from ._support import assert_valid, results_of


@tool(name="weather.current", read_only=True)
def weather_current(location: str, unit: str = "c") -> dict[str, Any]:
    """The current weather at a place."""
    if location == "Atlantis":
        raise ToolFailed("no weather station there", kind="not_found")
    return {"location": location, "temperature": 21, "unit": unit}


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    """A Messages API response, shaped as the API returns it."""
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 143},
    }


CALLS = _message(
    [
        {"type": "text", "text": "I'll check both places."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "weather_current",
            "input": {"location": "San Francisco, CA", "unit": "c"},
        },
        {
            "type": "tool_use",
            "id": "toolu_01B19r01rx01mr028946mr0",
            "name": "weather_current",
            "input": {"location": "Atlantis"},
        },
    ],
    "tool_use",
)
ANSWER = _message(
    [{"type": "text", "text": "21 °C in San Francisco; Atlantis is unknown."}], "end_turn"
)


@pytest.mark.anyio
async def test_a_run_against_a_messages_api_server() -> None:
    """Tools, tool_use blocks, tool_result blocks (errors flagged) and the system prompt
    travel in the Messages format; roles alternate."""
    with replay([CALLS, ANSWER]) as server:
        client = AsyncAnthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
        model = AnthropicModel(client, "claude-opus-4-6", max_tokens=512)
        try:
            outcome = await run(
                model,
                Executor([weather_current]),
                [SystemMessage(text="Be brief."), UserMessage(text="Weather?")],
            )
        finally:
            await model.aclose()
    assert isinstance(outcome, RunResult)
    assert outcome.output.startswith("21 °C")
    found, failed = results_of(outcome.messages)
    assert found.structured == {"location": "San Francisco, CA", "temperature": 21, "unit": "c"}
    assert failed.error is not None
    assert failed.error.kind == "not_found"
    assert_valid(outcome.messages)

    first, second = server.requests
    assert first.path == "/v1/messages"
    # SDK versions send the key as x-api-key or as a bearer token.
    sent = {first.headers.get("x-api-key"), first.headers.get("authorization")}
    assert sent & {"sk-ant-test", "Bearer sk-ant-test"}
    assert "anthropic-version" in first.headers
    assert first.body["system"] == "Be brief."
    assert first.body["max_tokens"] == 512
    assert [t["name"] for t in first.body["tools"]] == ["weather_current"]
    history = second.body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assistant = history[1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert assistant[1]["name"] == "weather_current"
    assert assistant[2]["input"] == {"location": "Atlantis"}
    blocks = history[2]["content"]
    assert [b["tool_use_id"] for b in blocks] == [
        "toolu_01A09q90qw90lq917835lq9",
        "toolu_01B19r01rx01mr028946mr0",
    ]
    assert "is_error" not in blocks[0]
    assert blocks[1]["is_error"] is True
    adapter: TypeAdapter[MessageParam] = TypeAdapter(MessageParam)
    for message in history:
        adapter.validate_python(message)


@pytest.mark.anyio
async def test_a_user_message_after_results_joins_their_message() -> None:
    """Tool results followed by the person's words become one user message, results first."""
    with replay([CALLS, ANSWER, ANSWER]) as server:
        client = AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        model = AnthropicModel(client, "claude-opus-4-6")
        try:
            executor = Executor([weather_current])
            first = await run(model, executor, [UserMessage(text="Weather?")], max_turns=1)
            assert isinstance(first, RunResult)
            assert first.reason == "max_turns"
            messages = [*first.messages, UserMessage(text="And now?")]
            second = await run(model, executor, messages)
        finally:
            await model.aclose()
    assert isinstance(second, RunResult)
    history = server.requests[1].body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert [b["type"] for b in history[2]["content"]] == ["tool_result", "tool_result", "text"]
