"""Running a tool's coroutine under a timeout, without paying for a timer when it need not wait."""

from __future__ import annotations

import math
import weakref
from collections.abc import Coroutine, Generator
from typing import Any

from invokit._loops import running_asyncio


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

    On asyncio the first step runs eagerly: a tool that finishes without waiting (most trivial
    tools do) needs no timer at all. A tool that waits gets a deadline that cancels the task the
    way ``asyncio.timeout`` does. That cancellation is native, so it composes with any cancel
    scopes the tool itself opened in its first step (a scope entered afterwards would not nest).
    On other backends (trio) the whole call runs inside ``anyio.move_on_after``.
    """
    running = running_asyncio()
    if running is None:
        import anyio

        with anyio.move_on_after(seconds) as scope:
            value = await coro
        return (None, True) if scope.cancelled_caught else (value, False)
    asyncio, loop = running
    try:
        first = coro.send(None)
    except StopIteration as stop:
        return stop.value, False
    except BaseException:
        coro.close()
        raise
    task = asyncio.current_task()
    assert task is not None
    cancelling = task.cancelling()
    deadline = _Deadline(task)
    _arm(loop, deadline, loop.time() + seconds, precise=seconds < _COARSE_FROM)
    try:
        value = await _Resume(coro, first)
    except asyncio.CancelledError:
        if deadline.fired and task.uncancel() <= cancelling:
            return None, True
        raise
    finally:
        _disarm(loop, deadline)
    if deadline.fired:
        # The tool swallowed the cancellation and returned anyway: undo our cancel request, and
        # report what happened (it ran past its deadline).
        task.uncancel()
        return None, True
    return value, False


# -- deadlines ------------------------------------------------------------------------------
# A thousand calls waiting at once would put a thousand timers in the event loop's heap.
# Long deadlines (a second or more, the usual case) share one timer per slot of _SLOT seconds
# and fire at most _SLOT late; short ones keep a timer of their own.

_SLOT = 0.05
_COARSE_FROM = 1.0


class _Deadline:
    __slots__ = ("fired", "handle", "slot", "task")

    def __init__(self, task: Any) -> None:
        self.task = task
        self.fired = False
        self.handle: Any = None
        self.slot: int | None = None

    def fire(self) -> None:
        self.fired = True
        self.task.cancel()


_slots: weakref.WeakKeyDictionary[Any, dict[int, tuple[Any, set[_Deadline]]]] = (
    weakref.WeakKeyDictionary()
)


def _arm(loop: Any, deadline: _Deadline, when: float, *, precise: bool) -> None:
    if precise:
        deadline.handle = loop.call_at(when, deadline.fire)
        return
    slots = _slots.get(loop)
    if slots is None:
        slots = _slots[loop] = {}
    slot = math.ceil(when / _SLOT)
    entry = slots.get(slot)
    if entry is None:
        entry = slots[slot] = (loop.call_at(slot * _SLOT, _fire_slot, slots, slot), set())
    entry[1].add(deadline)
    deadline.slot = slot


def _fire_slot(slots: dict[int, tuple[Any, set[_Deadline]]], slot: int) -> None:
    entry = slots.pop(slot, None)
    if entry is not None:
        for deadline in list(entry[1]):
            deadline.fire()


def _disarm(loop: Any, deadline: _Deadline) -> None:
    if deadline.handle is not None:
        deadline.handle.cancel()
        return
    slots = _slots.get(loop)
    slot = deadline.slot
    if slots is None or slot is None:
        return
    entry = slots.get(slot)
    if entry is None:
        return  # the slot fired already
    entry[1].discard(deadline)
    if not entry[1]:
        entry[0].cancel()
        del slots[slot]
