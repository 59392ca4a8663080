"""Cancelling a run closes every open call with an error result and lets the cancel go on."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from invokit import Executor, ToolSpec, tool
from invokit.loop import AssistantMessage, Message, ToolResultsMessage, UserMessage, run
from invokit.testing import ScriptedModel, call, turn

from ._support import add, assert_valid


@pytest.mark.anyio
async def test_cancelling_mid_turn_writes_a_result_for_every_open_call() -> None:
    """Calls in flight when the run is cancelled get ``cancelled`` results, finished ones keep
    theirs; the transcript stays valid and hooks see the closing message."""
    started = anyio.Event()

    @tool(read_only=True)
    async def slow() -> str:
        """Wait a long time."""
        started.set()
        await anyio.sleep(60)
        return "late"

    @tool(read_only=True)
    async def quick() -> int:
        """Answer at once."""
        return 2

    seen: list[Message] = []

    class Watch:
        def on_message(self, message: Message) -> None:
            seen.append(message)

    model = ScriptedModel([turn(call("quick"), call("slow")), "never"])
    messages: list[Message] = [UserMessage(text="x")]
    async with anyio.create_task_group() as group:

        async def drive() -> None:
            await run(model, Executor([quick, slow]), messages, hooks=[Watch()])

        group.start_soon(drive)
        with anyio.fail_after(30):
            await started.wait()
        group.cancel_scope.cancel()
    assert_valid(messages)
    closing = messages[-1]
    assert isinstance(closing, ToolResultsMessage)
    # The finished call keeps its real result; only the open one is marked cancelled.
    assert closing.results[0].structured == 2
    assert [r.error.kind for r in closing.results if r.error] == ["cancelled"]
    assert seen[-1] is closing
    assert model.remaining == 1


@pytest.mark.anyio
async def test_cancelling_while_the_model_thinks_leaves_no_open_call() -> None:
    """A run cancelled during a model turn has appended nothing it cannot answer."""

    async def thinking(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        await anyio.sleep(60)
        return AssistantMessage(text="never")

    messages: list[Message] = [UserMessage(text="x")]
    with anyio.move_on_after(0.2) as scope:
        await run(
            ScriptedModel([turn(call("add", {"a": 1, "b": 2})), thinking]),
            Executor([add]),
            messages,
        )
    assert scope.cancelled_caught
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultsMessage",
    ]
    assert_valid(messages)
