"""The OpenAI adapter against a local server speaking the Chat Completions wire format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from invokit import Executor, tool
from invokit.loop import (
    AssistantMessage,
    RunResult,
    SystemMessage,
    UserMessage,
    openai_compatible,
    run,
)

from ._server import replay
from ._support import assert_valid, results_of


@tool(name="math.add", read_only=True)
def math_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    """A chat completion shaped like the ones OpenAI and vLLM return."""
    return {
        "id": "chatcmpl-9pRq2v1yQm4cXk7Hn3sTgB8aW0eZd",
        "object": "chat.completion",
        "created": 1722177302,
        "model": "qwen2.5-7b-instruct",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 24, "total_tokens": 144},
    }


CALLS = _completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_12345xyz",
                "type": "function",
                "function": {"name": "math_add", "arguments": '{"a":2,"b":3}'},
            },
            {
                "id": "call_67890abc",
                "type": "function",
                "function": {"name": "math_add", "arguments": '{"a":"two","b":3}'},
            },
        ],
    },
    "tool_calls",
)
ANSWER = _completion({"role": "assistant", "content": "2 + 3 = 5."}, "stop")


@pytest.mark.anyio
async def test_a_run_against_an_openai_compatible_server() -> None:
    """Declarations, calls, results and the replayed history travel in the Chat Completions
    format, with dotted tool names mapped both ways."""
    with replay([CALLS, ANSWER]) as server:
        model = openai_compatible(f"{server.url}/v1", "qwen2.5-7b-instruct", api_key="sk-local")
        try:
            outcome = await run(
                model,
                Executor([math_add]),
                [SystemMessage(text="Use tools."), UserMessage(text="2+3?")],
            )
        finally:
            await model.aclose()
    assert isinstance(outcome, RunResult)
    assert outcome.output == "2 + 3 = 5."
    ok, bad = results_of(outcome.messages)
    assert (ok.call_id, ok.name, ok.structured) == ("call_12345xyz", "math.add", 5)
    assert bad.error is not None
    assert bad.error.kind == "invalid_arguments"
    assert_valid(outcome.messages)

    first, second = server.requests
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-local"
    assert first.body["model"] == "qwen2.5-7b-instruct"
    assert [t["function"]["name"] for t in first.body["tools"]] == ["math_add"]
    assert first.body["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "2+3?"},
    ]
    history = second.body["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "tool"]
    replayed = history[2]["tool_calls"]
    assert [c["function"]["name"] for c in replayed] == ["math_add", "math_add"]
    assert json.loads(replayed[0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert history[3] == {"role": "tool", "tool_call_id": "call_12345xyz", "content": "5"}
    assert history[4]["content"].startswith("Error (invalid_arguments):")
    adapter: TypeAdapter[ChatCompletionMessageParam] = TypeAdapter(ChatCompletionMessageParam)
    for message in history:
        adapter.validate_python(message)


@pytest.mark.anyio
async def test_a_turn_records_finish_reason_and_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapter keeps the finish reason and token usage in the turn's metadata; without a
    key it sends a placeholder that local servers ignore."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with replay([ANSWER]) as server:
        model = openai_compatible(f"{server.url}/v1", "m", settings={"temperature": 0})
        try:
            outcome = await run(model, Executor([math_add]), [UserMessage(text="hi")])
        finally:
            await model.aclose()
    assert isinstance(outcome, RunResult)
    reply = outcome.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.metadata["finish_reason"] == "stop"
    assert reply.metadata["usage"]["total_tokens"] == 144
    assert server.requests[0].body["temperature"] == 0
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"
