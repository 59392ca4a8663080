"""The loop's own transcript: a few provider-neutral messages.

A run keeps its conversation as a list of these; each model adapter translates them to its
provider's format on the way out, and its response back into an :class:`AssistantMessage`.
Every message has a JSON form, so a paused run can be stored and resumed elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

from invokit._calls import ToolCall, ToolResult


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemMessage:
    """Instructions for the model (a system prompt)."""

    role: ClassVar[Literal["system"]] = "system"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage:
    """What the person said."""

    role: ClassVar[Literal["user"]] = "user"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantMessage:
    """One model turn: its text, and the tool calls it made (in order)."""

    role: ClassVar[Literal["assistant"]] = "assistant"
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    """Adapter data about the turn (finish reason, token usage); never sent back."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultsMessage:
    """The results of one turn's calls, one per call, in the order of the calls."""

    role: ClassVar[Literal["tool"]] = "tool"
    results: tuple[ToolResult, ...]


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultsMessage
"""Any message of a run's transcript."""


def message_to_dict(message: Message) -> dict[str, Any]:
    """The JSON form of ``message``, tagged with its ``role``."""
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "text": message.text}
    if isinstance(message, AssistantMessage):
        data: dict[str, Any] = {
            "role": message.role,
            "text": message.text,
            "calls": [call.to_dict() for call in message.calls],
        }
        if message.metadata:
            data["metadata"] = message.metadata
        return data
    return {"role": message.role, "results": [result.to_dict() for result in message.results]}


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """Rebuild a message from :func:`message_to_dict`'s output.

    Raises:
        ValueError: the role is not one of ``system``, ``user``, ``assistant``, ``tool``.
    """
    role = data.get("role")
    if role == "system":
        return SystemMessage(text=data["text"])
    if role == "user":
        return UserMessage(text=data["text"])
    if role == "assistant":
        return AssistantMessage(
            text=data.get("text", ""),
            calls=tuple(ToolCall.from_dict(call) for call in data.get("calls", ())),
            metadata=dict(data.get("metadata") or {}),
        )
    if role == "tool":
        return ToolResultsMessage(
            results=tuple(ToolResult.from_dict(result) for result in data["results"])
        )
    raise ValueError(f"unknown message role {role!r}")
