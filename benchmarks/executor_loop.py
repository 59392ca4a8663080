"""One N-call loop of ``Executor.execute``, for comparing two checkouts of invokit.

Run it against each checkout, in alternating processes, or under callgrind (instruction counts
are the same whatever else the machine runs; the per-call figure is the difference between a
run of 2,500 calls and one of 500, divided by 2,000):

    PYTHONPATH=<checkout>/src .venv/bin/python benchmarks/executor_loop.py allow 1000 15
    PYTHONPATH=<checkout>/src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python benchmarks/executor_loop.py allow 2500 1

Arguments: the path (``allow``, ``deny`` or ``invalid``; ``agents`` for openai-agents' bare
``FunctionTool.on_invoke_tool`` of the same tool, when installed), calls per batch, batches,
and ``0`` for a tool that is not read-only. ``AUDIT=1`` adds the JSONL audit sink as ``invokit serve``
runs it (the commit left to the caller; nothing is written during the loop, so the buffer and
the collector's work on it grow through the run: read its instruction counts, not its times,
and ``bench_executor.py`` for a fair timing). Prints the best
batch's CPU time per call, in µs. The process ends with ``os._exit``: no audit record is
serialized at exit, so instruction counts are the call's path only.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from invokit import Executor, Policy, ToolCall, tool

ARGS = '{"city": "Madrid", "days": 3, "metric": true}'
INVALID = '{"city": 3, "days": "x", "metric": true}'


async def forecast(city: str, days: int, metric: bool = True) -> str:
    """The trivial tool of bench_executor.py."""
    return city


def executor(policy: Policy, read_only: bool) -> Executor:
    events: list[Any] = []
    if os.environ.get("AUDIT"):
        from invokit.execution import JsonlAuditSink

        path = os.path.join(tempfile.mkdtemp(), "audit.jsonl")
        events = [JsonlAuditSink(path, flush_interval=3600, max_buffer=1 << 30)]
    options: dict[str, Any] = {"policy": policy, "events": events}
    try:
        return Executor([tool(forecast, read_only=read_only)], commit_on_return=False, **options)
    except TypeError:  # a checkout from before commit_on_return: durable on return
        return Executor([tool(forecast, read_only=read_only)], **options)


def agents_call() -> Callable[[str], Awaitable[Any]]:
    from agents import function_tool  # type: ignore[import-not-found]
    from agents.tool_context import ToolContext  # type: ignore[import-not-found]

    bare = function_tool(forecast)
    context = ToolContext(
        context=None, tool_name="forecast", tool_call_id="c1", tool_arguments=ARGS
    )
    return functools.partial(bare.on_invoke_tool, context)  # no Python frame of its own


async def main() -> None:
    path, calls = sys.argv[1], int(sys.argv[2])
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    read_only = sys.argv[4] != "0" if len(sys.argv) > 4 else True
    run: Callable[[Any], Awaitable[Any]]
    if path == "agents":
        run, given = agents_call(), ARGS
    else:
        ex = executor(Policy.deny_all() if path == "deny" else Policy.allow_all(), read_only)
        run = ex.execute
        given = ToolCall(id="c1", name="forecast", arguments=INVALID if path == "invalid" else ARGS)
    for _ in range(200):  # warm up
        await run(given)
    best = float("inf")
    for _ in range(batches):
        start = time.thread_time_ns()
        for _ in range(calls):
            await run(given)
        best = min(best, (time.thread_time_ns() - start) / calls / 1000)
    print(f"{path} {best:.3f} µs")


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)
