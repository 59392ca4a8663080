"""A small invokit registry served over MCP, run as a real subprocess by the tests.

Usage: ``python tests/mcp/app.py stdio|http APPROVALS_DB [PORT]``. For http, the URL is printed to
stderr as ``READY <url>`` once the server listens. ``MARKER_DIR`` (environment) is where the
``sleepy`` tool records that it was cancelled.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from invokit import (
    Executor,
    OutputLimit,
    Policy,
    TextPart,
    ToolContext,
    ToolRegistry,
    ToolResult,
    tool,
)
from invokit.approvals import SqliteApprovalStore
from invokit.exceptions import ToolFailed
from invokit.execution import Limits
from invokit.mcp import serve
from invokit.tools import Progress


@dataclass(frozen=True, kw_only=True, slots=True)
class Weather:
    city: str
    celsius: float


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(name="weather.get", read_only=True, tags=("demo",), category="info")
def weather(city: str) -> Weather:
    """Get the weather of a city."""
    return Weather(city=city, celsius=21.5)


@tool(read_only=True)
async def countdown(n: int) -> AsyncIterator[Progress | str]:
    """Count down, reporting progress, and say when done."""
    for i in range(n):
        yield Progress(progress=i + 1, total=n, message=f"step {i + 1}")
        await anyio.lowlevel.checkpoint()
    yield "lift-off"


@tool(read_only=True)
async def work(steps: int, ctx: ToolContext) -> str:
    """Report progress through the context."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"working {i + 1}")
    return f"did {steps} steps"


@tool(read_only=True, timeout=60)
async def sleepy(seconds: float) -> str:
    """Sleep, recording a cancellation in MARKER_DIR."""
    marker = Path(os.environ["MARKER_DIR"]) / "sleepy"
    marker.write_text("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        marker.write_text("cancelled")
        raise
    marker.write_text("finished")
    return "rested"


@tool(read_only=False, destructive=False)
def note(text: str) -> str:
    """Write a note (asks for approval)."""
    notes = Path(os.environ["MARKER_DIR"]) / "notes.txt"
    with notes.open("a") as handle:
        handle.write(text + "\n")
    return f"noted: {text}"


@tool(read_only=False, destructive=True)
def wipe() -> str:
    """Delete everything (denied by policy)."""
    raise AssertionError("a denied tool must never run")


@tool(read_only=True)
def broken() -> str:
    """Fail on purpose."""
    raise ToolFailed("the disk is on fire", kind="execution_failed", data={"disk": 1})


@tool(read_only=True)
def bulky(rows: int) -> Any:
    """A short text with a large structured value (output limits apply to both)."""
    return ToolResult(
        call_id="",
        name="bulky",
        content=(TextPart(text=f"{rows} rows"),),
        structured={"rows": [f"row {i:05d}" for i in range(rows)]},
    )


def build(approvals: str) -> tuple[ToolRegistry, Executor]:
    """The app's registry and executor. ``SPILL_CHARS`` (environment) spills outputs over
    that many characters; ``PAGE_SIZE`` is read by :func:`main`."""
    registry = ToolRegistry([add, weather, countdown, work, sleepy, note, wipe, broken])
    limits = Limits()
    spill = os.environ.get("SPILL_CHARS")
    if spill:
        registry.add(bulky)
        limits = Limits(output=OutputLimit(max_chars=int(spill), mode="spill"))
    executor = Executor(
        registry,
        policy=Policy(deny=["wipe"]),
        approvals=SqliteApprovalStore(approvals),
        limits=limits,
    )
    return registry, executor


async def main(transport: str, approvals: str, port: int) -> None:
    registry, executor = build(approvals)

    def ready(url: str) -> None:
        print(f"READY {url}", file=sys.stderr, flush=True)

    await serve(
        registry,
        executor,
        transport="http" if transport == "http" else "stdio",
        port=port,
        ready=ready,
        page_size=int(os.environ.get("PAGE_SIZE", "100")),
    )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
