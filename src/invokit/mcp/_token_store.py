"""Where the OAuth tokens invokit holds for remote MCP servers live: a private SQLite file.

One row per (server URL, key): the tokens (with the moment they expire, which the SDK's own
record forgets across restarts), the client registration, the issuer's metadata (where to
refresh them after a restart), and the PKCE verifiers of sign-ins
that were started and not yet finished. The file is ``mcp-oauth.sqlite3`` in the state
directory, mode 0600, never inside a directory a tool may write; nothing in it reaches a model.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio.to_thread
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from invokit._state import store_file

DEFAULT_FILE = "mcp-oauth.sqlite3"
PENDING_TTL = 900.0
"""Seconds a started sign-in stays finishable (the person signs in within this time)."""

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS oauth (
    server TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires_at REAL,
    PRIMARY KEY (server, key)
)
"""


class TokenRows(Protocol):
    """Where the rows live: this SQLite file, or the state database
    (``invokit.postgres.PostgresOAuthTokenStore``)."""

    async def put(self, server: str, key: str, value: str, expires_at: float | None) -> None: ...

    async def get(self, server: str, key: str) -> tuple[str, float | None] | None: ...

    async def take(self, server: str, key: str) -> tuple[str, float | None] | None:
        """The row, deleted (of several takers at once, one gets it)."""
        ...


class OAuthTokenStore:
    """The tokens, registrations and pending sign-ins for remote MCP servers.

    Args:
        path: the SQLite file; default ``mcp-oauth.sqlite3`` in the state directory.
        forbidden_roots: directories tools may write; the file may not be inside one.
    """

    def __init__(
        self, path: str | Path | None = None, *, forbidden_roots: Iterable[str | Path] = ()
    ) -> None:
        self.path = store_file(path, DEFAULT_FILE, forbidden_roots, "MCP OAuth tokens")
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.execute(_SCHEMA)

    def for_server(self, server_url: str) -> ServerTokens:
        """The SDK's ``TokenStorage`` for one server (keyed by its URL: tokens are bound to it)."""
        return ServerTokens(self, server_url)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 10000")
        return conn

    def _run(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            conn = self._connect()
            try:
                return conn.execute(sql, args).fetchall()
            finally:
                conn.close()

    async def run(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run one statement off the event loop."""
        return await anyio.to_thread.run_sync(partial(self._run, sql, args))

    async def put(self, server: str, key: str, value: str, expires_at: float | None) -> None:
        await self.run(
            "INSERT OR REPLACE INTO oauth (server, key, value, expires_at) VALUES (?, ?, ?, ?)",
            server,
            key,
            value,
            expires_at,
        )

    async def get(self, server: str, key: str) -> tuple[str, float | None] | None:
        rows = await self.run(
            "SELECT value, expires_at FROM oauth WHERE server = ? AND key = ?", server, key
        )
        return (rows[0][0], rows[0][1]) if rows else None

    async def take(self, server: str, key: str) -> tuple[str, float | None] | None:
        rows = await self.run(
            "DELETE FROM oauth WHERE server = ? AND key = ? RETURNING value, expires_at",
            server,
            key,
        )
        return (rows[0][0], rows[0][1]) if rows else None


class ServerTokens:
    """One server's tokens and registration (the MCP SDK's ``TokenStorage``), and its pending
    sign-ins."""

    def __init__(self, store: TokenRows, server_url: str) -> None:
        self._store = store
        self.server_url = server_url

    async def get_tokens(self) -> OAuthToken | None:
        found = await self._store.get(self.server_url, "tokens")
        return None if found is None else OAuthToken.model_validate_json(found[0])

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + tokens.expires_in
        await self._store.put(self.server_url, "tokens", tokens.model_dump_json(), expires_at)

    async def forget_tokens(self) -> None:
        """Drop the tokens (the issuer refused their refresh): the next request signs in."""
        await self._store.take(self.server_url, "tokens")

    async def expires_at(self) -> float | None:
        """When the stored access token expires (``time.time()``), if the issuer said."""
        found = await self._store.get(self.server_url, "tokens")
        return None if found is None else found[1]

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        found = await self._store.get(self.server_url, "client")
        return None if found is None else OAuthClientInformationFull.model_validate_json(found[0])

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._store.put(self.server_url, "client", client_info.model_dump_json(), None)

    async def get_discovery(self) -> tuple[OAuthMetadata | None, ProtectedResourceMetadata | None]:
        """The issuer's metadata and the server's resource metadata found at sign-in."""
        found = await self._store.get(self.server_url, "discovery")
        if found is None:
            return None, None
        data = json.loads(found[0])
        issuer, resource = data.get("issuer"), data.get("resource")
        return (
            None if issuer is None else OAuthMetadata.model_validate(issuer),
            None if resource is None else ProtectedResourceMetadata.model_validate(resource),
        )

    async def set_discovery(
        self, issuer: OAuthMetadata | None, resource: ProtectedResourceMetadata | None
    ) -> None:
        data = {
            "issuer": None if issuer is None else issuer.model_dump(mode="json"),
            "resource": None if resource is None else resource.model_dump(mode="json"),
        }
        await self._store.put(self.server_url, "discovery", json.dumps(data), None)

    async def put_pending(self, state: str, verifier: str) -> None:
        """Keep the PKCE verifier of a sign-in just started, under its ``state``."""
        value = json.dumps({"verifier": verifier})
        await self._store.put(self.server_url, f"pending:{state}", value, time.time() + PENDING_TTL)

    async def take_pending(self, state: str) -> str | None:
        """The verifier of the sign-in started with ``state``, once; ``None`` if there is
        none or it is too old."""
        found = await self._store.take(self.server_url, f"pending:{state}")
        if found is None or (found[1] is not None and found[1] < time.time()):
            return None
        return str(json.loads(found[0])["verifier"])
