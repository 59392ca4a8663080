"""Sync tool bodies run in worker threads: concurrently, with context, abandoned on cancel."""

from __future__ import annotations

import contextvars
import threading

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
    """A cancelled caller returns while the thread still runs (it is released only after
    the caller is back), and the thread finishes on its own."""
    release, done = threading.Event(), threading.Event()

    def slow() -> None:
        release.wait(60)
        done.set()

    with anyio.fail_after(60):  # a bound on a hang, not a speed
        with anyio.move_on_after(0.05):
            await run_in_thread(slow)
    assert not done.is_set()  # the caller did not wait for the thread
    release.set()
    assert await anyio.to_thread.run_sync(done.wait, 60)
