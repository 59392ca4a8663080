"""Which calls each ``invokit serve`` replica is running, so a replica's death is reported.

With a PostgreSQL state every replica keeps, in the shared database, a durable record of each
call it is about to run (``invokit_executions``: written and committed right before the tool
starts, as a ``before_call`` hook) and marks it ended when the tool returns. A replica holds a
PostgreSQL session advisory lock on its own id for as long as it lives; when the process dies
(``kill -9`` included) the server drops its connection and the lock with it. So a record that
never ended, of a replica whose lock is free, is a call that was in flight when its replica
died: ``invokit audit`` shows it as ``interrupted: replica died``. Nothing re-runs it: a retry
is a new call, decided and (where asked) approved again.

With a SQLite state the journal does nothing (one process per state directory is the common
case, and the executor's hot path stays as it is).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall, ToolResult
from invokit._spec import ToolSpec

if TYPE_CHECKING:
    from invokit.cli._stores import State

TABLE = "invokit_executions"


class NoJournal:
    """The journal of a state that keeps none."""

    replica: str | None = None

    async def aclose(self) -> None:
        return None


class Journal:
    """A ``before_call``/``after_call`` hook pair that records, durably, the calls this
    replica runs (see the module's docstring)."""

    def __init__(self, url: str, *, project: str) -> None:
        self._url = url
        self.project = project
        self.replica = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        """This replica's id, in every record it writes."""
        self._pool: Any = None
        self._holder: Any = None
        self._lock_key = 0
        # The records this task has open, innermost last: the hooks of one execution run in
        # its task, so a call cancelled between them leaves nothing behind here.
        self._running: ContextVar[tuple[str, ...]] = ContextVar(
            f"invokit_journal_{id(self)}", default=()
        )

    async def open(self) -> None:
        """Create the table, take this replica's liveness lock, open the pool."""
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        from invokit.postgres.internal import migrate

        holder = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        await migrate(holder)  # the table is part of invokit's versioned schema
        row = await (
            await holder.execute("SELECT hashtextextended(%s, 0)", (self.replica,))
        ).fetchone()
        assert row is not None
        self._lock_key = int(row[0])
        # Held on this connection until the process ends: its death frees the lock.
        await holder.execute("SELECT pg_advisory_lock(%s)", (self._lock_key,))
        self._holder = holder
        self._pool = AsyncConnectionPool(
            self._url, min_size=1, max_size=8, open=False, kwargs={"autocommit": True}
        )
        await self._pool.open()

    async def before_call(self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec) -> None:
        """Record, committed, that this replica starts ``call`` now."""
        record = "exe_" + secrets.token_urlsafe(12)
        async with self._pool.connection() as connection:
            await connection.execute(
                f"INSERT INTO {TABLE} (id, replica, lock_key, call_id, tool, session_id, "
                "project, started_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    record,
                    self.replica,
                    self._lock_key,
                    call.id,
                    spec.name,
                    call.session_id,
                    self.project,
                    time.time(),
                ),
            )
        self._running.set((*self._running.get(), record))
        return

    async def after_call(self, call: ToolCall, result: ToolResult) -> None:
        """Mark the record of ``call`` ended, with its outcome."""
        records = self._running.get()
        if not records:
            return
        record = records[-1]
        self._running.set(records[:-1])
        outcome = f"error: {result.error.kind}" if result.error is not None else "ok"
        async with self._pool.connection() as connection:
            await connection.execute(
                f"UPDATE {TABLE} SET ended_at = %s, outcome = %s WHERE id = %s",
                (time.time(), outcome, record),
            )
        return

    async def aclose(self) -> None:
        """A clean stop: calls still open here were cancelled with the server; say so."""
        try:
            if self._pool is not None:
                async with self._pool.connection() as connection:
                    await connection.execute(
                        f"UPDATE {TABLE} SET ended_at = %s, outcome = 'cancelled: server "
                        "stopped' WHERE replica = %s AND ended_at IS NULL",
                        (time.time(), self.replica),
                    )
                await self._pool.close()
        finally:
            if self._holder is not None:
                await self._holder.close()


async def open_journal(state: State, *, project: str) -> Journal | NoJournal:
    """The journal for ``state``: a :class:`Journal` for PostgreSQL, else nothing."""
    if state.kind != "postgresql":
        return NoJournal()
    assert state.url is not None
    journal = Journal(state.url, project=project)
    await journal.open()
    return journal


async def died_calls(url: str) -> list[dict[str, Any]]:
    """The calls that were in flight when their replica died (records that never ended, of a
    replica whose liveness lock is free), oldest first."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        exists = await (await connection.execute("SELECT to_regclass(%s)", (TABLE,))).fetchone()
        if exists is None or exists[0] is None:
            return []
        rows = await (
            await connection.execute(
                f"SELECT id, replica, lock_key, call_id, tool, session_id, project, started_at "
                f"FROM {TABLE} WHERE ended_at IS NULL ORDER BY started_at"
            )
        ).fetchall()
        alive: dict[int, bool] = {}
        found = []
        for row in rows:
            key = int(row[2])
            if key not in alive:
                free = await (
                    await connection.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                ).fetchone()
                alive[key] = not (free is not None and free[0])
                if not alive[key]:
                    await connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            if not alive[key]:
                found.append(
                    {
                        "type": "interrupted",
                        "call_id": row[3],
                        "tool": row[4],
                        "session_id": row[5],
                        "time": float(row[7]),
                        "data": {
                            "reason": "replica died",
                            "replica": row[1],
                            "project": row[6],
                            "execution": row[0],
                        },
                    }
                )
        return found
