"""An alias is decided as the tool it names: a rule on the listed name holds for every alias."""

from __future__ import annotations

import pytest

from invokit import Completed, Executor, Failed, Policy, ToolCall, ToolRegistry, tool

pytestmark = pytest.mark.anyio


@tool
def pong(text: str) -> str:
    """Echo ``text`` (a tool the policy denies)."""
    return text


@tool(read_only=True)
def ping(text: str) -> str:
    """Echo ``text`` (a tool the policy allows)."""
    return text


async def test_a_deny_rule_on_a_tool_holds_for_its_alias() -> None:
    """``deny pong`` with ``allow *`` refuses a call of the alias ``q`` of pong, and an ask
    rule asks for it; an alias of an allowed tool runs."""
    registry = ToolRegistry([pong, ping]).aliased({"q": "pong", "p": "ping"})
    denied = Executor(registry, policy=Policy(allow=["*"], deny=["pong"]))
    outcome = await denied.execute(ToolCall(id="c1", name="q", arguments={"text": "x"}))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "denied"
    allowed = await denied.execute(ToolCall(id="c2", name="p", arguments={"text": "x"}))
    assert isinstance(allowed, Completed)
    asking = Executor(registry, policy=Policy(allow=["*"], ask=["pong"]))
    asked = await asking.check(ToolCall(id="c3", name="q", arguments={"text": "x"}))
    assert asked.action == "ask"
