"""Spilled outputs and MCP pins in PostgreSQL, shared by every replica: a handle given out by
one replica is readable through any other, and a tool trusted in one is trusted in all."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from invokit._ids import new_id
from invokit.execution.internal import reader_for
from invokit.postgres._pool import SyncDatabase
from invokit.tools import FunctionTool

if TYPE_CHECKING:  # invokit.mcp needs the mcp extra; pins are made only where it is used
    from invokit.mcp import Pin


def _pin(server: str, tool: str, fingerprint: str, trusted_at: float) -> Pin:
    from invokit.mcp import Pin

    return Pin(server=server, tool=tool, fingerprint=fingerprint, trusted_at=trusted_at)


def _encode(text: str) -> bytes:
    # bytea: any Python text round-trips, NUL and lone surrogates included.
    return text.encode("utf-8", "surrogatepass")


class PostgresArtifactStore:
    """A :class:`~invokit.execution.SpillStore` in the ``invokit_artifacts`` table: the newest
    ``capacity`` outputs of all replicas together are kept.

    Args:
        url: a ``postgresql://`` URL (password only in it or in ``PGPASSWORD``; never shown).
        capacity: how many spilled outputs are kept; older ones are dropped as new ones come.
        timeout: seconds to wait for the server.
    """

    def __init__(self, url: str, *, capacity: int = 4096, timeout: float = 10.0) -> None:
        self._db = SyncDatabase(url, timeout=timeout)
        self.capacity = capacity
        self._readers: dict[int, FunctionTool] = {}

    def put(self, text: str) -> str:
        handle = new_id("art_", 12)
        with self._db.connection() as conn:
            # One statement: keep the new output, drop what falls out of the capacity.
            conn.execute(
                "WITH kept AS (INSERT INTO invokit_artifacts (handle, body, created_at) "
                "VALUES (%s, %s, %s) RETURNING seq) "
                "DELETE FROM invokit_artifacts WHERE seq <= (SELECT seq FROM kept) - %s",
                (handle, _encode(text), time.time(), self.capacity),
            )
        return handle

    def get(self, handle: str) -> str | None:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT body FROM invokit_artifacts WHERE handle = %s", (handle,)
            ).fetchone()
        return None if row is None else bytes(row[0]).decode("utf-8", "surrogatepass")

    def reader(self, page_chars: int = 20_000) -> FunctionTool:
        """The ``tool_result_read`` tool paging through outputs any replica spilled."""
        found = self._readers.get(page_chars)
        if found is None:
            found = self._readers[page_chars] = reader_for(self, page_chars)
        return found

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresArtifactStore({self._db.shown!r})"


class PostgresPinStore:
    """A :class:`~invokit.mcp.PinStorage` in the ``invokit_mcp_pins`` table: a remote tool
    trusted (or forgotten) through one replica is so for all of them.

    Args:
        url: a ``postgresql://`` URL (password only in it or in ``PGPASSWORD``; never shown).
        timeout: seconds to wait for the server.
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self._db = SyncDatabase(url, timeout=timeout)

    def get(self, server: str, tool: str) -> Pin | None:
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT fingerprint, trusted_at FROM invokit_mcp_pins "
                "WHERE server = %s AND tool = %s",
                (server, tool),
            ).fetchone()
        if row is None:
            return None
        return _pin(server, tool, row[0], row[1])

    def snapshot(self, server: str) -> dict[str, str]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT tool, fingerprint FROM invokit_mcp_pins WHERE server = %s", (server,)
            ).fetchall()
        return dict(rows)

    def trust_many(self, server: str, fingerprints: Mapping[str, str]) -> None:
        """Record several tools of ``server`` in one transaction."""
        now = time.time()
        rows = [(server, tool, fingerprint, now) for tool, fingerprint in fingerprints.items()]
        if not rows:
            return
        with self._db.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO invokit_mcp_pins (server, tool, fingerprint, trusted_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (server, tool) DO UPDATE SET "
                "fingerprint = excluded.fingerprint, trusted_at = excluded.trusted_at",
                rows,
            )

    def trust(self, server: str, tool: str, fingerprint: str) -> Pin:
        self.trust_many(server, {tool: fingerprint})
        pin = self.get(server, tool)
        return pin if pin is not None else _pin(server, tool, fingerprint, time.time())

    def forget(self, server: str, tool: str | None = None) -> int:
        with self._db.connection() as conn:
            if tool is None:
                cursor = conn.execute("DELETE FROM invokit_mcp_pins WHERE server = %s", (server,))
            else:
                cursor = conn.execute(
                    "DELETE FROM invokit_mcp_pins WHERE server = %s AND tool = %s",
                    (server, tool),
                )
            return int(cursor.rowcount)

    def list(self, server: str | None = None) -> list[Pin]:
        with self._db.connection() as conn:
            rows = conn.execute(
                "SELECT server, tool, fingerprint, trusted_at FROM invokit_mcp_pins "
                "WHERE %s::text IS NULL OR server = %s ORDER BY server, tool",
                (server, server),
            ).fetchall()
        return [_pin(*row) for row in rows]

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresPinStore({self._db.shown!r})"
