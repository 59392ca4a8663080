"""The shared harness of ``bench_scaling.py``: cost at input sizes 1x, 4x, 16x, and the longest
event-loop stall seen meanwhile.

A section is an ``async def bench_<name>() -> list[Row]`` in ``bench_scaling.py`` (or a module it
imports); each row comes from :func:`scaled`, given a function that builds, for one scale factor,
the call to time. While the call runs, a task that sleeps 5 ms at a time records the longest gap
between its wake-ups: the stall is that gap less the 5 ms it asked for. A cost that is linear in
the input shows ratios near 4 and 16; the stall should stay under 50 ms whatever the input.

Each call runs once unmeasured, then is timed ``rounds`` times per scale, interleaved (1x, 4x, 16x, 1x, ...) so a change in the
machine's speed touches every scale alike; the median is reported, the stall is the largest.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

__all__ = ["SCALES", "TICK", "Row", "print_table", "scaled", "stall_of"]

SCALES = (1, 4, 16)
TICK = 0.005

Call = Callable[[], Awaitable[object]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    """One tool (or case) measured at every scale."""

    name: str
    unit: str
    """What the scale multiplies (``lines``, ``path segments``)."""
    sizes: tuple[int, ...]
    """The input size at each scale, in ``unit``."""
    seconds: tuple[float, ...]
    """Median time of one call at each scale."""
    stall: float
    """Longest event-loop stall seen over every call (seconds)."""
    notes: list[str] = field(default_factory=list)

    @property
    def ratios(self) -> tuple[float, ...]:
        base = self.seconds[0] or 1e-9
        return tuple(value / base for value in self.seconds)


async def stall_of(call: Call) -> tuple[float, float]:
    """Run ``call`` with a 5 ms ticker beside it; returns (seconds, longest stall)."""
    done = anyio.Event()
    largest = 0.0

    async def ticker() -> None:
        nonlocal largest
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(TICK)
            now = time.perf_counter()
            largest = max(largest, now - last - TICK)
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        start = time.perf_counter()
        try:
            await call()
        finally:
            elapsed = time.perf_counter() - start
            done.set()
    return elapsed, max(largest, 0.0)


async def scaled(
    name: str,
    build: Callable[[int], Awaitable[tuple[int, Call]]],
    *,
    unit: str,
    rounds: int = 3,
    scales: tuple[int, ...] = SCALES,
) -> Row:
    """Measure one case: ``build(scale)`` prepares the input and returns (its size, the call)."""
    prepared = [await build(scale) for scale in scales]
    for _, call in prepared:
        await call()  # warm: caches, worker threads, the page cache
    times: list[list[float]] = [[] for _ in scales]
    stall = 0.0
    for _ in range(rounds):
        for index, (_, call) in enumerate(prepared):
            seconds, seen = await stall_of(call)
            times[index].append(seconds)
            stall = max(stall, seen)
    return Row(
        name=name,
        unit=unit,
        sizes=tuple(size for size, _ in prepared),
        seconds=tuple(statistics.median(values) for values in times),
        stall=stall,
    )


def print_table(rows: list[Row]) -> None:
    """The rows as a Markdown table (what ``benchmarks/README.md`` quotes)."""
    print(
        "| case | input at 1x / 4x / 16x | time at 1x / 4x / 16x | ratio 4x, 16x | largest stall |"
    )
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        sizes = " / ".join(f"{size:,}" for size in row.sizes)
        seconds = " / ".join(_ms(value) for value in row.seconds)
        ratios = ", ".join(f"{ratio:.1f}" for ratio in row.ratios[1:])
        print(f"| {row.name} | {sizes} {row.unit} | {seconds} | {ratios} | {_ms(row.stall)} |")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"
