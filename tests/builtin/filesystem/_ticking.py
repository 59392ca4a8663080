"""Run a coroutine while another task ticks every 5 ms: the largest gap shows a blocked loop.

Gaps are CPU time of the event loop's thread (``time.thread_time``), not wall time: work held
on the loop shows as the CPU it burns there, and a loaded machine, which delays every thread
alike, does not make a gap look longer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

TICK = 0.005


@dataclass(frozen=True, kw_only=True, slots=True)
class Ticked(Generic[T]):
    """What the coroutine returned, and how the ticking task fared meanwhile."""

    value: T
    ticks: int
    largest_gap: float
    """The most CPU time the loop's thread spent between two wake-ups of the ticker."""
    cpu: float
    """CPU time the loop's thread spent while the coroutine ran (its work done on the loop)."""
    duration: float
    """Wall time, for a message only: never asserted on."""


async def while_ticking(work: Callable[[], Awaitable[T]]) -> Ticked[T]:
    """Await ``work()`` with a task beside it that sleeps 5 ms at a time and records the
    most CPU time of the loop's thread between two of its wake-ups."""
    done = anyio.Event()
    ticks = 0
    largest = 0.0

    async def ticker() -> None:
        nonlocal ticks, largest
        last = time.thread_time()
        while not done.is_set():
            await anyio.sleep(TICK)
            now = time.thread_time()
            largest = max(largest, now - last)
            last = now
            ticks += 1

    start, cpu_start = time.perf_counter(), time.thread_time()
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        try:
            value = await work()
        finally:
            done.set()
    return Ticked(
        value=value,
        ticks=ticks,
        largest_gap=largest,
        cpu=time.thread_time() - cpu_start,
        duration=time.perf_counter() - start,
    )
