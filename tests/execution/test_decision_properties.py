"""The one decision, as a property: ``check`` and ``explain`` say what ``execute`` then does."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invokit import Completed, ToolCall, ToolRegistry, tool
from invokit.approvals import ApprovalDecision, MemoryApprovalStore, SqliteApprovalStore
from invokit.approvals._always import pinned_rule
from invokit.execution import ApprovalRequired, Executor, Failed, Interrupted, Outcome
from invokit.permissions import FileWrite, Policy

PROJECT = "/work/project"
RULES = {
    "delete": ["delete", "delete(path=a*)"],
    "write": ["write", "write(a/**)", "write(path=b*)"],
}
PATHS = ["a/x", "b/y", "c"]
History = Literal["none", "pending", "yes", "no"]


@dataclass(frozen=True, kw_only=True)
class Case:
    tool: str
    path: str
    placed: dict[str, str]
    """Each rule of ``RULES`` placed in a list of the policy (or none)."""
    default: str
    history: History
    grant: bool
    always: Literal["none", "target", "pinned"]
    store: Literal["memory", "sqlite"]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(sorted(RULES)))
    placed = {
        rule: draw(st.sampled_from(["none", "allow", "ask", "deny"]))
        for rules in RULES.values()
        for rule in rules
    }
    return Case(
        tool=name,
        path=draw(st.sampled_from(PATHS)),
        placed=placed,
        default=draw(st.sampled_from(["ask", "allow", "deny"])),
        history=draw(st.sampled_from(["none", "pending", "yes", "no"])),
        grant=draw(st.booleans()),
        always=draw(st.sampled_from(["none", "target", "pinned"])),
        store=draw(st.sampled_from(["memory", "sqlite"])),
    )


def _registry() -> ToolRegistry:
    @tool(destructive=True)
    async def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    @tool(destructive=True, permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write a file."""
        return f"wrote {path}"

    return ToolRegistry([delete, write])


def _policy(case: Case) -> Policy:
    lists: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    for rule, verdict in case.placed.items():
        if verdict != "none":
            lists[verdict].append(rule)
    return Policy(**lists, default=case.default)  # type: ignore[arg-type]


def _did(outcome: Outcome) -> str:
    if isinstance(outcome, Completed):
        return "allow"
    if isinstance(outcome, Interrupted):
        assert isinstance(outcome.interrupt, ApprovalRequired)
        return "ask"
    assert isinstance(outcome, Failed)
    return "deny"


async def _scenario(case: Case, folder: Path) -> None:
    registry = _registry()
    store = (
        MemoryApprovalStore()
        if case.store == "memory"
        else SqliteApprovalStore(folder / "approvals.sqlite3")
    )
    call = ToolCall(id="c1", name=case.tool, arguments={"path": case.path}, session_id="s1")
    if case.history != "none":  # the same call asked about before, under a policy that asks
        asking = Executor(registry, policy=Policy(ask=["*"]), approvals=store, project=PROJECT)
        asked = await asking.execute(call)
        assert isinstance(asked, Interrupted)
        if case.history != "pending":
            answer = ApprovalDecision(approved=case.history == "yes", by="alice", reason="r")
            await store.resolve(asked.interrupt.id, answer)
    spec = registry.get(case.tool).spec  # type: ignore[union-attr]
    if case.grant:
        await store.grant_session("s1", spec.name, spec.fingerprint, project=PROJECT)
    if case.always == "target" and case.tool == "write":
        await store.add_always_rule("write(a/**)", project=PROJECT)
    elif case.always != "none":
        pinned = pinned_rule(spec.name, {"path": case.path})
        assert pinned is not None
        await store.add_always_rule(pinned, project=PROJECT)
    executor = Executor(registry, policy=_policy(case), approvals=store, project=PROJECT)
    checked = await executor.check(call)
    explained = await executor.explain(call)
    done = _did(await executor.execute(call))
    assert checked.action == done, (checked, done)
    # explain reads the same snapshot: where a grant or a person's answer decides, it says so
    assert explained.decision.verdict == done, (explained.render(), done)
    if checked.pending is not None:
        assert explained.answered is not None
        assert checked.pending.id in explained.answered
    await executor.aclose()


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=cases())
def test_check_and_explain_agree_with_execute(case: Case) -> None:
    """For random policies, grants, "always" rules and earlier answers, ``check`` and
    ``explain`` say what ``execute`` then does."""
    with tempfile.TemporaryDirectory() as folder:
        anyio.run(_scenario, case, Path(folder))
