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

# An armed deadline: [task, due round, fired, task.cancelling() before firing, own timer].
Deadline = list[Any]
_TASK, _DUE, _FIRED, _BEFORE, _TIMER = range(5)


class Watchdog:
    """The armed deadlines of one event loop, checked every ``SLOT`` seconds."""

    __slots__ = ("deadlines", "loop", "round", "task", "timer")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.task = _current_task_getter()
        self.round = 0
        self.deadlines: dict[object, Deadline] = {}
        self.timer: Any = None

    def arm(self, key: object, seconds: float) -> Deadline:
        """Watch the running task for ``seconds``; ``key`` (the coroutine) names the entry."""
        # Rounds are at least SLOT apart, so counting them never fires early.
        deadline = [
            self.task(self.loop),
            self.round + math.ceil(seconds / SLOT) + 1,
            False,
            0,
            None,
        ]
        if seconds < PRECISE_BELOW:
            deadline[_TIMER] = self.loop.call_later(seconds, _fire, deadline)
        else:
            self.deadlines[key] = deadline
            if self.timer is None:
                self.timer = self.loop.call_later(SLOT, self._check)
        return deadline

    def disarm(self, key: object, deadline: Deadline) -> None:
        """Stop watching (the call finished, or its deadline fired)."""
        timer = deadline[_TIMER]
        if timer is not None:
            timer.cancel()
        else:
            self.deadlines.pop(key, None)

    def _check(self) -> None:
        self.round += 1
        now = self.round
        due = [d for d in self.deadlines.values() if d[_DUE] <= now and not d[_FIRED]]
        for deadline in due:
            _fire(deadline)
        self.timer = self.loop.call_later(SLOT, self._check) if self.deadlines else None


def _fire(deadline: Deadline) -> None:
    task = deadline[_TASK]
    deadline[_BEFORE] = task.cancelling()
    deadline[_FIRED] = True
    task.cancel()


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


def timed_out(deadline: Deadline, exc: BaseException) -> bool:
    """After ``exc`` came out of the call: whether it is the cancellation our deadline caused
    (then the cancel request is withdrawn and the call reports a timeout), not the caller's."""
    if not deadline[_FIRED]:
        return False
    import asyncio  # loaded already: a deadline fired on its loop

    return (
        isinstance(exc, asyncio.CancelledError) and deadline[_TASK].uncancel() <= deadline[_BEFORE]
    )


def fired_anyway(deadline: Deadline) -> bool:
    """After a normal return: whether the deadline fired and the tool swallowed the
    cancellation (then the cancel request is withdrawn; the call ran past its deadline)."""
    if deadline[_FIRED]:
        deadline[_TASK].uncancel()
        return True
    return False


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
    deadline = dog.arm(coro, seconds)
    try:
        value = await coro
    except BaseException as exc:
        dog.disarm(coro, deadline)
        if timed_out(deadline, exc):
            return None, True
        raise
    dog.disarm(coro, deadline)
    return (None, True) if fired_anyway(deadline) else (value, False)


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
