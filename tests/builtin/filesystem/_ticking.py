"""Run a coroutine while another task ticks every 5 ms: the largest gap shows a blocked loop."""

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
    duration: float


async def while_ticking(work: Callable[[], Awaitable[T]]) -> Ticked[T]:
    """Await ``work()`` with a task beside it that sleeps 5 ms at a time and records the
    longest time between two of its wake-ups."""
    done = anyio.Event()
    ticks = 0
    largest = 0.0

    async def ticker() -> None:
        nonlocal ticks, largest
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(TICK)
            now = time.perf_counter()
            largest = max(largest, now - last)
            last = now
            ticks += 1

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        try:
            value = await work()
        finally:
            done.set()
    return Ticked(
        value=value, ticks=ticks, largest_gap=largest, duration=time.perf_counter() - start
    )
