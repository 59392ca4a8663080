"""The SQLite audit log: events in a table, queried by call, session, tool and type."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from invokit.execution._audit_sqlite import SqliteAuditSink
from invokit.execution._events import Event, EventSink


def event(call_id: str, type_: str, session: str | None = "s1", **data: object) -> Event:
    """An event of one call at the current time."""
    return Event(
        type=type_,  # type: ignore[arg-type]
        call_id=call_id,
        tool="shell",
        time=time.time(),
        session_id=session,
        data=dict(data),
    )


def test_who_approved_what_and_what_ran(tmp_path: Path) -> None:
    """A call's records answer who approved it, with which arguments, and what ran."""
    sink = SqliteAuditSink(tmp_path / "audit.sqlite3", flush_interval=60)
    assert isinstance(sink, EventSink)
    sink.emit(event("c1", "received"))
    sink.emit(event("c1", "decided", verdict="ask", reason="git push", rule="shell(git push *)"))
    sink.emit(event("c1", "approval_requested", id="a1", arguments={"argv": ["git", "push"]}))
    sink.emit(event("c2", "received", session="s2"))
    sink.emit(event("c1", "approval_resolved", id="a1", approved=True, by="ana", scope="once"))
    sink.emit(event("c1", "completed", is_error=False, arguments={"argv": ["git", "push"]}))
    records = sink.records("c1")
    assert [r["type"] for r in records] == [
        "received",
        "decided",
        "approval_requested",
        "approval_resolved",
        "completed",
    ]
    assert records[3]["data"]["by"] == "ana"
    assert records[4]["data"]["arguments"] == {"argv": ["git", "push"]}
    assert records[0]["id"] < records[1]["id"]
    assert [r["call_id"] for r in sink.records(session_id="s2")] == ["c2"]
    assert len(sink.records(type="received")) == 2
    assert len(sink.records(tool="shell")) == 6
    assert sink.records(tool="other") == []
    sink.close()


def test_persists_and_reads_after_close(tmp_path: Path) -> None:
    """Events are in the file for any SQLite reader, and records work after close."""
    path = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(path)
    sink.emit(event("c1", "failed", kind="timeout", message="too slow"))
    sink.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, call_id, tool, session_id, data FROM events").fetchall()
    conn.close()
    assert rows == [
        ("failed", "c1", "shell", "s1", '{"kind":"timeout","message":"too slow"}'),
    ]
    assert sink.records("c1")[0]["data"]["kind"] == "timeout"


def test_background_writes(tmp_path: Path) -> None:
    """Buffered events reach the database without an explicit flush."""
    path = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(path, flush_interval=0.05)
    sink.emit(event("c1", "received"))
    deadline = time.monotonic() + 30  # a bound on a hang, not a speed
    while True:
        with sqlite3.connect(path) as conn:
            count = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        conn.close()
        if count == 1:
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    sink.close()


def test_threads_and_sinks_share_one_database(tmp_path: Path) -> None:
    """Two sinks on one file, fed from two threads, store every event once."""
    path = tmp_path / "audit.sqlite3"
    sinks = [SqliteAuditSink(path, flush_interval=0.01, max_buffer=5) for _ in range(2)]

    def produce(sink: SqliteAuditSink, name: str) -> None:
        for n in range(300):
            sink.emit(event(f"{name}-{n}", "received"))

    threads = [threading.Thread(target=produce, args=(s, str(i))) for i, s in enumerate(sinks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sink in sinks:
        sink.close()
    ids = [r["call_id"] for r in sinks[0].records()]
    assert len(ids) == len(set(ids)) == 600


def test_file_is_private(tmp_path: Path) -> None:
    """The database is created 0600."""
    sink = SqliteAuditSink(tmp_path / "d" / "audit.sqlite3")
    assert stat.S_IMODE(os.stat(sink.path).st_mode) == 0o600
    sink.close()


def test_refuses_tool_roots(tmp_path: Path) -> None:
    """The database cannot live where a tool may write."""
    with pytest.raises(ValueError, match="tools may write"):
        SqliteAuditSink(tmp_path / "audit.sqlite3", forbidden_roots=[tmp_path])


def test_default_path_in_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a path the database is `audit.sqlite3` in the user's state directory."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path))
    sink = SqliteAuditSink()
    assert sink.path == tmp_path / "audit.sqlite3"
    assert "SqliteAuditSink(" in repr(sink)
    sink.close()
