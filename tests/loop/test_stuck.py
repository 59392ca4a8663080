"""Stuck detection: a repeated identical call warns the model, then ends the run."""

from __future__ import annotations

import pytest

from invokit import Executor, TextPart, ToolCall
from invokit.loop import RunResult, UserMessage, call_signature, run
from invokit.testing import ScriptedModel, call, turn

from ._support import add, assert_valid, results_of


def test_signature_ignores_key_order_and_whitespace() -> None:
    """Text and mapping arguments with the same canonical value have one signature."""
    first = ToolCall(id="1", name="add", arguments='{"a": 1,  "b": 2}')
    second = ToolCall(id="2", name="add", arguments={"b": 2, "a": 1})
    other = ToolCall(id="3", name="add", arguments={"a": 2, "b": 1})
    assert call_signature(first) == call_signature(second) != call_signature(other)


def test_signature_of_unparsable_text_is_the_text() -> None:
    """Broken JSON is compared as text rather than raising."""
    assert call_signature(ToolCall(id="1", name="x", arguments="{oops")) == call_signature(
        ToolCall(id="2", name="x", arguments="{oops")
    )


@pytest.mark.anyio
async def test_the_model_is_warned_then_the_run_ends_as_stuck() -> None:
    """The second identical call carries a warning; the third is not run and ends the run."""
    same = {"a": 1, "b": 1}
    model = ScriptedModel([turn(call("add", same)) for _ in range(5)])
    outcome = await run(model, Executor([add]), [UserMessage(text="x")], stuck_after=3)
    assert isinstance(outcome, RunResult)
    assert outcome.reason == "stuck"
    assert outcome.detail is not None
    assert "'add'" in outcome.detail
    assert outcome.tool_calls == 2
    first, second, third = results_of(outcome.messages)
    assert len(first.content) == 1
    assert not second.is_error
    assert isinstance(second.content[-1], TextPart)
    assert "again ends the run" in second.content[-1].text
    assert second.structured == 2  # the warning is added; the value stays
    assert third.error is not None
    assert third.error.kind == "stuck"
    assert model.remaining == 2
    assert_valid(outcome.messages)


@pytest.mark.anyio
async def test_other_calls_in_a_stuck_turn_are_closed_too() -> None:
    """When a turn is stuck, none of its calls run and each gets a result."""
    same = call("add", {"a": 1, "b": 1})
    model = ScriptedModel([turn(same), turn(call("add", {"a": 5, "b": 5}), same)])
    outcome = await run(model, Executor([add]), [UserMessage(text="x")], stuck_after=2)
    assert isinstance(outcome, RunResult)
    assert outcome.reason == "stuck"
    kinds = [r.error.kind if r.error else None for r in results_of(outcome.messages)]
    assert kinds == [None, "stuck", "stuck"]
    assert_valid(outcome.messages)


@pytest.mark.anyio
async def test_varied_calls_are_never_stuck() -> None:
    """Different arguments each turn run to the answer; detection can also be turned off."""
    model = ScriptedModel([turn(call("add", {"a": i, "b": 1})) for i in range(4)] + ["done"])
    outcome = await run(model, Executor([add]), [UserMessage(text="x")], stuck_after=2)
    assert isinstance(outcome, RunResult)
    assert outcome.reason == "final"
    repeat = ScriptedModel([turn(call("add", {"a": 1, "b": 1})) for _ in range(4)] + ["done"])
    outcome = await run(repeat, Executor([add]), [UserMessage(text="x")], stuck_after=None)
    assert isinstance(outcome, RunResult)
    assert outcome.reason == "final"
