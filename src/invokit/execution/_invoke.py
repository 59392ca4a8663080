"""Running a tool's coroutine under a timeout, for about the price of a dict entry.

On asyncio a call's deadline is one entry in its event loop's :class:`Watchdog`, armed before
the tool's coroutine is awaited (:meth:`Deadlines.arm`) and dropped after it
(:meth:`Watchdog.ended`): the invoke step of ``_running.run``. The watchdog keeps one timer, set for the
earliest deadline; a call whose deadline is not the earliest schedules nothing. When it wakes it
cancels the tasks whose deadline has passed, the way ``asyncio.timeout`` does: natively, so
cancel scopes the tool opens itself nest correctly, and with the task's cancel count taken when
the deadline was armed, so nested deadlines and a caller's own cancellation are told apart.
Other backends (trio), and code running outside an asyncio task, run the call inside
``anyio.move_on_after`` (:func:`run_in_scope`).
"""

from __future__ import annotations

import math
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine
from time import monotonic
from typing import Any

GAP = 0.001
"""Least seconds between two wake-ups: deadlines due within it of each other fire together, at
most this late (never early), so a burst of calls does not wake the loop once per call."""

Deadline = tuple[Any, float, int]
"""An armed deadline: (task, when it is due on ``time.monotonic()``, ``task.cancelling()``
when it was armed)."""


class Watchdog:
    """The armed deadlines of one event loop, and one timer for the earliest of them.

    A call arms with ``deadlines[key] = (task, due, task.cancelling())``, where ``key`` is the
    tool's coroutine and ``due = monotonic() + seconds``, then ``if due < wake_at: wake(due)``
    (:meth:`Deadlines.arm`); it disarms with :meth:`ended`: that is all a call that finishes in
    time pays. A
    deadline that fires cancels its task and is noted in ``fired``; :meth:`timed_out` and
    :meth:`fired_anyway` read that note after the call.
    """

    __slots__ = ("__weakref__", "deadlines", "fired", "loop", "task", "timer", "wake_at")

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.deadlines: dict[object, Deadline] = {}
        self.fired: dict[object, Deadline] = {}
        self.timer: Any = None
        self.wake_at = math.inf
        """When the timer fires (``monotonic()``); infinity when none is set."""
        self.task: Callable[[Any], Any] = _current_task_getter()
        """``task(loop)``: the running task (``None`` outside one), at C speed."""

    def wake(self, due: float) -> None:
        """Set the timer for ``due`` (earlier than the one set, if any)."""
        if self.timer is not None:
            self.timer.cancel()
        self.wake_at = due
        self.timer = self.loop.call_later(max(due - monotonic(), 0.0), self._check)

    def ended(self, key: object, exc: BaseException | None = None) -> bool:
        """Disarm ``key`` after its call returned, or raised ``exc``; whether it ran past its
        deadline. ``exc`` is raised again unless the deadline caused it (:meth:`timed_out`)."""
        del self.deadlines[key]
        if exc is None:
            return bool(self.fired) and self.fired_anyway(key)
        if self.timed_out(key, exc):
            return True
        raise exc

    def timed_out(self, key: object, exc: BaseException) -> bool:
        """After ``exc`` came out of the call (already disarmed): whether the deadline caused
        it, the call then reporting a timeout (whatever the tool turned the cancellation into).
        If the deadline fired, its cancel request is withdrawn either way; ``exc`` goes on when
        the task holds another cancel request (a caller's, an outer deadline's) or is not an
        error or a cancellation (``SystemExit``, a closed coroutine)."""
        if not self.fired:
            return False
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        pending = noted[0].uncancel() > noted[2]
        import asyncio  # loaded already: a deadline fired on its loop

        return not pending and isinstance(exc, Exception | asyncio.CancelledError)

    def fired_anyway(self, key: object) -> bool:
        """After a normal return (already disarmed): whether the deadline fired and the tool
        swallowed the cancellation; it is withdrawn, and the call ran past its deadline. When
        the task holds another cancel request that the swallowed cancellation also carried
        (a caller's, an outer deadline's), it is raised again: never lost."""
        noted = self.fired.pop(key, None)
        if noted is None:
            return False
        if noted[0].uncancel() > noted[2]:
            import asyncio  # loaded already: a deadline fired on its loop

            raise asyncio.CancelledError
        return True

    def _fire(self, key: object, deadline: Deadline) -> None:
        self.fired[key] = deadline
        deadline[0].cancel()

    def _check(self) -> None:
        self.timer, self.wake_at = None, math.inf
        now = monotonic()
        following = math.inf
        done = False
        try:
            fired = self.fired
            due = []
            for key, deadline in self.deadlines.items():
                if key in fired:
                    continue
                if deadline[1] <= now:
                    due.append((key, deadline))
                elif deadline[1] < following:
                    following = deadline[1]
            for key, deadline in due:
                self._fire(key, deadline)  # notes it fired first: a failing one is not retried
            done = True
        finally:
            # Set again even when something failed: it must not stop every other deadline, and
            # the ones still due get the next round.
            if not done:
                following = now
            if following < math.inf:
                self.wake(max(following, now + GAP))


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


class Deadlines:
    """Where one holder (an executor) finds the running loop's watchdog: it keeps the last one
    it used, as nearly every call runs on the loop the one before it ran on. Held by its owner,
    it lives as long as the owner does; a loop whose owner is gone is not kept alive."""

    __slots__ = ("dog", "get_loop")

    def __init__(self) -> None:
        self.dog: Watchdog | None = None
        self.get_loop: Callable[[], Any] | None = None

    def arm(self, coro: Coroutine[Any, Any, Any], seconds: float) -> Watchdog | None:
        """Arm a deadline for ``coro`` in the running task: the watchdog to tell when it
        ended (:meth:`Watchdog.ended`), or ``None`` when no asyncio task runs (then
        :func:`run_in_scope`)."""
        get = self.get_loop or self._find_loop()
        loop = get() if get is not None else None
        if loop is None:
            return None
        dog = self.dog
        if dog is None or dog.loop is not loop:
            dog = self.dog = watchdog(loop)
        task = dog.task(loop)
        if task is None:
            return None
        due = monotonic() + seconds
        dog.deadlines[coro] = (task, due, task.cancelling())
        if due < dog.wake_at:
            dog.wake(due)
        return dog

    def _find_loop(self) -> Callable[[], Any] | None:
        self.get_loop = loop_getter()
        return self.get_loop


async def run_in_scope(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` inside ``anyio.move_on_after(seconds)``: trio, or no asyncio task."""
    import anyio

    with anyio.move_on_after(seconds) as scope:
        try:
            value = await coro
        except Exception:
            if not scope.cancel_called:
                raise
            value = None
    return (None, True) if scope.cancel_called else (value, False)


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
