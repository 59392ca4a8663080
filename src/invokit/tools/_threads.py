"""Where sync tool bodies run: worker threads, never the event loop.

On asyncio a small pool of daemon threads answers through ``call_soon_threadsafe``: about
twice as fast as a general-purpose thread hop, and a runaway body that was abandoned on timeout
never keeps the process from exiting. Other backends use ``anyio.to_thread``.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

from invokit._loops import running_asyncio

if TYPE_CHECKING:
    import asyncio

_MAX_THREADS = 40
_Job = tuple["asyncio.AbstractEventLoop", "asyncio.Future[Any]", Callable[[], Any]]


class _DaemonPool:
    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            # _idle counts idle threads minus queued jobs: at or below zero, nobody is free.
            start = self._idle <= 0 and self._threads < self._size
            if start:
                self._threads += 1
            else:
                self._idle -= 1
        self._jobs.put((loop, future, fn))
        if start:
            threading.Thread(target=self._work, name="invokit-tool", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            loop, future, fn = self._jobs.get()
            try:
                result = fn()
            except BaseException as exc:
                _deliver(loop, future, None, exc)
            else:
                _deliver(loop, future, result, None)
            with self._lock:
                self._idle += 1


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    def settle() -> None:
        if future.cancelled():
            return  # the caller gave up (timeout or cancel); the answer is dropped
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop closed while the body ran
        loop.call_soon_threadsafe(settle)


_POOL = _DaemonPool(_MAX_THREADS)


async def run_in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a worker thread with the caller's context variables; on cancellation the
    caller stops waiting at once (Python cannot stop the thread; tools check ``ctx.cancelled``)."""
    running = running_asyncio()
    if running is None:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    context = contextvars.copy_context()
    return await _POOL.submit(running[1], lambda: context.run(fn))
