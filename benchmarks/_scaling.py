"""The shared harness of ``bench_scaling.py``: cost at input sizes 1x, 4x, 16x, and the longest
event-loop stall seen meanwhile.

A section is an ``async def bench_<name>() -> list[Row]`` in ``bench_scaling.py`` (or a module it
imports); each row comes from :func:`scaled`, given a function that builds, for one scale factor,
the call to time. While the call runs, a task that sleeps 5 ms at a time records the longest gap
between its wake-ups: the stall is that gap less the 5 ms it asked for. A cost that is linear in
the input shows ratios near 4 and 16; the stall should stay under 50 ms whatever the input.
A stall that held a full collection of the cyclic garbage collector (generation 2, whose cost
is the whole process's heap, not the call's) is also shown as the largest stall without one.

Each call runs once unmeasured, then is timed ``rounds`` times per scale, interleaved (1x, 4x, 16x, 1x, ...) so a change in the
machine's speed touches every scale alike; the median is reported, the stall is the largest.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
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
    stall_without_gc: float
    """Longest stall during which no full garbage collection ran (seconds)."""
    notes: list[str] = field(default_factory=list)

    @property
    def ratios(self) -> tuple[float, ...]:
        base = self.seconds[0] or 1e-9
        return tuple(value / base for value in self.seconds)


async def stall_of(call: Call) -> tuple[float, float, float]:
    """Run ``call`` with a 5 ms ticker beside it; returns (seconds, longest stall, longest
    stall that held no full garbage collection)."""
    done = anyio.Event()
    gaps: list[tuple[float, float]] = []
    with _full_collections() as collections:

        async def ticker() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await anyio.sleep(TICK)
                now = time.perf_counter()
                gaps.append((last, now))
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
    stalls = [(end - begin - TICK, begin, end) for begin, end in gaps]
    clean = [s for s, begin, end in stalls if not any(begin <= c < end for c in collections)]
    return elapsed, max([0.0, *(s for s, _, _ in stalls)]), max([0.0, *clean])


@contextmanager
def _full_collections() -> Iterator[list[float]]:
    """The times full (generation 2) garbage collections started while the body ran."""
    started: list[float] = []

    def heard(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            started.append(time.perf_counter())

    gc.callbacks.append(heard)
    try:
        yield started
    finally:
        gc.callbacks.remove(heard)


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
    stall = clean = 0.0
    for _ in range(rounds):
        for index, (_, call) in enumerate(prepared):
            seconds, seen, seen_clean = await stall_of(call)
            times[index].append(seconds)
            stall, clean = max(stall, seen), max(clean, seen_clean)
    return Row(
        name=name,
        unit=unit,
        sizes=tuple(size for size, _ in prepared),
        seconds=tuple(statistics.median(values) for values in times),
        stall=stall,
        stall_without_gc=clean,
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
        print(f"| {row.name} | {sizes} {row.unit} | {seconds} | {ratios} | {_stall(row)} |")


def _stall(row: Row) -> str:
    if row.stall - row.stall_without_gc < 0.001:
        return _ms(row.stall)
    return f"{_ms(row.stall)} ({_ms(row.stall_without_gc)} without a full GC)"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"
