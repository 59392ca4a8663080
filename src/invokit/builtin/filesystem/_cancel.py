"""Blocking work in a worker thread that stops cleanly when its task is cancelled.

``anyio.to_thread.run_sync`` either waits for a thread that cannot be interrupted or abandons it.
Neither is enough for a write that must not leave a half-made file behind: here cancellation
raises the stop signal, which the work checks between steps (or which kills its subprocess), and
then waits, shielded, until the work has cleaned up before letting the cancellation through.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

import anyio
import anyio.to_thread

__all__ = ["StopSignal", "run_cancellable"]

T = TypeVar("T")


class StopSignal:
    """A flag the async side raises and blocking work polls, with callbacks for blocked work."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []

    def is_set(self) -> bool:
        """Whether the work should stop."""
        return self._event.is_set()

    def set(self) -> None:
        """Ask the work to stop and run every registered callback once."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the signal is raised (at once if it already was)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()


async def run_cancellable(func: Callable[[StopSignal], T]) -> T:
    """Run ``func(stop)`` in a worker thread; on cancellation, stop it and wait for it to finish.

    ``func`` should check ``stop.is_set()`` between steps, or register ``stop.on_set`` to
    interrupt a blocking call, and clean up before returning.
    """
    stop = StopSignal()
    finished = threading.Event()
    state = threading.Lock()
    started = False

    def target() -> T:
        nonlocal started
        with state:
            if stop.is_set():
                # Cancelled before the thread got here; nobody reads this value.
                return cast(T, None)
            started = True
        try:
            return func(stop)
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(target, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        with state:
            stop.set()
            running = started
        if running:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait)
        raise
