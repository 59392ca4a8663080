"""Executions of one call, one at a time.

Two executions of the same call (its id and session) at once — a client retrying while the
first still waits for a person — must not both ask: with a store whose reads and writes await
(SQLite in a worker thread, PostgreSQL), both could read "no question yet" before either stored
one, and a person approving both questions would run the call twice. :class:`SameCall` lets the
first go on and the others wait their turn, so each decides on what the one before it left
(rejoining its question, or its "no"). Across processes the stores' own single-use rules hold.
"""

from __future__ import annotations

import sys
from typing import Any


class SameCall:
    """The executions of each call under way in this executor: the first goes on at once, a
    concurrent one of the same call waits until it is done. ``enter`` gives the lock to hold
    (``async with``) and ``leave`` must follow, whatever happens (plain methods, not a context
    manager: a served call pays for this on every call)."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str | None], list[Any]] = {}

    def enter(self, key: tuple[str, str | None]) -> Any:
        """The lock of the call ``key`` (id, session), counted as in use until ``leave``."""
        held = self._locks.get(key)
        if held is None:
            held = self._locks[key] = [_lock(), 0]
        held[1] += 1
        return held[0]

    def leave(self, key: tuple[str, str | None]) -> None:
        """One use of the call's lock ended; the last drops it."""
        held = self._locks[key]
        held[1] -= 1
        if not held[1]:
            del self._locks[key]


def _lock() -> Any:
    """asyncio's lock on an asyncio loop (taking a free one costs no turn of the loop),
    anyio's on any other backend."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and asyncio.events._get_running_loop() is not None:
        return asyncio.Lock()
    import anyio

    return anyio.Lock()
