"""A SQLite audit log: events in a table, queryable by call, session, tool or type."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

from invokit._state import store_file
from invokit.execution._audit_buffer import DURABLE_EVENTS, BufferedSink
from invokit.execution._audit_encoding import dumps_record, unencodable
from invokit.execution._events import Event, text_field

DEFAULT_FILE = "audit.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    type TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    session_id TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_call ON events (call_id, id);
CREATE INDEX IF NOT EXISTS events_session ON events (session_id, id);
"""


class SqliteAuditSink(BufferedSink):
    """Writes events to the ``events`` table of a private (0600) SQLite file in WAL mode.

    Args:
        path: the database; ``None`` is ``audit.sqlite3`` in the user's state directory.
        forbidden_roots: directories tools may write; a database inside one is refused.
        types: the event types to log; ``None`` logs all.
        flush_interval: seconds between background writes: the longest an event not in
            ``durable`` waits before it is written.
        max_buffer: this many waiting events trigger an early write.
        durable: the event types written before the executor goes on (by default the
            approval decisions, :data:`DURABLE_EVENTS`); every type (``ALL_EVENT_TYPES``) makes every
            record durable at the cost of one write per event.
        group_commit: a call's outcome is returned only once its records are written, so a
            caller never holds a result whose record a crash (``kill -9``) could lose.
        fsync: also commit with ``PRAGMA synchronous = FULL``, so a written batch survives power loss too (slower:
            one disk flush per batch).

    Raises:
        ValueError: ``path`` is inside one of ``forbidden_roots``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        forbidden_roots: Iterable[str | os.PathLike[str]] = (),
        types: Iterable[str] | None = None,
        flush_interval: float = 0.05,
        max_buffer: int = 256,
        durable: Iterable[str] = DURABLE_EVENTS,
        group_commit: bool = True,
        fsync: bool = False,
    ) -> None:
        self.path = store_file(path, DEFAULT_FILE, forbidden_roots, "the audit log")
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=10.0, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA busy_timeout = 10000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        # A WAL commit is written to the kernel (kept on kill -9) either way; FULL also
        # syncs it to disk (kept on power loss).
        self._conn.execute(f"PRAGMA synchronous = {'FULL' if fsync else 'NORMAL'}")
        self._conn.executescript(_SCHEMA)
        super().__init__(
            types=types,
            flush_interval=flush_interval,
            max_buffer=max_buffer,
            durable=durable,
            group_commit=group_commit,
        )

    def _write(self, events: list[Event]) -> None:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the audit database is closed")
        rows = [
            (
                e.time if isinstance(e.time, int | float) else None,
                text_field(e.type),
                text_field(e.call_id),
                text_field(e.tool),
                text_field(e.session_id),
                _data(e),
            )
            for e in events
        ]
        with conn:
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO events (time, type, call_id, tool, session_id, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def _release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def records(
        self,
        call_id: str | None = None,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        type: str | None = None,
    ) -> list[dict[str, Any]]:
        """Flush, then the matching events, oldest first, each as ``Event.to_dict()`` plus ``id``."""
        self.flush()
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("call_id", call_id),
            ("session_id", session_id),
            ("tool", tool),
            ("type", type),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = "SELECT id, time, type, call_id, tool, session_id, data FROM events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        with self._write_lock:
            conn = self._conn
            if conn is None:
                # Closed: read with a fresh connection, the file is still there.
                with sqlite3.connect(self.path) as fresh:
                    rows = fresh.execute(sql, params).fetchall()
                fresh.close()
            else:
                rows = conn.execute(sql, params).fetchall()
        return [
            {
                "id": row[0],
                "time": row[1],
                "type": row[2],
                "call_id": row[3],
                "tool": row[4],
                "session_id": row[5],
                "data": json.loads(row[6]),
            }
            for row in rows
        ]

    def __repr__(self) -> str:
        return f"SqliteAuditSink({str(self.path)!r})"


def _data(event: Event) -> str:
    """The event's data as JSON; data that cannot be encoded says so instead, and the rest of
    the batch is still written."""
    try:
        return dumps_record(event.data)
    except Exception as exc:
        return dumps_record(unencodable(exc))
