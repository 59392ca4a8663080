"""``ScriptedModel`` replays its script, records requests and fails clearly past the end."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from invokit import ToolSpec
from invokit.loop import AssistantMessage, Message, UserMessage
from invokit.testing import ScriptedModel, ScriptExhausted, call, turn

SPECS: tuple[ToolSpec, ...] = ()


@pytest.mark.anyio
async def test_turns_are_replayed_in_order_and_requests_recorded() -> None:
    """Each request gets the next turn; text becomes a final answer; requests are kept."""
    model = ScriptedModel([turn(call("add", {"a": 1}), text="adding"), "done"])
    first = await model.respond([UserMessage(text="hi")], SPECS)
    assert first.text == "adding"
    assert [(c.name, c.arguments) for c in first.calls] == [("add", {"a": 1})]
    second = await model.respond([UserMessage(text="hi"), first], SPECS)
    assert second == AssistantMessage(text="done")
    assert [len(r.messages) for r in model.requests] == [1, 2]
    assert model.remaining == 0


@pytest.mark.anyio
async def test_calls_without_ids_are_numbered_by_the_transcript() -> None:
    """Empty ids become ``call_<turn>_<index>``, the turn counted from the transcript;
    given ids are kept."""
    model = ScriptedModel([turn(call("a"), call("b", id="mine"))])
    earlier: list[Message] = [UserMessage(text="x"), AssistantMessage(text="before")]
    reply = await model.respond(earlier, SPECS)
    assert [c.id for c in reply.calls] == ["call_2_0", "mine"]


@pytest.mark.anyio
async def test_a_function_turn_sees_the_transcript() -> None:
    """Sync and async functions in a script build their turn from what the model was sent."""

    def echo(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        last = messages[-1]
        assert isinstance(last, UserMessage)
        return AssistantMessage(text=last.text.upper())

    async def count(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        return AssistantMessage(text=str(len(messages)))

    model = ScriptedModel([echo, count])
    assert (await model.respond([UserMessage(text="hey")], SPECS)).text == "HEY"
    assert (await model.respond([UserMessage(text="a"), UserMessage(text="b")], SPECS)).text == "2"


@pytest.mark.anyio
async def test_asking_past_the_script_raises_script_exhausted() -> None:
    """One request too many raises an AssertionError naming the script's length."""
    model = ScriptedModel(["only"])
    await model.respond([UserMessage(text="x")], SPECS)
    with pytest.raises(ScriptExhausted) as caught:
        await model.respond([UserMessage(text="again")], SPECS)
    assert isinstance(caught.value, AssertionError)
    assert caught.value.turns == 1
    assert caught.value.messages == (UserMessage(text="again"),)
