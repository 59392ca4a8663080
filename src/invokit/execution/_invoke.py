"""Running a tool's coroutine under a timeout, for about the price of a dict entry.

On asyncio a call's deadline is one entry in its event loop's :class:`Watchdog`, armed before
the tool's coroutine is awaited and dropped after it; nothing is scheduled per call. The
watchdog wakes every ``SLOT`` seconds while any deadline is armed and cancels the tasks whose
deadline has passed, the way ``asyncio.timeout`` does: natively, so cancel scopes the tool opens
itself nest correctly. Deadlines under ``PRECISE_BELOW`` seconds get a timer of their own
instead. Other backends (trio) run the call inside ``anyio.move_on_after``.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

from invokit._loops import running_asyncio

SLOT = 0.05
"""Seconds between watchdog rounds; a shared deadline fires at most this late, never early."""
PRECISE_BELOW = 1.0
"""Deadlines shorter than this get their own timer."""


def rounds(seconds: float) -> int:
    """How many watchdog rounds a deadline of ``seconds`` lasts (one more than fit: rounds are
    at least ``SLOT`` apart, so counting them never fires early)."""
    return math.ceil(seconds / SLOT) + 1


class Watchdog:
    """The armed deadlines of one event loop, checked every ``SLOT`` seconds.

    A call arms with ``deadlines[key] = (task, watchdog.round + rounds(seconds))`` (then
    :meth:`start`), where ``key`` is the tool's coroutine, and disarms with
    ``del deadlines[key]``: that is all a call that finishes in time pays. A deadline that fires
    cancels its task and is noted in ``fired``; :meth:`timed_out` and :meth:`fired_anyway` read
    that note after the call.
    """

    __slots__ = ("deadlines", "fired", "loop", "round", "task", "timer")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.round = 0
        self.deadlines: dict[object, tuple[Any, int]] = {}
        self.fired: dict[object, tuple[Any, int]] = {}
        """key → (task, ``task.cancelling()`` before the deadline cancelled it)."""
        self.timer: Any = None
        self.task: Callable[[Any], Any] = _current_task_getter()
        """``task(loop)``: the running task, at C speed."""

    def start(self) -> None:
        """Schedule the next round, when none is scheduled."""
        if self.timer is None:
            self.timer = self.loop.call_later(SLOT, self._check)

    def arm(self, key: object, seconds: float) -> None:
        """Watch the running task for ``seconds``; ``key`` (the coroutine) names the deadline."""
        task = self.task(self.loop)
        if seconds < PRECISE_BELOW:
            self.deadlines[key] = (task, -1)  # never due in a round: its own timer fires it
            self.loop.call_later(seconds, self._fire_precise, key)
        else:
            self.deadlines[key] = (task, self.round + rounds(seconds))
            self.start()

    def disarm(self, key: object) -> None:
        """Stop watching ``key`` (the call finished, or its deadline fired)."""
        self.deadlines.pop(key, None)

    def timed_out(self, key: object, exc: BaseException) -> bool:
        """After ``exc`` came out of the call: whether it is the cancellation this deadline
        caused (the cancel request is then withdrawn) rather than the caller's."""
        if not self.fired:
            return False
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        import asyncio  # loaded already: a deadline fired on its loop

        task, before = noted
        return isinstance(exc, asyncio.CancelledError) and task.uncancel() <= before

    def fired_anyway(self, key: object) -> bool:
        """After a normal return: whether the deadline fired and the tool swallowed the
        cancellation (the cancel request is then withdrawn: the call ran past its deadline)."""
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        noted[0].uncancel()
        return True

    def _fire(self, key: object, task: Any) -> None:
        self.fired[key] = (task, task.cancelling())
        task.cancel()

    def _fire_precise(self, key: object) -> None:
        entry = self.deadlines.get(key)
        if entry is not None and key not in self.fired:
            self._fire(key, entry[0])

    def _check(self) -> None:
        self.round += 1
        now = self.round
        fired = self.fired
        due = [
            (key, task)
            for key, (task, at) in self.deadlines.items()
            if 0 <= at <= now and key not in fired
        ]
        for key, task in due:
            self._fire(key, task)
        self.timer = self.loop.call_later(SLOT, self._check) if self.deadlines else None


_dogs: weakref.WeakKeyDictionary[Any, Watchdog] = weakref.WeakKeyDictionary()
_dogs_lock = threading.Lock()
_last: Watchdog | None = None  # the one used most recently: one read, no lock, on the hot path


def watchdog(loop: Any) -> Watchdog:
    """The watchdog of ``loop`` (one per loop)."""
    global _last
    last = _last
    if last is not None and last.loop is loop:
        return last
    with _dogs_lock:
        found = _dogs.get(loop)
        if found is None:
            found = _dogs[loop] = Watchdog(loop)
    _last = found
    return found


def loop_getter() -> Callable[[], Any] | None:
    """asyncio's own ``_get_running_loop`` (the running loop or ``None``, at C speed) once
    asyncio is imported; ``None`` before (then no asyncio loop can be running)."""
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else asyncio.events._get_running_loop


def running_loop() -> Any:
    """The running asyncio loop, or ``None`` (trio, or no loop); never imports asyncio."""
    running = running_asyncio()
    return None if running is None else running[1]


async def run_with_timeout(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` under a deadline of ``seconds``; return ``(value, timed_out)``."""
    loop = running_loop()
    if loop is None:
        import anyio

        with anyio.move_on_after(seconds) as scope:
            value = await coro
        return (None, True) if scope.cancelled_caught else (value, False)
    dog = watchdog(loop)
    dog.arm(coro, seconds)
    try:
        value = await coro
    except BaseException as exc:
        dog.disarm(coro)
        if dog.timed_out(coro, exc):
            return None, True
        raise
    dog.disarm(coro)
    return (None, True) if dog.fired and dog.fired_anyway(coro) else (value, False)


def _current_task_getter() -> Callable[[Any], Any]:
    """``current_task(loop)`` at C speed: ``_asyncio.current_task`` (3.12+), or a read of the
    table asyncio's C tasks share with ``asyncio.tasks`` (3.11)."""
    import asyncio

    native = getattr(sys.modules.get("_asyncio"), "current_task", None)
    if native is not None:
        return native  # type: ignore[no-any-return]
    shared = getattr(asyncio.tasks, "_current_tasks", None)
    if isinstance(shared, dict):
        return shared.get
    return asyncio.current_task
