"""End to end: a TOML policy, a SQLite approval store and both audit logs around a real executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, tool
from invokit.approvals import SqliteApprovalStore
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.execution._audit_jsonl import JsonlAuditSink
from invokit.execution._audit_sqlite import SqliteAuditSink
from invokit.permissions import FileWrite, Policy

pytestmark = pytest.mark.anyio

POLICY = """
[policy]
allow = ["notes.write(notes/**)"]
ask = ["notes.write(notes/shared/**)"]
deny = ["notes.*(path=**/.env)"]
"""


def build(tmp_path: Path) -> tuple[Executor, list[dict[str, Any]], JsonlAuditSink, SqliteAuditSink]:
    """An executor with one file-writing tool that records what it wrote."""
    written: list[dict[str, Any]] = []
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)

    @tool(
        name="notes.write",
        read_only=False,
        permissions=lambda args: [FileWrite(path=args["path"])],
    )
    def write(path: str, text: str) -> str:
        """Write a note."""
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
        written.append({"path": path, "text": text})
        return f"wrote {path}"

    (tmp_path / "invokit.toml").write_text(POLICY)
    jsonl = JsonlAuditSink(tmp_path / "state" / "audit.jsonl", forbidden_roots=[work])
    sqlite = SqliteAuditSink(tmp_path / "state" / "audit.sqlite3", forbidden_roots=[work])
    executor = Executor(
        [write],
        policy=Policy.from_toml(tmp_path / "invokit.toml"),
        approvals=SqliteApprovalStore(
            tmp_path / "state" / "approvals.sqlite3", forbidden_roots=[work]
        ),
        events=[jsonl, sqlite],
    )
    return executor, written, jsonl, sqlite


async def test_audit_answers_who_approved_what(tmp_path: Path) -> None:
    """The audit trail shows the rule that asked, who approved, and the arguments that ran."""
    executor, written, jsonl, sqlite = build(tmp_path)
    call = ToolCall(
        id="c1",
        name="notes.write",
        arguments={"path": "notes/shared/plan.md", "text": "v1"},
        session_id="s1",
    )
    outcome = await executor.execute(call)
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    approval_id = outcome.interrupt.request.id
    assert outcome.interrupt.request.rule == "notes.write(notes/shared/**)"
    assert written == []

    done = await executor.resume(
        approval_id,
        approve=True,
        by="ana",
        arguments={"path": "notes/shared/plan.md", "text": "v2"},
    )
    assert isinstance(done, Completed)
    assert written == [{"path": "notes/shared/plan.md", "text": "v2"}]
    await executor.aclose()

    for records in (sqlite.records("c1"), jsonl.records("c1")):
        by_type = {r["type"]: r["data"] for r in records}
        assert by_type["decided"]["verdict"] == "ask"
        assert by_type["decided"]["rule"] == "notes.write(notes/shared/**)"
        assert by_type["approval_requested"]["id"] == approval_id
        assert by_type["approval_requested"]["arguments"]["text"] == "v1"
        assert by_type["approval_resolved"]["by"] == "ana"
        assert by_type["approval_resolved"]["approved"] is True
        assert by_type["completed"]["arguments"]["text"] == "v2"


async def test_denied_call_never_runs_and_is_logged(tmp_path: Path) -> None:
    """A call denied by the policy returns a denied result, the body never runs, the log says why."""
    executor, written, jsonl, _ = build(tmp_path)
    outcome = await executor.execute(
        ToolCall(id="c2", name="notes.write", arguments={"path": "notes/.env", "text": "x"})
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert written == []
    await executor.aclose()
    decided = [r for r in jsonl.records("c2") if r["type"] == "decided"]
    assert decided[0]["data"]["rule"] == "notes.*(path=**/.env)"


async def test_allowed_call_runs_without_asking(tmp_path: Path) -> None:
    """A call every request of which an allow rule covers runs at once."""
    executor, written, _, sqlite = build(tmp_path)
    outcome = await executor.execute(
        ToolCall(id="c3", name="notes.write", arguments={"path": "notes/a.md", "text": "x"})
    )
    assert isinstance(outcome, Completed)
    assert written == [{"path": "notes/a.md", "text": "x"}]
    await executor.aclose()
    assert "approval_requested" not in {r["type"] for r in sqlite.records("c3")}
