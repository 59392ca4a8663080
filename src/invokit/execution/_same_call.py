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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from invokit._calls import ToolCall


class SameCall:
    """The executions of each call under way in this executor: the first goes on at once, a
    concurrent one of the same call waits until it is done."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str | None], tuple[Any, list[int]]] = {}

    @asynccontextmanager
    async def turn(self, call: ToolCall) -> AsyncIterator[None]:
        """Hold the turn of ``call`` (by id and session) while the block runs."""
        key = (call.id, call.session_id)
        held = self._locks.get(key)
        if held is None:
            held = self._locks[key] = (_lock(), [0])
        lock, users = held
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[key]


def _lock() -> Any:
    """asyncio's lock on an asyncio loop (taking a free one costs no turn of the loop),
    anyio's on any other backend."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and asyncio.events._get_running_loop() is not None:
        return asyncio.Lock()
    import anyio

    return anyio.Lock()
