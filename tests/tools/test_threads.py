"""Sync tool bodies run in worker threads: concurrently, with context, abandoned on cancel."""

from __future__ import annotations

import contextvars
import threading
import time

import anyio
import pytest

from invokit.tools._threads import run_in_thread

pytestmark = pytest.mark.anyio

REQUEST = contextvars.ContextVar("REQUEST", default="none")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_runs_off_the_loop_with_the_callers_context(anyio_backend: str) -> None:
    """The body runs in another thread and sees the caller's context variables."""
    REQUEST.set("r-1")
    seen = await run_in_thread(lambda: (threading.get_ident(), REQUEST.get()))
    assert seen[0] != threading.get_ident()
    assert seen[1] == "r-1"


async def test_errors_reach_the_caller() -> None:
    """An exception in the body is raised in the caller."""

    def boom() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await run_in_thread(boom)


async def test_many_bodies_run_at_once() -> None:
    """Blocking bodies overlap instead of queueing behind one thread."""
    barrier = threading.Barrier(8, timeout=5)

    def meet() -> int:
        return barrier.wait()

    results: list[int] = []

    async def one() -> None:
        results.append(await run_in_thread(meet))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(one)
    assert sorted(results) == list(range(8))


async def test_cancel_stops_waiting_at_once() -> None:
    """A cancelled caller returns promptly while the thread finishes on its own."""
    done = threading.Event()

    def slow() -> None:
        time.sleep(0.3)
        done.set()

    start = time.perf_counter()
    with anyio.move_on_after(0.05):
        await run_in_thread(slow)
    assert time.perf_counter() - start < 0.25
    assert await anyio.to_thread.run_sync(done.wait, 2)
