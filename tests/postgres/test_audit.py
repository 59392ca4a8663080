"""The audit log in PostgreSQL: shared by every sink on the database, and a decision's record
written in the transaction that makes it, once."""

from __future__ import annotations

import time
import warnings

import psycopg
import pytest

from invokit.approvals import ApprovalDecision
from invokit.exceptions import ApprovalAlreadyUsed
from invokit.execution._events import Event
from invokit.execution._resolutions import resolved_data
from invokit.postgres import PostgresApprovalStore, PostgresAuditSink

from ..approvals.helpers import Clock, make_request

pytestmark = pytest.mark.anyio


def _event(kind: str, call_id: str, **data: object) -> Event:
    return Event(
        type=kind,  # type: ignore[arg-type]
        call_id=call_id,
        tool="fs.write",
        time=time.time(),
        session_id="s1",
        data=dict(data),
    )


def _count(url: str, kind: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM invokit_audit_events WHERE type = %s", (kind,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_sinks_of_two_replicas_share_one_log(postgres_url: str) -> None:
    """Two sinks write to one table; a third reads every event, filtered, in insertion order;
    text PostgreSQL cannot hold raw (a NUL) arrives intact."""
    one, two = PostgresAuditSink(postgres_url), PostgresAuditSink(postgres_url)
    one.emit(_event("started", "c1", n=1))
    two.emit(_event("started", "c2", n=2))
    one.emit(_event("completed", "c1", text="é\x00\n"))
    one.close()
    two.close()
    reader = PostgresAuditSink(postgres_url)
    everything = reader.records()
    assert sorted((r["type"], r["call_id"]) for r in everything) == [
        ("completed", "c1"),
        ("started", "c1"),
        ("started", "c2"),
    ]
    assert [r["id"] for r in everything] == sorted(r["id"] for r in everything)
    assert [r["data"] for r in reader.records("c1", type="completed")] == [{"text": "é\x00\n"}]
    assert [r["call_id"] for r in reader.records(session_id="s1", tool="fs.write")] == [
        r["call_id"] for r in everything
    ]
    assert reader.records(type="failed") == []
    reader.close()


def test_a_durable_event_is_committed_before_emit_returns(postgres_url: str) -> None:
    """An approval request is in the database, for any connection, as soon as it is emitted;
    a routine event waits for the next batch."""
    sink = PostgresAuditSink(postgres_url, flush_interval=60.0)
    sink.emit(_event("started", "c1"))
    sink.emit(_event("approval_requested", "c1", id="apr_1"))
    assert _count(postgres_url, "approval_requested") == 1
    assert _count(postgres_url, "started") == 1  # written with it, in order
    sink.emit(_event("started", "c2"))
    assert _count(postgres_url, "started") == 1
    sink.close()
    assert _count(postgres_url, "started") == 2


async def test_a_decision_is_recorded_with_the_change_once(postgres_url: str) -> None:
    """``resolve`` writes its approval_resolved record in its own transaction; the executor's
    copy of that record arriving at a sink afterwards is not written again; a refused second
    decision writes nothing."""
    clock = Clock(time.time())
    store = PostgresApprovalStore(postgres_url, clock=clock)
    request = make_request(clock)
    await store.put(request)
    decision = ApprovalDecision.approve(by="ana", channel="cli")
    await store.resolve(request.id, decision)
    sink = PostgresAuditSink(postgres_url)
    [stored] = sink.records(type="approval_resolved")
    assert stored["call_id"] == "c1" and stored["session_id"] == "s1"
    assert stored["data"]["id"] == request.id
    assert stored["data"]["verdict"] == "approve"
    assert stored["data"]["channel"] == "cli" and stored["data"]["by"] == "ana"

    copy = resolved_data(request, decision, channel="cli", root=None)
    sink.emit(_event("approval_resolved", "c1", **copy))
    assert len(sink.records(type="approval_resolved")) == 1

    with pytest.raises(ApprovalAlreadyUsed):
        await store.resolve(request.id, ApprovalDecision.deny())
    assert len(sink.records(type="approval_resolved")) == 1

    # Withdrawing the unused "yes" is a second decision, recorded with its change.
    await store.withdraw(request.id, ApprovalDecision.deny("changed my mind", by="ana"))
    verdicts = [r["data"]["verdict"] for r in sink.records(type="approval_resolved")]
    assert verdicts == ["approve", "deny"]
    sink.close()
    await store.close()


async def test_a_record_handed_to_the_store_is_the_one_written(postgres_url: str) -> None:
    """The caller's own approval_resolved record (``audit=``) is written with the decision,
    and with a consume by a retry; a consume that loses writes nothing."""
    clock = Clock(time.time())
    store = PostgresApprovalStore(postgres_url, clock=clock)
    request = make_request(clock)
    await store.put(request)
    decision = ApprovalDecision.approve(by="bo")
    mine = _event(
        "approval_resolved",
        "c1",
        **resolved_data(request, decision, channel="terminal", root="/p"),
    )
    await store.resolve(request.id, decision, audit=mine)
    retry = _event(
        "approval_resolved",
        "c1",
        **resolved_data(request, decision, channel="cli", root="/p", consumed=True),
    )
    await store.consume(request.id, audit=retry)
    with pytest.raises(ApprovalAlreadyUsed):
        await store.consume(request.id, audit=retry)
    sink = PostgresAuditSink(postgres_url)
    records = sink.records(type="approval_resolved")
    assert [(r["data"]["channel"], r["data"]["consumed_by_retry"]) for r in records] == [
        ("terminal", False),
        ("cli", True),
    ]
    assert records[0]["data"]["root"] == "/p"
    sink.close()
    await store.close()


def _terminate_others(url: str) -> int:
    """End every other session on the test database, as a server restart or an idle-session
    timeout would; how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def test_a_durable_record_survives_a_dropped_connection(postgres_url: str) -> None:
    """The server ended the sink's idle connection (restart, failover, idle timeout): the
    next durable record is still written, on a new connection, not dropped with a warning."""
    sink = PostgresAuditSink(postgres_url)
    sink.emit(_event("approval_requested", "c1", id="apr_1"))
    assert _terminate_others(postgres_url) >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sink.emit(_event("approval_requested", "c2", id="apr_2"))
    assert [r["call_id"] for r in sink.records(type="approval_requested")] == ["c1", "c2"]
    sink.close()


def test_a_nul_in_a_tool_name_loses_no_record(postgres_url: str) -> None:
    """A malicious MCP server names a tool with a NUL (or a client sends such a session id):
    its events are recorded with the name intact, and the other events written in the same
    batch (another call's approval decision among them) are not lost with them."""
    sink = PostgresAuditSink(postgres_url, flush_interval=60)
    evil = Event(
        type="started", call_id="c\x00", tool="evil\x00", time=time.time(), session_id="s\x00"
    )
    sink.emit(evil)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sink.emit(_event("approval_resolved", "c2", id="apr_2", verdict="approve"))
    records = sink.records()
    assert [(r["type"], r["call_id"], r["tool"], r["session_id"]) for r in records] == [
        ("started", "c\x00", "evil\x00", "s\x00"),
        ("approval_resolved", "c2", "fs.write", "s1"),
    ]
    assert [r["call_id"] for r in sink.records("c\x00", tool="evil\x00")] == ["c\x00"]
    sink.close()


def test_events_are_read_a_page_at_a_time_down_or_after_an_id(postgres_url: str) -> None:
    """``newest_first`` with ``before`` and ``limit`` walks the log down in pages; ``after``
    gives only the events newer than one seen (what ``invokit audit --follow`` asks for)."""
    sink = PostgresAuditSink(postgres_url)
    for i in range(25):
        sink.emit(_event("started", f"p{i}"))
    sink.flush()
    everything = sink.records()
    ids = [r["id"] for r in everything if str(r["call_id"]).startswith("p")]
    assert len(ids) == 25
    pages: list[list[int]] = []
    before = None
    while True:
        page = sink.records(newest_first=True, before=before, limit=10)
        pages.append([r["id"] for r in page])
        if len(page) < 10:
            break
        before = page[-1]["id"]
    walked = [i for page in pages for i in page if i in ids]
    assert walked == ids[::-1]
    assert [len(p) for p in pages][:2] == [10, 10]
    assert [r["id"] for r in sink.records(after=ids[-4])] == ids[-3:]
    assert sink.records(after=ids[-1]) == []
    sink.close()
