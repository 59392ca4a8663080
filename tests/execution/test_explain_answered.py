"""Executor.explain says what execute does, also where the store's answer decides."""

from __future__ import annotations

import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import ApprovalDecision, MemoryApprovalStore
from invokit.execution import Completed, Executor, Failed, Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"


def _registry() -> ToolRegistry:
    @tool(destructive=True)
    async def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return ToolRegistry([delete])


def _call() -> ToolCall:
    return ToolCall(id="c1", name="delete", arguments={"path": "a"}, session_id="s1")


async def test_explain_names_the_session_grant_that_lets_a_call_run() -> None:
    """A call the rules ask about and a session grant covers: ``explain`` says allow, decided
    by that grant, and ``execute`` runs it."""
    registry, store = _registry(), MemoryApprovalStore()
    spec = registry.get("delete").spec  # type: ignore[union-attr]
    await store.grant_session("s1", spec.name, spec.fingerprint, project=PROJECT, by="alice")
    executor = Executor(registry, policy=Policy(ask=["delete"]), approvals=store, project=PROJECT)
    explained = await executor.explain(_call())
    assert explained.decision.verdict == "allow"
    assert explained.answered is not None and "session grant given by alice" in explained.answered
    assert "session grant" in explained.render().splitlines()[0]
    assert not any(match.decisive for match in explained.matches)  # the rule asked
    assert isinstance(await executor.execute(_call()), Completed)


async def test_explain_names_a_persons_no_to_this_very_call() -> None:
    """A call a person refused: ``explain`` says deny, decided by that "no" (naming its
    approval), as ``execute`` then refuses it."""
    registry, store = _registry(), MemoryApprovalStore()
    executor = Executor(registry, policy=Policy(ask=["delete"]), approvals=store, project=PROJECT)
    asked = await executor.execute(_call())
    assert isinstance(asked, Interrupted)
    await store.resolve(asked.interrupt.id, ApprovalDecision(approved=False, by="bob"))
    explained = await executor.explain(_call())
    assert explained.decision.verdict == "deny"
    assert explained.answered is not None and asked.interrupt.id in explained.answered
    assert isinstance(await executor.execute(_call()), Failed)


async def test_explain_of_a_call_the_rules_decide_names_no_answer() -> None:
    """Where a rule decides, ``explain`` is the policy's explanation (``answered`` unset)."""
    executor = Executor(_registry(), policy=Policy(allow=["delete"]), project=PROJECT)
    explained = await executor.explain(_call())
    assert explained.decision.verdict == "allow"
    assert explained.decision.rule == "delete"
    assert explained.answered is None
