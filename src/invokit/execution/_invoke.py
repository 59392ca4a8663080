"""Running a tool's coroutine under a timeout, for about the price of a dict entry.

On asyncio a call's deadline is one entry in its event loop's :class:`Watchdog`, armed before
the tool's coroutine is awaited and dropped after it; nothing is scheduled per call. The
watchdog wakes every ``SLOT`` seconds while any deadline is armed and cancels the tasks whose
deadline has passed, the way ``asyncio.timeout`` does: natively, so cancel scopes the tool opens
itself nest correctly, and with the task's cancel count taken when the deadline is armed, so
nested deadlines and a caller's own cancellation are told apart. Deadlines under
``PRECISE_BELOW`` seconds get a timer of their own instead. Other backends (trio), and code
running outside an asyncio task, run the call inside ``anyio.move_on_after``.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Coroutine
from time import monotonic
from typing import Any

SLOT = 0.05
"""Seconds between watchdog rounds: a shared deadline fires at most this much later than due
while the event loop keeps up (never early)."""
PRECISE_BELOW = 1.0
"""Deadlines shorter than this get their own timer."""

Deadline = tuple[Any, float, int]
"""An armed deadline: (task, when it is due on ``time.monotonic()``, ``task.cancelling()``
when it was armed)."""


class Watchdog:
    """The armed deadlines of one event loop, checked every ``SLOT`` seconds.

    A call arms with ``deadlines[key] = (task, monotonic() + seconds, task.cancelling())``
    (then :meth:`start`), where ``key`` is the tool's coroutine, and disarms with
    ``del deadlines[key]``: that is all a call that finishes in time pays. A deadline that
    fires cancels its task and is noted in ``fired``; :meth:`timed_out` and
    :meth:`fired_anyway` read that note after the call.
    """

    __slots__ = ("__weakref__", "deadlines", "fired", "loop", "task", "timer")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.deadlines: dict[object, Deadline] = {}
        self.fired: dict[object, Deadline] = {}
        self.timer: Any = None
        self.task: Callable[[Any], Any] = _current_task_getter()
        """``task(loop)``: the running task (``None`` outside one), at C speed."""

    def start(self) -> None:
        """Schedule the next round, when none is scheduled."""
        if self.timer is None:
            self.timer = self.loop.call_later(SLOT, self._check)

    def arm(self, key: object, task: Any, seconds: float) -> None:
        """Watch ``task`` for ``seconds``; ``key`` (the coroutine) names the deadline."""
        self.deadlines[key] = (task, monotonic() + seconds, task.cancelling())
        if seconds < PRECISE_BELOW:
            self.loop.call_later(seconds, self._fire_precise, key)
        else:
            self.start()

    def timed_out(self, key: object, exc: BaseException) -> bool:
        """After ``exc`` came out of the call (already disarmed): whether the deadline caused
        it. If the deadline fired, its cancel request is withdrawn either way; the call timed
        out (whatever the tool turned the cancellation into) unless the task holds another
        cancel request (a caller's, or an outer deadline's): then ``exc`` must go on."""
        if not self.fired:
            return False
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        return bool(noted[0].uncancel() <= noted[2])

    def fired_anyway(self, key: object) -> bool:
        """After a normal return (already disarmed): whether the deadline fired and the tool
        swallowed the cancellation (it is withdrawn: the call ran past its deadline)."""
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        noted[0].uncancel()
        return True

    def _fire(self, key: object, deadline: Deadline) -> None:
        self.fired[key] = deadline
        deadline[0].cancel()

    def _fire_precise(self, key: object) -> None:
        deadline = self.deadlines.get(key)
        if deadline is not None and key not in self.fired:
            self._fire(key, deadline)

    def _check(self) -> None:
        try:
            now = monotonic()
            fired = self.fired
            due = [
                (key, deadline)
                for key, deadline in self.deadlines.items()
                if deadline[1] <= now and key not in fired
            ]
            for key, deadline in due:
                self._fire(key, deadline)
        finally:
            # Always scheduled again: one bad entry must not stop every other deadline.
            self.timer = self.loop.call_later(SLOT, self._check) if self.deadlines else None


_dogs: weakref.WeakValueDictionary[int, Watchdog] = weakref.WeakValueDictionary()
_dogs_lock = threading.Lock()


def watchdog(loop: Any) -> Watchdog:
    """The watchdog of ``loop``. It lives while someone holds it (an executor, an armed
    deadline's timer); it holds the loop, so the loop it is filed under is alive too."""
    found = _dogs.get(id(loop))
    if found is not None and found.loop is loop:
        return found
    with _dogs_lock:
        found = _dogs.get(id(loop))
        if found is None or found.loop is not loop:
            found = Watchdog(loop)
            _dogs[id(loop)] = found
    return found


def loop_getter() -> Callable[[], Any] | None:
    """asyncio's own ``_get_running_loop`` (the running loop or ``None``, at C speed) once
    asyncio is imported; ``None`` before (then no asyncio loop can be running)."""
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else asyncio.events._get_running_loop


async def run_with_timeout(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` under a deadline of ``seconds``; return ``(value, timed_out)``."""
    get_loop = loop_getter()
    loop = get_loop() if get_loop is not None else None
    dog = watchdog(loop) if loop is not None else None
    task = dog.task(loop) if dog is not None else None
    if dog is None or task is None:
        import anyio

        with anyio.move_on_after(seconds) as scope:
            value = await coro
        return (None, True) if scope.cancelled_caught else (value, False)
    dog.arm(coro, task, seconds)
    try:
        value = await coro
    except BaseException as exc:
        del dog.deadlines[coro]
        if dog.timed_out(coro, exc):
            return None, True
        raise
    del dog.deadlines[coro]
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
