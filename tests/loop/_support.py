"""Tools and helpers shared by the loop tests."""

from __future__ import annotations

from pathlib import Path

import anyio

from invokit import Tool, ToolResult, tool
from invokit.loop import AssistantMessage, Message, ToolResultsMessage


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def notebook(path: Path) -> Tool:
    """A destructive tool that appends to ``path``: by default it needs approval."""

    @tool(name="notes.append", destructive=True)
    def append(text: str) -> str:
        """Append a line to the notebook."""
        with path.open("a") as handle:
            handle.write(text + "\n")
        return f"appended {text!r}"

    return append


def rendezvous() -> Tool:
    """A read-only tool whose calls finish only when called in parallel: each call marks its
    side as arrived and waits (at most 30 seconds, a bound on a hang) for the other side."""
    arrived = {"left": anyio.Event(), "right": anyio.Event()}

    @tool(read_only=True)
    async def meet(side: str) -> str:
        """Arrive at one side and wait for the other."""
        arrived[side].set()
        other = "right" if side == "left" else "left"
        with anyio.fail_after(30):
            await arrived[other].wait()
        return f"{side} met {other}"

    return meet


def results_of(messages: list[Message]) -> list[ToolResult]:
    """Every tool result of a transcript, in order."""
    return [r for m in messages if isinstance(m, ToolResultsMessage) for r in m.results]


def assert_valid(messages: list[Message]) -> None:
    """Every call has exactly one result, and it comes after the call."""
    open_ids: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            open_ids.update(call.id for call in message.calls)
        elif isinstance(message, ToolResultsMessage):
            for result in message.results:
                assert result.call_id in open_ids, result.call_id
                assert result.call_id not in answered, result.call_id
                open_ids.discard(result.call_id)
                answered.add(result.call_id)
    assert not open_ids, open_ids
