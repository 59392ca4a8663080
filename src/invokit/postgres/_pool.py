"""Connections to one PostgreSQL database: a lazily opened async pool, or one blocking
connection, each bringing the schema up to date the first time it is used."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

from invokit.exceptions import MissingExtra
from invokit.postgres._schema import migrate, migrate_sync
from invokit.postgres._url import check_url, masked_url


def require_psycopg() -> None:
    """Raise :class:`MissingExtra` unless psycopg 3 and psycopg-pool are installed."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise MissingExtra("the PostgreSQL store", "postgres") from None


def why(exc: BaseException) -> str:
    """The first line of a driver error, any password in it masked."""
    lines = str(exc).strip().splitlines()
    return masked_url(lines[0]) if lines else type(exc).__name__


class Unreachable(ConnectionError):
    """The database could not be reached; the message names the masked URL, never a password."""


class AsyncDatabase:
    """An ``AsyncConnectionPool`` on ``url``, opened on first use (in the running event loop)
    and then shared by every call; the schema is migrated once, when it opens.

    Args:
        url: a ``postgresql://`` URL; a password only in it or in libpq's environment.
        min_size: connections kept open.
        max_size: connections at most.
        timeout: seconds to wait for the server, or for a free connection.
    """

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 10.0
    ) -> None:
        require_psycopg()
        self.url = check_url(url)
        self.shown = masked_url(url)
        self._min, self._max, self._timeout = min_size, max_size, timeout
        self._pool: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None

    async def pool(self) -> Any:
        """The open pool of this event loop (opened and the schema migrated on first use)."""
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._loop is loop:
            return self._pool
        if self._opening is None or self._loop is not loop:
            # A store used again from a new event loop (one ``anyio.run`` per CLI command)
            # gets a new pool; the old loop and its connections are gone.
            self._opening, self._loop, self._pool = asyncio.Lock(), loop, None
        async with self._opening:
            if self._pool is None:
                self._pool = await self._open()
        return self._pool

    async def _open(self) -> Any:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(
            self.url,
            min_size=self._min,
            max_size=self._max,
            timeout=self._timeout,
            open=False,
            kwargs={"autocommit": True},
            name="invokit",
        )
        try:
            try:
                await pool.open(wait=True, timeout=self._timeout)
            except Exception as exc:
                raise Unreachable(
                    f"cannot reach the PostgreSQL database {self.shown}: {why(exc)}"
                ) from None
            async with pool.connection() as conn:
                await migrate(conn)
        except BaseException:
            await pool.close()
            raise
        return pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A connection from the pool (autocommit; use ``conn.transaction()`` for more than
        one statement)."""
        pool = await self.pool()
        conn = await self._working(pool)
        try:
            yield conn
        finally:
            await pool.putconn(conn)

    async def _working(self, pool: Any) -> Any:
        """A connection of ``pool`` that answers. Those the server ended while they sat in the
        pool (a restart, a failover, an idle timeout) are dropped and replaced at once, every
        idle one together, instead of failing one call each (psycopg-pool's own ``check``
        waits longer after each dead connection, past ``timeout`` with a few of them)."""
        import psycopg

        conn = await pool.getconn()
        try:
            await conn.execute("")
        except psycopg.OperationalError:
            await pool.putconn(conn)  # broken: the pool discards it
            await pool.check()  # every idle connection the server ended goes too
            return await pool.getconn()
        except BaseException:
            await pool.putconn(conn)
            raise
        return conn

    async def connect(self) -> Any:
        """A new connection of its own (for ``LISTEN``), outside the pool."""
        await self.pool()  # the schema exists
        import psycopg

        return await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=max(1, int(self._timeout))
        )

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    def __repr__(self) -> str:
        return f"AsyncDatabase({self.shown!r})"


class SyncDatabase:
    """One blocking connection on ``url``, opened on first use and guarded by a lock, for
    the parts of invokit that are not async (the audit writer thread, spills, pins). A
    connection that broke is opened again on the next use."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        require_psycopg()
        self.url = check_url(url)
        self.shown = masked_url(url)
        self._timeout = timeout
        self._conn: Any = None
        self._lock = threading.RLock()

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """The connection, held alone for the ``with`` block; one the server ended while it
        was idle (a restart, a failover, an idle timeout) is replaced first."""
        with self._lock:
            yield self._working(check=True)

    def _working(self, *, check: bool) -> Any:
        """The connection, opened again if it broke; with ``check``, one that answers."""
        import psycopg

        conn = self._conn
        if check and conn is not None and not conn.closed and not conn.broken:
            try:
                conn.execute("")
            except psycopg.OperationalError:
                conn.close()
        if conn is None or conn.closed or conn.broken:
            self._conn = conn = self._open()
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """The connection, held alone, in a transaction committed at the end of the block.

        A connection the server ended while it was idle (a restart, a failover, an idle
        timeout) fails at ``BEGIN``, before anything is written: it is replaced by a new one
        and the transaction starts there, so what the block writes is neither lost nor written
        twice."""
        import psycopg

        with self._lock:
            for attempt in range(2):
                conn = self._working(check=False)  # a dead one fails at BEGIN: no round trip
                try:
                    conn.execute("BEGIN")
                except psycopg.OperationalError:
                    if attempt or not conn.broken:
                        raise
                    continue
                try:
                    yield conn
                except BaseException:
                    if not conn.broken:
                        with suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                return

    def _open(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, int(self._timeout))
            )
        except psycopg.Error as exc:
            raise Unreachable(
                f"cannot reach the PostgreSQL database {self.shown}: {why(exc)}"
            ) from None
        try:
            migrate_sync(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    def __repr__(self) -> str:
        return f"SyncDatabase({self.shown!r})"
