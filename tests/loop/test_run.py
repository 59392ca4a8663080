"""The agent loop's turns, limits and hooks, driven by a scripted model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from invokit import Executor, Policy, ToolCall, ToolSpec
from invokit.execution import Halt
from invokit.loop import (
    AssistantMessage,
    Message,
    RunResult,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
    run,
)
from invokit.testing import ScriptedModel, call, turn

from ._support import add, assert_valid, notebook, rendezvous, results_of


def _last_structured(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    last = messages[-1]
    assert isinstance(last, ToolResultsMessage)
    total = last.results[0].structured
    return turn(call("add", {"a": total, "b": 10}))


async def _finished(*args: Any, **kwargs: Any) -> RunResult:
    outcome = await run(*args, **kwargs)
    assert isinstance(outcome, RunResult)
    return outcome


@pytest.mark.anyio
async def test_multi_turn_run_feeds_each_result_to_the_next_turn() -> None:
    """Each turn's results reach the model, which builds on them until it answers."""
    model = ScriptedModel(
        [turn(call("add", {"a": 1, "b": 2})), _last_structured, "The answer is 13."]
    )
    messages: list[Message] = [SystemMessage(text="Be brief."), UserMessage(text="1+2+10?")]
    outcome = await _finished(model, Executor([add]), messages)
    assert outcome.reason == "final"
    assert outcome.output == "The answer is 13."
    assert (outcome.turns, outcome.tool_calls) == (3, 2)
    assert outcome.messages is messages
    assert [r.structured for r in results_of(messages)] == [3, 13]
    assert [type(m).__name__ for m in messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultsMessage",
        "AssistantMessage",
        "ToolResultsMessage",
        "AssistantMessage",
    ]
    assert model.requests[0].tool_names == ["add"]
    assert len(model.requests[2].messages) == 6
    assert_valid(messages)


@pytest.mark.anyio
async def test_parallel_calls_of_one_turn_run_at_the_same_time() -> None:
    """Read-only calls of one turn run concurrently; results keep call order."""
    meet = rendezvous()
    model = ScriptedModel(
        [turn(call("meet", {"side": "left"}), call("meet", {"side": "right"})), "met"]
    )
    outcome = await _finished(model, Executor([meet]), [UserMessage(text="meet")])
    results = results_of(outcome.messages)
    assert [r.structured for r in results] == ["left met right", "right met left"]
    assert not any(r.is_error for r in results)


@pytest.mark.anyio
async def test_a_tool_error_is_a_result_and_the_run_goes_on() -> None:
    """Unknown tools and bad arguments give error results the model reads, not exceptions."""
    model = ScriptedModel([turn(call("sub", {"a": 1}), call("add", {"a": "x", "b": 1})), "sorry"])
    outcome = await _finished(model, Executor([add]), [UserMessage(text="go")])
    kinds = [r.error.kind for r in results_of(outcome.messages) if r.error is not None]
    assert kinds == ["not_found", "invalid_arguments"]
    assert outcome.reason == "final"


@pytest.mark.anyio
async def test_max_turns_runs_the_last_turns_calls_then_stops() -> None:
    """At the turn limit the last calls still get results and the run ends with max_turns."""
    model = ScriptedModel([turn(call("add", {"a": i, "b": 1})) for i in range(5)])
    outcome = await _finished(model, Executor([add]), [UserMessage(text="loop")], max_turns=2)
    assert outcome.reason == "max_turns"
    assert outcome.turns == 2
    assert model.remaining == 3
    assert [r.structured for r in results_of(outcome.messages)] == [1, 2]
    assert_valid(outcome.messages)


@pytest.mark.anyio
async def test_max_tool_calls_refuses_calls_past_the_budget(tmp_path: Path) -> None:
    """Calls past the budget are not run, each gets an error result, and the run ends."""
    notes = tmp_path / "notes.txt"
    model = ScriptedModel([turn(*(call("notes.append", {"text": f"line {i}"}) for i in range(3)))])
    executor = Executor([notebook(notes)], policy=Policy.allow_all())
    outcome = await _finished(model, executor, [UserMessage(text="w")], max_tool_calls=2)
    assert outcome.reason == "max_tool_calls"
    assert outcome.tool_calls == 2
    assert notes.read_text() == "line 0\nline 1\n"
    last = results_of(outcome.messages)[-1]
    assert last.error is not None
    assert last.error.kind == "max_tool_calls"
    assert_valid(outcome.messages)


class _HaltOnSecondTurn:
    async def before_model(self, turn: int, messages: Sequence[Message]) -> Halt | None:
        return Halt("budget spent") if turn == 2 else None


class _HaltOnCalls:
    async def after_model(self, turn: int, message: AssistantMessage) -> Halt | None:
        return Halt("no tools today") if message.calls else None


class _HaltAdd:
    async def before_call(self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec) -> Halt:
        return Halt(f"{call.name} is frozen")


@pytest.mark.anyio
async def test_before_model_halt_ends_the_run_before_asking_again() -> None:
    """A halt before a model turn ends the run without that turn."""
    model = ScriptedModel([turn(call("add", {"a": 1, "b": 1})), "never"])
    outcome = await _finished(
        model, Executor([add]), [UserMessage(text="x")], hooks=[_HaltOnSecondTurn()]
    )
    assert (outcome.reason, outcome.detail, outcome.turns) == ("halted", "budget spent", 1)
    assert model.remaining == 1


@pytest.mark.anyio
async def test_after_model_halt_refuses_that_turns_calls() -> None:
    """A halt after a model turn closes each of its calls with a halted error result."""
    model = ScriptedModel([turn(call("add", {"a": 1, "b": 1}), call("add", {"a": 2, "b": 2}))])
    outcome = await _finished(
        model, Executor([add]), [UserMessage(text="x")], hooks=[_HaltOnCalls()]
    )
    assert outcome.reason == "halted"
    assert outcome.tool_calls == 0
    assert [r.error.kind for r in results_of(outcome.messages) if r.error] == ["halted"] * 2
    assert_valid(outcome.messages)


@pytest.mark.anyio
async def test_an_executor_hook_halt_ends_the_run() -> None:
    """A Halt from an executor before_call hook ends the run with its reason."""
    model = ScriptedModel([turn(call("add", {"a": 1, "b": 1})), "never"])
    executor = Executor([add], hooks=[_HaltAdd()])
    outcome = await _finished(model, executor, [UserMessage(text="x")])
    assert (outcome.reason, outcome.detail) == ("halted", "add is frozen")
    assert model.remaining == 1


@pytest.mark.anyio
async def test_on_message_sees_every_appended_message() -> None:
    """``on_message`` hooks receive each message the run appends, in order."""
    seen: list[str] = []

    class Watch:
        def on_message(self, message: Message) -> None:
            seen.append(type(message).__name__)

    model = ScriptedModel([turn(call("add", {"a": 1, "b": 1})), "two"])
    await _finished(model, Executor([add]), [UserMessage(text="x")], hooks=[Watch()])
    assert seen == ["AssistantMessage", "ToolResultsMessage", "AssistantMessage"]


@pytest.mark.anyio
async def test_repeated_or_missing_call_ids_are_made_unique() -> None:
    """Ids a server repeats or leaves empty are replaced so each call has its own result."""
    model = ScriptedModel(
        [
            turn(call("add", {"a": 1, "b": 1}, id="c"), call("add", {"a": 2, "b": 1}, id="c")),
            turn(call("add", {"a": 3, "b": 1}, id="c")),
            "done",
        ]
    )
    outcome = await _finished(model, Executor([add]), [UserMessage(text="x")], session_id="s1")
    calls = [c for m in outcome.messages if isinstance(m, AssistantMessage) for c in m.calls]
    assert len({c.id for c in calls}) == 3
    assert {c.session_id for c in calls} == {"s1"}
    assert [c.turn_id for c in calls] == ["1", "1", "2"]
    assert_valid(outcome.messages)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"max_turns": 0}, "max_turns", id="no-turns"),
        pytest.param({"max_tool_calls": -1}, "max_tool_calls", id="negative-calls"),
        pytest.param({"stuck_after": 1}, "stuck_after", id="stuck-without-warning"),
    ],
)
@pytest.mark.anyio
async def test_out_of_range_limits_raise(kwargs: dict[str, Any], match: str) -> None:
    """A limit that cannot work is refused before the model is asked anything."""
    model = ScriptedModel([])
    with pytest.raises(ValueError, match=match):
        await run(model, Executor([add]), [UserMessage(text="x")], **kwargs)


@pytest.mark.anyio
async def test_a_transcript_with_open_calls_is_refused() -> None:
    """Starting from a transcript whose calls lack results raises instead of confusing the
    provider."""
    messages: list[Message] = [
        UserMessage(text="x"),
        AssistantMessage(calls=(ToolCall(id="c1", name="add"),)),
    ]
    with pytest.raises(ValueError, match="without results"):
        await run(ScriptedModel(["x"]), Executor([add]), messages)
