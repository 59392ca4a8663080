"""Running a tool's coroutine under a timeout, without paying for a timer when it need not wait."""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any

import anyio


class _Resume:
    """Awaits the rest of a coroutine whose first step already ran.

    Passes every suspension up to the event loop and every value or exception back down, exactly
    as ``await coro`` would have done from the start.
    """

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        pending = self.first
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    pending = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def run_with_timeout(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Run ``coro``; return ``(value, timed_out)``.

    The first step runs eagerly: a tool that finishes without waiting (most trivial tools do)
    needs no cancel scope at all, which keeps the executor's overhead near the floor. A tool
    that waits continues inside ``anyio.move_on_after(seconds)`` and honours the caller's
    cancellation at every suspension, as usual.
    """
    try:
        first = coro.send(None)
    except StopIteration as stop:
        return stop.value, False
    except BaseException:
        coro.close()
        raise
    with anyio.move_on_after(seconds) as scope:
        value = await _Resume(coro, first)
    if scope.cancelled_caught:
        return None, True
    return value, False
