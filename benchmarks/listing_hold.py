"""How long connecting to a server of many tools holds the client's event loop, in CPU time.

The tests check the property (the listing is checked a batch at a time, another task served
between batches); this measures what a batch costs on this machine: a task beside the
connection sleeps 2 ms at a time and records the most CPU time of the loop's thread between
two of its wake-ups. CPU time, not wall time, so other load on the machine does not count; the
collector is paused so a full collection (the cost of the whole heap, not of the listing) is not
counted either.

    .venv/bin/python benchmarks/listing_hold.py [tools] [rounds]
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from invokit.mcp import MCPToolset, PinStore

SERVER = Path(__file__).parent.parent / "tests" / "mcp" / "raw_server.py"


async def one(tools: int, pins: Path) -> float:
    toolset = MCPToolset.stdio(
        sys.executable,
        [str(SERVER)],
        prefix="raw",
        env={**os.environ, "TOOLS": str(tools)},
        pins=PinStore(pins),
        connect_timeout=120,
    )
    steps: list[float] = []

    async def tick() -> None:
        last = time.thread_time()
        while True:
            await anyio.sleep(0.002)
            now = time.thread_time()
            steps.append(now - last)
            last = now

    collecting = gc.isenabled()
    gc.disable()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            async with toolset:
                pass
            group.cancel_scope.cancel()
    finally:
        if collecting:
            gc.enable()
    return max(steps)


async def main() -> None:
    tools = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    held = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            held.append(await one(tools, Path(tmp) / f"pins-{n}.json"))
    print(
        f"connecting to {tools:,} tools: the loop held at most {statistics.median(held) * 1000:.1f} ms"
        f" of CPU time (median of {rounds}; rounds {min(held) * 1000:.1f}-{max(held) * 1000:.1f} ms)"
    )


if __name__ == "__main__":
    anyio.run(main)
