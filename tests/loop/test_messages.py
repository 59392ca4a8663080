"""Transcript messages and run states round-trip through JSON unchanged."""

from __future__ import annotations

import json

import pytest

from invokit import ErrorInfo, ImagePart, JsonPart, TextPart, ToolCall, ToolResult
from invokit.loop import (
    AssistantMessage,
    Message,
    RunState,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)

MESSAGES: list[Message] = [
    SystemMessage(text="Be brief."),
    UserMessage(text="Résumé, please"),
    AssistantMessage(
        text="Looking.",
        calls=(
            ToolCall(id="c1", name="fs.read", arguments='{"path": "a.txt"}', turn_id="1"),
            ToolCall(id="c2", name="fs.stat", arguments={"path": "b"}, session_id="s"),
        ),
        metadata={"finish_reason": "tool_calls"},
    ),
    ToolResultsMessage(
        results=(
            ToolResult(call_id="c1", name="fs.read", content=(TextPart(text="hello"),)),
            ToolResult(
                call_id="c2",
                name="fs.stat",
                content=(JsonPart(value={"size": 3}), ImagePart(data="aGk=")),
                is_error=True,
                error=ErrorInfo(kind="denied", message="no"),
            ),
        )
    ),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_message_round_trips(message: Message) -> None:
    """``message_from_dict(json(message_to_dict(m)))`` gives back ``m``."""
    data = json.loads(json.dumps(message_to_dict(message)))
    assert message_from_dict(data) == message


def test_an_unknown_role_is_refused() -> None:
    """A message dict with an unknown role raises rather than being guessed."""
    with pytest.raises(ValueError, match="role"):
        message_from_dict({"role": "narrator", "text": "x"})


def test_a_state_of_an_unknown_version_is_refused() -> None:
    """State from a future format is refused with a clear error."""
    data = RunState(messages=tuple(MESSAGES), pending=()).to_dict()
    assert RunState.from_dict(data).messages == tuple(MESSAGES)
    with pytest.raises(ValueError, match="version"):
        RunState.from_dict({**data, "version": 99})
