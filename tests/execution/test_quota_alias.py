"""An alias is another name for the same tool: calls under it count against the tool's
quotas, the tool's own and the policy's, in one count with calls under the listed name."""

from __future__ import annotations

import pytest

from invokit import Executor, Quota, ToolCall, tool
from invokit.permissions import Policy
from invokit.registry import ToolRegistry

pytestmark = pytest.mark.anyio


async def _kinds(executor: Executor, names: list[str]) -> list[str]:
    kinds = []
    for index, name in enumerate(names):
        outcome = await executor.execute(ToolCall(id=f"c{index}", name=name, arguments={}))
        error = outcome.result.error
        kinds.append(error.kind if error is not None else "ok")
    return kinds


async def test_an_alias_shares_the_tools_own_quota() -> None:
    @tool(read_only=True, quota=Quota(calls=2, per="project"))
    def ping() -> str:
        """Ping."""
        return "pong"

    registry = ToolRegistry([ping]).aliased({"p": "ping"})
    executor = Executor(registry, policy=Policy(allow=["*"]))
    assert await _kinds(executor, ["ping", "p", "p", "ping"]) == [
        "ok",
        "ok",
        "quota_exceeded",
        "quota_exceeded",
    ]


async def test_an_alias_is_covered_by_the_policys_quota_on_the_tool() -> None:
    @tool(read_only=True)
    def ping() -> str:
        """Ping."""
        return "pong"

    registry = ToolRegistry([ping]).aliased({"p": "ping"})
    policy = Policy(allow=["*"], quotas=[Quota(calls=1, per="project", tool="ping")])
    executor = Executor(registry, policy=policy)
    assert await _kinds(executor, ["ping", "p"]) == ["ok", "quota_exceeded"]


async def test_prefixed_copies_keep_their_own_counts() -> None:
    @tool(read_only=True)
    def ping() -> str:
        """Ping."""
        return "pong"

    registry = ToolRegistry([ping]).prefixed("a").merged(ToolRegistry([ping]).prefixed("b"))
    policy = Policy(allow=["*"], quotas=[Quota(calls=1, per="project", tool="*.ping")])
    executor = Executor(registry, policy=policy)
    assert await _kinds(executor, ["a.ping", "b.ping", "a.ping"]) == [
        "ok",
        "ok",
        "quota_exceeded",
    ]
