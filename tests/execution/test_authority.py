"""The audit says under which authority a call ran: a call run under a session grant or an
"always" rule carries that grant or rule (its id, what it covers, who gave it and when) on its
``completed`` record, in every audit sink."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall
from invokit.approvals import ApprovalStore, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.cli._livelog import describe
from invokit.execution import ApprovalRequired, Completed, Executor, Interrupted, Outcome
from invokit.execution._audit_jsonl import JsonlAuditSink
from invokit.execution._audit_sqlite import SqliteAuditSink
from invokit.execution._events import Event
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


class Events:
    """An event sink that keeps every event."""

    types = None

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def completed(self, call_id: str) -> dict[str, Any]:
        (found,) = [e for e in self.events if e.type == "completed" and e.call_id == call_id]
        return dict(found.data)


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted), outcome
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def _write(call_id: str, path: str, session: str | None = "s1") -> ToolCall:
    return ToolCall(
        id=call_id,
        name="fs.write",
        arguments={"path": path, "content": "x"},
        session_id=session,
    )


def _executor(tmp_path: Path, *sinks: object, store: ApprovalStore | None = None) -> Executor:
    (tmp_path / "work").mkdir(exist_ok=True)
    return Executor(
        filesystem(tmp_path / "work"),
        policy=Policy(ask=["fs.write"], root=tmp_path / "work"),
        approvals=store or SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3"),
        events=list(sinks),  # type: ignore[arg-type]
        project="/projects/p",
    )


async def test_a_call_under_a_session_grant_names_the_grant_who_gave_it_and_when(
    tmp_path: Path,
) -> None:
    """The write that ran under a session grant carries the grant: its g_ id, the tool
    version, session and project it covers, the person who gave it, when, and the approval
    that gave it; the calls a person approved once and the calls the policy allows carry
    none."""
    events = Events()
    executor = _executor(tmp_path, events)
    before = time.time()
    first = _asked(await executor.execute(_write("1", "a.txt")))
    assert isinstance(
        await executor.resume(first.id, approve=True, scope="session", by="ana"), Completed
    )
    assert isinstance(await executor.execute(_write("2", "b.txt")), Completed)
    authority = events.completed("2")["authority"]
    assert authority["kind"] == "session" and authority["id"].startswith("g_")
    assert authority["by"] == "ana" and authority["approval_id"] == first.id
    assert before <= authority["at"] <= time.time()
    assert "fs.write" in authority["scope"] and "session s1" in authority["scope"]
    assert "project /projects/p" in authority["scope"]
    assert "authority" not in events.completed("1")  # approved once, by its own approval
    read = ToolCall(id="3", name="fs.read", arguments={"path": "a.txt"}, session_id="s1")
    assert isinstance(await executor.execute(read), Completed)
    assert "authority" not in events.completed("3")  # allowed by the policy
    await executor.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_grant_given_through_another_executor_names_its_giver(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """Two executors on one SQLite file or PostgreSQL database (two replicas, or one process
    before and after a restart): a session grant given through the first, which then closes,
    is used through the second, whose audit record (JSON Lines, and its line in the live log
    and `invokit audit`) names the same g_ grant, who gave it, when and the approval that gave
    it."""

    def opened() -> ApprovalStore:
        if kind == "sqlite":
            return SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
        from invokit.postgres import PostgresApprovalStore

        return PostgresApprovalStore(request.getfixturevalue("postgres_url"))

    giver_events = Events()
    giver = _executor(tmp_path, giver_events, store=opened())
    first = _asked(await giver.execute(_write("1", "a.txt")))
    await giver.resume(first.id, approve=True, scope="session", by="ana")
    assert isinstance(await giver.execute(_write("2", "b.txt")), Completed)
    given = giver_events.completed("2")["authority"]
    await giver.aclose()

    audit = JsonlAuditSink(tmp_path / "audit" / "audit.jsonl")
    other = _executor(tmp_path, audit, store=opened())
    assert isinstance(await other.execute(_write("3", "c.txt")), Completed)
    approved = (await other.approvals.get(first.id)).resolved_at
    await other.aclose()
    (done,) = [r for r in audit.records("3") if r["type"] == "completed"]
    authority = done["data"]["authority"]
    assert authority == given  # the same grant, giver, time and approval on both
    assert authority["by"] == "ana" and authority["approval_id"] == first.id
    assert authority["kind"] == "session" and authority["id"].startswith("g_")
    assert authority["at"] == approved
    line = describe(done, {"path": "c.txt"})
    assert line is not None
    stamp = time.strftime("%H:%M", time.localtime(approved))
    assert f"(session grant {authority['id']} by ana at {stamp})" in line.plain


async def test_a_call_under_an_always_rule_names_the_rule(tmp_path: Path) -> None:
    """The same write in another session ran under the "always" rule: the record names the
    rule's rul_ id, the rule and its project, who recorded it and when."""
    events = Events()
    executor = _executor(tmp_path, events)
    first = _asked(await executor.execute(_write("1", "a.txt")))
    await executor.resume(first.id, approve=True, scope="always", by="bo")
    assert isinstance(await executor.execute(_write("2", "a.txt", session="s2")), Completed)
    authority = events.completed("2")["authority"]
    (rule,) = await executor.approvals.always_rules(project="/projects/p")
    assert authority == {
        "kind": "always",
        "id": rule.id,
        "scope": "fs.write(write:a.txt) in project /projects/p",
        "by": "bo",
        "at": rule.created_at,
    }
    await executor.aclose()


async def test_the_authority_is_written_by_the_jsonl_and_sqlite_audit_sinks(
    tmp_path: Path,
) -> None:
    """Both file audit logs keep the authority on the completed record."""
    jsonl = JsonlAuditSink(tmp_path / "audit" / "audit.jsonl")
    sqlite = SqliteAuditSink(tmp_path / "audit" / "audit.sqlite3")
    executor = _executor(tmp_path, jsonl, sqlite)
    first = _asked(await executor.execute(_write("1", "a.txt")))
    await executor.resume(first.id, approve=True, scope="session", by="ana")
    await executor.execute(_write("2", "b.txt"))
    await executor.aclose()
    for records in (jsonl.records("2"), sqlite.records("2")):
        (done,) = [r for r in records if r["type"] == "completed"]
        assert done["data"]["authority"]["by"] == "ana"
        assert done["data"]["authority"]["kind"] == "session"


async def test_the_authority_is_written_by_the_postgresql_audit_sink(
    tmp_path: Path, postgres_url: str
) -> None:
    """The shared PostgreSQL audit log keeps the authority on the completed record."""
    from invokit.postgres import PostgresAuditSink

    sink = PostgresAuditSink(postgres_url)
    executor = _executor(tmp_path, sink)
    first = _asked(await executor.execute(_write("1", "a.txt")))
    await executor.resume(first.id, approve=True, scope="always", by="bo")
    await executor.execute(_write("2", "a.txt", session="s2"))
    await executor.aclose()
    reader = PostgresAuditSink(postgres_url)
    (done,) = reader.records("2", type="completed")
    reader.close()
    assert done["data"]["authority"]["kind"] == "always"
    assert done["data"]["authority"]["by"] == "bo"
    assert done["data"]["authority"]["id"].startswith("rul_")
