"""Tools the end-to-end tests import through ``[tools.python]``: progress and a slow call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from invokit import ToolContext, ToolRegistry, tool


@tool(name="demo.count", read_only=True)
async def count(to: int, ctx: ToolContext | None = None) -> dict[str, int]:
    """Count to a number, reporting progress at each step.

    Args:
        to: the number to count to.
    """
    for i in range(1, to + 1):
        if ctx is not None:
            await ctx.report_progress(i, total=to, message=f"step {i}")
        await anyio.sleep(0.05)
    return {"counted": to}


@tool(name="demo.stream", read_only=True)
async def stream(steps: int) -> AsyncIterator[str]:
    """Yield progress messages, then the result (a streaming tool).

    Args:
        steps: how many progress steps.
    """
    for i in range(steps):
        yield f"working {i + 1}/{steps}"
        await anyio.sleep(0.05)
    yield f"streamed {steps}"


@tool(name="demo.sleep", read_only=True)
async def sleep(seconds: float) -> str:
    """Sleep, so a client can cancel the call.

    Args:
        seconds: how long.
    """
    await anyio.sleep(seconds)
    return "slept"


@tool(name="demo.heap", read_only=True)
async def heap() -> dict[str, int]:
    """How many objects the server took out of the garbage collector's reach at startup."""
    import gc

    return {"frozen": gc.get_freeze_count()}


registry = ToolRegistry([count, stream, sleep, heap])
