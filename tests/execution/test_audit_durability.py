"""Audit records off the call's path, and the ones a caller is told about on disk first."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from invokit import Executor, Policy, ToolCall, tool
from invokit.execution import Event, Interrupted, JsonlAuditSink, SqliteAuditSink
from invokit.execution._audit_jsonl import read_jsonl

pytestmark = pytest.mark.anyio

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from invokit import Executor, ToolCall, tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import JsonlAuditSink, SqliteAuditSink

    state, durable = sys.argv[1], sys.argv[2] == "durable"
    extra = {} if durable else {"durable": (), "group_commit": False}

    @tool(read_only=False)
    async def deploy(target: str) -> str:
        '''Deploy.'''
        return "deployed " + target

    async def main() -> None:
        sinks = [
            # Nothing would reach the files before the process exits but the durable records.
            JsonlAuditSink(state + "/audit.jsonl", flush_interval=3600, **extra),
            SqliteAuditSink(state + "/audit.sqlite3", flush_interval=3600, **extra),
        ]
        executor = Executor(
            [deploy],
            approvals=SqliteApprovalStore(state + "/approvals.sqlite3"),
            events=sinks,
        )
        call = ToolCall(id="c1", name="deploy", arguments='{"target": "prod"}')
        outcome = await executor.execute(call)
        print("asked", outcome.interrupt.id, flush=True)
        outcome = await executor.resume(outcome.interrupt.id, approve=True, by="alice")
        print("resolved", outcome.result.is_error, flush=True)
        time.sleep(3600)  # killed here: no atexit, no close

    asyncio.run(main())
    """
)


def run_and_kill(tmp_path: Path, mode: str) -> str:
    """Run the child until it told its caller of the request and the decision, then
    ``kill -9`` it; the approval id it reported."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    state = tmp_path / "state"
    state.mkdir()
    child = subprocess.Popen(
        [sys.executable, str(script), str(state), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        asked = child.stdout.readline().split()
        resolved = child.stdout.readline().split()
        assert asked[:1] == ["asked"], child.stderr.read() if child.stderr else ""
        assert resolved == ["resolved", "False"]
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    return asked[1]


def logged(state: Path) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """What each audit file holds: the JSONL records, the SQLite (type, data) rows."""
    jsonl = state / "audit.jsonl"
    records = list(read_jsonl(jsonl)) if jsonl.exists() else []
    with sqlite3.connect(state / "audit.sqlite3") as db:
        rows = db.execute("SELECT type, data FROM events ORDER BY id").fetchall()
    db.close()
    return records, rows


def test_approval_records_survive_kill_9(tmp_path: Path) -> None:
    """A request and its decision that the caller was told about are in both audit logs when the
    process is killed with SIGKILL right after, even with a writer that waits an hour."""
    approval_id = run_and_kill(tmp_path, "durable")
    records, rows = logged(tmp_path / "state")
    for kind in ("approval_requested", "approval_resolved"):
        found = [r for r in records if r["type"] == kind]
        assert [r["data"]["id"] for r in found] == [approval_id]
        assert [t for t, _ in rows].count(kind) == 1
    resolved = next(r for r in records if r["type"] == "approval_resolved")
    assert resolved["data"]["approved"] is True
    assert resolved["data"]["by"] == "alice"
    # Everything buffered before a durable record is written with it: the call's first steps.
    assert [r["type"] for r in records][:4] == [
        "received",
        "validated",
        "decided",
        "approval_requested",
    ]


def test_without_durable_types_kill_9_loses_the_buffer(tmp_path: Path) -> None:
    """The same run with no durable types and no group commit loses every buffered record to
    SIGKILL: what the durable types and group commit guard against."""
    run_and_kill(tmp_path, "buffered")
    records, rows = logged(tmp_path / "state")
    assert records == []
    assert rows == []


async def test_a_request_is_on_disk_when_the_caller_is_told(tmp_path: Path) -> None:
    """When execute returns the interrupt, its approval_requested record is in the file
    already, without a flush."""

    @tool(read_only=False)
    async def deploy(target: str) -> str:
        """Deploy."""
        return target

    sink = JsonlAuditSink(tmp_path / "audit.jsonl", flush_interval=3600)
    executor = Executor([deploy], events=[sink])
    outcome = await executor.execute(ToolCall(id="c1", name="deploy", arguments={"target": "x"}))
    assert isinstance(outcome, Interrupted)
    on_disk = [r["type"] for r in read_jsonl(sink.path)]
    assert "approval_requested" in on_disk
    assert "interrupted" in on_disk
    sink.close()


class ThreadRecordingSink(JsonlAuditSink):
    """Notes the thread that writes each batch."""

    threads: list[str]

    def _write(self, events: list[Event]) -> None:
        self.threads.append(threading.current_thread().name)
        super()._write(events)


async def test_call_records_are_written_by_the_writer_thread(tmp_path: Path) -> None:
    """Without group commit, an allowed call's records are serialized and written on the
    sink's writer thread, never on the thread that runs the call; all of them arrive, in
    order."""

    @tool(read_only=True)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    sink = ThreadRecordingSink(tmp_path / "audit.jsonl", flush_interval=0.01, group_commit=False)
    sink.threads = []
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    for i in range(20):
        await executor.execute(ToolCall(id=f"c{i}", name="echo", arguments={"text": "hi"}))
    for _ in range(500):
        if len(list(read_jsonl(sink.path))) == 100:
            break
        threading.Event().wait(0.01)
    records = list(read_jsonl(sink.path))
    assert [r["type"] for r in records[:5]] == [
        "received",
        "validated",
        "decided",
        "started",
        "completed",
    ]
    assert len(records) == 100
    assert sink.threads
    assert set(sink.threads) == {"invokit-ThreadRecordingSink"}
    sink.close()


async def test_a_sink_without_types_gets_every_event(tmp_path: Path) -> None:
    """A custom sink with no ``types`` attribute is given every event; Executor() accepts it."""

    class Plain:
        def __init__(self) -> None:
            self.events: list[Event] = []

        def emit(self, event: Event) -> None:
            self.events.append(event)

        def flush(self) -> None: ...

        def close(self) -> None: ...

    @tool(read_only=True)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    plain = Plain()
    executor = Executor([echo], events=[plain])  # type: ignore[list-item]
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    assert [e.type for e in plain.events] == [
        "received",
        "validated",
        "decided",
        "started",
        "completed",
    ]
    assert plain.events[-1].call_id == "c1"
    assert plain.events[-1].data["arguments"] == {"text": "hi"}


def test_sqlite_sink_durable_types_are_configurable(tmp_path: Path) -> None:
    """``durable`` names the types written before emit returns; the default is the approval
    decisions."""
    sink = SqliteAuditSink(tmp_path / "a.sqlite3", flush_interval=3600)
    assert sink.durable == {"approval_requested", "approval_resolved", "interrupted"}
    sink.close()
    every = SqliteAuditSink(tmp_path / "b.sqlite3", flush_interval=3600, durable={"completed"})
    every.emit(Event(type="completed", call_id="c1", tool="t", time=1.0, data={}))
    with sqlite3.connect(tmp_path / "b.sqlite3") as db:
        assert db.execute("SELECT type FROM events").fetchall() == [("completed",)]
    db.close()
    every.close()
