"""Every approval decision is in the audit log when it is made: the verdict, who decided and
through which channel, the project (root) and the server, for the API, an inline approver
and a remote MCP tool."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from invokit import Executor, Policy, ToolCall
from invokit.approvals import ApprovalDecision, ApprovalRequest, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.execution import Completed, Failed, Interrupted, JsonlAuditSink
from invokit.execution._resolutions import resolved_data

pytestmark = pytest.mark.anyio


def _executor(tmp_path: Path, **kwargs: Any) -> tuple[Executor, JsonlAuditSink, Path]:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    sink = JsonlAuditSink(tmp_path / "state" / "audit.jsonl", forbidden_roots=[root])
    executor = Executor(
        filesystem(root),
        policy=Policy(ask=["fs.write"], root=root),
        approvals=SqliteApprovalStore(tmp_path / "state" / "a.sqlite3", forbidden_roots=[root]),
        events=[sink],
        **kwargs,
    )
    return executor, sink, root


def _resolved(sink: JsonlAuditSink) -> list[dict[str, Any]]:
    return [r for r in sink.records() if r["type"] == "approval_resolved"]


async def test_a_resume_is_logged_as_the_api_with_root_and_server(tmp_path: Path) -> None:
    """`Executor.resume(approve=False)` is logged as channel `api` with its `by`, the root the
    policy serves and this host:pid, before anything else happens."""
    executor, sink, root = _executor(tmp_path)
    call = ToolCall(id="c1", name="fs.write", arguments={"path": "a.txt", "content": "x"})
    outcome = await executor.execute(call)
    assert isinstance(outcome, Interrupted)
    denied = await executor.resume(outcome.interrupt.id, approve=False, reason="no", by="ops")
    assert isinstance(denied, Failed)
    (record,) = _resolved(sink)
    data = record["data"]
    assert data["id"] == outcome.interrupt.id and data["tool"] == "fs.write"
    assert (data["verdict"], data["by"], data["channel"]) == ("deny", "ops", "api")
    assert data["root"] == str(root)
    assert data["server"] == f"{socket.gethostname()}:{os.getpid()}"
    assert data["mcp_server"] is None
    assert not (root / "a.txt").exists()
    await executor.aclose()


async def test_an_inline_approver_is_logged_as_the_approver(tmp_path: Path) -> None:
    """A decision from an `approver` callable that does not name its channel is logged as
    channel `approver`; one that does (the terminal) keeps its own."""

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        if request.arguments["path"] == "t.txt":
            return ApprovalDecision.approve("once", by="terminal", channel="terminal")
        return ApprovalDecision.approve("once", by="robot")

    executor, sink, _ = _executor(tmp_path, approver=approver)
    for path in ("a.txt", "t.txt"):
        call = ToolCall(id=path, name="fs.write", arguments={"path": path, "content": "x"})
        assert isinstance(await executor.execute(call), Completed)
    by_path = {r["call_id"]: r["data"] for r in _resolved(sink)}
    assert by_path["a.txt"]["channel"] == "approver" and by_path["a.txt"]["by"] == "robot"
    assert by_path["t.txt"]["channel"] == "terminal"
    assert all(d["verdict"] == "approve" and d["scope"] == "once" for d in by_path.values())
    await executor.aclose()


def test_a_remote_tool_names_its_mcp_server() -> None:
    """For a call of a remote MCP tool the record names the MCP server it goes to."""
    from invokit._spec import ToolSpec
    from invokit.permissions import McpInvoke

    spec = ToolSpec(name="other.greet", description="Greet.", input_schema={"type": "object"})
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="other.greet", arguments={}),
        spec=spec,
        arguments={},
        requests=[McpInvoke(server="other", tool="greet")],
    )
    withdrawn = ApprovalDecision.deny("gone", by="executor", channel="executor")
    data = resolved_data(request, withdrawn, channel="executor", root="/srv/project")
    assert data["mcp_server"] == "other" and data["root"] == "/srv/project"
    assert data["verdict"] == "withdrawn"


def test_a_decision_round_trips_its_channel() -> None:
    """`ApprovalDecision.channel` survives to_dict/from_dict (the stores keep it)."""
    decision = ApprovalDecision.deny("no", by="cli:ann", channel="cli")
    assert ApprovalDecision.from_dict(decision.to_dict()) == decision
    assert "channel" not in ApprovalDecision.approve().to_dict()
