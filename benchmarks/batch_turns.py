"""How long a batch of instant calls holds the event loop, in real time.

``execute_many`` yields whenever its workers ran past a 5 ms slice (``_batch.SLICE``). The
tests check that property with a clock that moves a fixed amount a call; this measures what a
slice holds on this machine: the most calls finished between two turns of another task, and
the longest gap between those turns (a full garbage collection can make one longer).

    .venv/bin/python benchmarks/batch_turns.py [calls]
"""

from __future__ import annotations

import sys
from itertools import pairwise
from time import perf_counter

import anyio
import anyio.lowlevel

from invokit import ToolCall, tool
from invokit.execution import Executor


@tool(read_only=True)
async def instant(n: int) -> int:
    """Returns at once, never suspending."""
    return n


async def main(count: int) -> None:
    finished = 0
    turns: list[tuple[float, int]] = []
    done = False

    def heard(index: int, outcome: object) -> None:
        nonlocal finished
        finished += 1

    async def ticker() -> None:
        while not done:
            turns.append((perf_counter(), finished))
            await anyio.lowlevel.checkpoint()

    calls = [ToolCall(id=str(i), name="instant", arguments={"n": i}) for i in range(count)]
    executor = Executor([instant])
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        began = perf_counter()
        await executor.execute_many(calls, on_outcome=heard)
        took = perf_counter() - began
        done = True
    calls_between = max(b[1] - a[1] for a, b in pairwise(turns))
    gap = max(b[0] - a[0] for a, b in pairwise(turns))
    print(
        f"{count} instant calls in {took * 1000:.0f} ms; another task had {len(turns)} turns; "
        f"at most {calls_between} calls and {gap * 1000:.1f} ms between two of them"
    )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 16_000)
