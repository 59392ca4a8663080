"""The audit log in PostgreSQL: every replica's events in one table, read by ``invokit audit``.

A decision's ``approval_resolved`` record is written by the approval store in the transaction
that makes the decision; when the executor then hands the sink the same record, the unique
``decision_key`` (approval id, verdict, whether a retry used it) makes the insert a no-op, so
each decision is recorded exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from invokit.execution import Event
from invokit.execution.internal import (
    DURABLE_EVENTS,
    BufferedSink,
    dumps_record,
    text_field,
    unencodable,
)
from invokit.postgres._pool import SyncDatabase
from invokit.postgres._text import loaded, stored

_INSERT = (
    "INSERT INTO invokit_audit_events (time, type, call_id, tool, session_id, data, "
    "decision_key) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)


def decision_key(event: Event) -> str | None:
    """What makes an ``approval_resolved`` record one decision: the approval id, the verdict
    and whether a retry used it; ``None`` for every other event."""
    data = event.data
    if event.type != "approval_resolved" or not isinstance(data, dict) or "id" not in data:
        return None
    used = "retry" if data.get("consumed_by_retry") else "decision"
    return f"{data['id']}:{data.get('verdict', data.get('approved'))}:{used}"


def _data(event: Event) -> str:
    """The event's data as JSON (control characters escaped, so PostgreSQL text holds it);
    data that cannot be encoded says so instead."""
    try:
        return dumps_record(event.data)
    except Exception as exc:
        return dumps_record(unencodable(exc))


def _row(event: Event) -> tuple[Any, ...]:
    return (
        event.time if isinstance(event.time, int | float) else None,
        stored(text_field(event.type)),
        stored(text_field(event.call_id)),
        stored(text_field(event.tool)),
        stored(text_field(event.session_id)),
        _data(event),
        stored(decision_key(event)),
    )


async def insert_events(conn: Any, events: list[Event]) -> None:
    """Insert ``events`` on an async connection, inside the caller's transaction."""
    async with conn.cursor() as cursor:
        await cursor.executemany(_INSERT, [_row(event) for event in events])


class PostgresAuditSink(BufferedSink):
    """Writes events to the ``invokit_audit_events`` table of a PostgreSQL database.

    Buffered like the file sinks (:class:`~invokit.execution.SqliteAuditSink`): the approval
    decisions (``durable``) are committed before the executor goes on, the rest in batches
    every ``flush_interval`` seconds, each batch one transaction.

    Args:
        url: a ``postgresql://`` URL (password only in it or in ``PGPASSWORD``; never shown).
        types: the event types to log; ``None`` logs all.
        flush_interval: seconds between background writes.
        max_buffer: this many waiting events trigger an early write.
        durable: the event types written before the executor goes on.
        timeout: seconds to wait for the server.
    """

    def __init__(
        self,
        url: str,
        *,
        types: Iterable[str] | None = None,
        flush_interval: float = 0.05,
        max_buffer: int = 256,
        durable: Iterable[str] = DURABLE_EVENTS,
        timeout: float = 10.0,
    ) -> None:
        self._db = SyncDatabase(url, timeout=timeout)
        super().__init__(
            types=types, flush_interval=flush_interval, max_buffer=max_buffer, durable=durable
        )

    @property
    def url(self) -> str:
        """The database URL with any password masked."""
        return self._db.shown

    def _write(self, events: list[Event]) -> None:
        rows = [_row(event) for event in events]
        with self._db.transaction() as conn, conn.cursor() as cursor:
            cursor.executemany(_INSERT, rows)

    def _release(self) -> None:
        self._db.close()

    def records(
        self,
        call_id: str | None = None,
        *,
        session_id: str | None = None,
        tool: str | None = None,
        type: str | None = None,
        after: int | None = None,
        before: int | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[dict[str, Any]]:
        """Flush, then the matching events of every process, oldest first (or newest first),
        each as ``Event.to_dict()`` plus ``id``.

        ``after`` / ``before`` keep the events whose ``id`` is greater / smaller; ``limit``
        the first ``limit`` of them in the order asked for, so a page down the log
        (``newest_first=True, before=...``) reads only its rows.
        """
        self.flush()
        where: list[str] = []
        params: list[Any] = []
        for bound, edge in ((">", after), ("<", before)):
            if edge is not None:
                where.append(f"id {bound} %s")
                params.append(int(edge))
        for column, value in (
            ("call_id", call_id),
            ("session_id", session_id),
            ("tool", tool),
            ("type", type),
        ):
            if value is not None:
                where.append(f"{column} = %s")
                params.append(stored(value))
        sql = "SELECT id, time, type, call_id, tool, session_id, data FROM invokit_audit_events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC" if newest_first else " ORDER BY id"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            {
                "id": row[0],
                "time": row[1],
                "type": loaded(row[2]),
                "call_id": loaded(row[3]),
                "tool": loaded(row[4]),
                "session_id": loaded(row[5]),
                "data": json.loads(row[6]),
            }
            for row in rows
        ]

    def __repr__(self) -> str:
        return f"PostgresAuditSink({self._db.shown!r})"
