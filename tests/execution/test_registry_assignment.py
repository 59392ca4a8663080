"""Assigning ``Executor.registry`` replaces the tools for every later call, as assigning
``policy`` replaces the policy: no plan of the old registry's tools is used again."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import Completed, Executor, Policy, ToolCall, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.builtin.filesystem import filesystem

pytestmark = pytest.mark.anyio


@tool(name="t", read_only=True)
async def first() -> str:
    """The first tool named t."""
    return "first"


@tool(name="t", read_only=True)
async def second() -> str:
    """Another tool named t."""
    return "second"


@tool(name="u", read_only=True)
async def other() -> str:
    """A tool only the later registry has."""
    return "other"


async def _text(executor: Executor, name: str) -> str:
    outcome = await executor.execute(ToolCall(id=name, name=name, arguments={}))
    assert isinstance(outcome, Completed), outcome.result
    return outcome.result.text


@pytest.mark.parametrize("policy", [None, Policy(allow=["t", "u"])])
async def test_a_new_registry_serves_its_own_tools(policy: Policy | None) -> None:
    """A plan computed for the old registry's ``t`` is not reused for the new one's."""
    executor = Executor([first], policy=policy)
    assert await _text(executor, "t") == "first"
    executor.registry = ToolRegistry([second, other])
    assert await _text(executor, "t") == "second"
    assert await _text(executor, "u") == "other"
    await executor.aclose()


async def test_the_new_registry_is_followed_when_it_changes() -> None:
    """The executor follows changes of the registry it was given last (``subscribe``)."""
    executor = Executor([first])
    assert await _text(executor, "t") == "first"
    registry = ToolRegistry([first])
    executor.registry = registry
    assert await _text(executor, "t") == "first"
    registry.remove("t")
    registry.add(second)
    assert await _text(executor, "t") == "second"
    await executor.aclose()


async def test_an_executor_follows_only_the_registry_it_was_given_last() -> None:
    """Each assignment stops following the registry before it: a thousand assignments leave no
    listener of this executor behind on the first registry."""
    base = ToolRegistry([first])
    executor = Executor(base)
    listening = len(base._listeners)
    for _ in range(1000):
        executor.registry = ToolRegistry([second])
    executor.registry = base
    assert len(base._listeners) == listening
    base.remove("t")
    base.add(second)  # the registry given last is still followed
    assert await _text(executor, "t") == "second"
    await executor.aclose()


async def test_a_registry_that_may_write_the_approval_store_is_refused(tmp_path: Path) -> None:
    """Assigning tools that may write where the approval store keeps its file is refused, as
    the constructor refuses it; the executor keeps the tools it had."""
    root = tmp_path / "workspace"
    root.mkdir()
    store = SqliteApprovalStore(root / "approvals.sqlite3")
    executor = Executor([first], approvals=store)
    with pytest.raises(ValueError, match="approval store"):
        executor.registry = filesystem(root)
    assert await _text(executor, "t") == "first"
    await executor.aclose()
