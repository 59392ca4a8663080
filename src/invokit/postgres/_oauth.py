"""The OAuth tokens invokit holds as a client of remote MCP servers, in PostgreSQL: a server
one replica (or ``invokit mcp login``) signed in to is signed in for every replica.

The same rows as the SQLite file (:mod:`invokit.mcp._token_store`): one per (server URL, key)
in ``invokit_mcp_oauth``: the tokens with their expiry, the client registration, the issuer's
metadata and the PKCE verifiers of sign-ins not yet finished. A refresh one replica makes is
the one every replica uses next. Nothing in the table reaches a model.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio.to_thread

from invokit.postgres._pool import SyncDatabase


class PostgresOAuthTokenStore:
    """An :class:`~invokit.mcp.OAuthTokenStore` in the state database.

    Args:
        url: a ``postgresql://`` URL (password only in it or in ``PGPASSWORD``; never shown).
        timeout: seconds to wait for the server.
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self._db = SyncDatabase(url, timeout=timeout)

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._db.transaction() as conn:
            cursor = conn.execute(sql, args)
            return list(cursor.fetchall()) if cursor.description is not None else []

    async def _do(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return await anyio.to_thread.run_sync(partial(self._run, sql, args))

    async def put(self, server: str, key: str, value: str, expires_at: float | None) -> None:
        await self._do(
            "INSERT INTO invokit_mcp_oauth (server, key, value, expires_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (server, key) DO UPDATE SET "
            "value = excluded.value, expires_at = excluded.expires_at",
            server,
            key,
            value,
            expires_at,
        )

    async def get(self, server: str, key: str) -> tuple[str, float | None] | None:
        rows = await self._do(
            "SELECT value, expires_at FROM invokit_mcp_oauth WHERE server = %s AND key = %s",
            server,
            key,
        )
        return (str(rows[0][0]), rows[0][1]) if rows else None

    async def take(self, server: str, key: str) -> tuple[str, float | None] | None:
        """The row, deleted: of several replicas taking it at once, one gets it."""
        rows = await self._do(
            "DELETE FROM invokit_mcp_oauth WHERE server = %s AND key = %s "
            "RETURNING value, expires_at",
            server,
            key,
        )
        return (str(rows[0][0]), rows[0][1]) if rows else None

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresOAuthTokenStore({self._db.shown!r})"
