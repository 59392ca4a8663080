"""Executor overhead: a full ``execute`` against the floor and against peers, in one run.

Run: ``.venv/bin/python benchmarks/bench_executor.py`` (``--quick`` for fewer rounds).

* floor — what any tool layer must do: ``TypeAdapter.validate_json`` of the arguments, then the call.
* invokit — ``Executor.execute`` of the same trivial async tool under an allow policy with the
  JSONL audit sink on (parse + validation + preflight + policy + invoke + normalize + audit).
* deny / invalid — the refused paths, which must be no slower than a success.
* peers — the same tool through openai-agents' ``FunctionTool.on_invoke_tool``, the MCP SDK's
  ``ToolManager.call_tool`` and pydantic-ai's ``ToolManager``, when installed (they are not
  dependencies of invokit; ``pip install openai-agents pydantic-ai-slim`` in a separate venv).
* concurrency — 1000 concurrent sleeping calls via ``execute_many`` versus a bare ``gather``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from invokit import Executor, Limits, Policy, ToolCall, tool
from invokit.execution import JsonlAuditSink

ARGS = '{"city": "Madrid", "days": 3, "metric": true}'
AUDIT_TYPES = ("approval_requested", "approval_resolved", "completed", "failed", "interrupted")


async def forecast(city: str, days: int, metric: bool = True) -> str:
    """The trivial tool every contender runs."""
    return city


class ForecastArgs(BaseModel):
    city: str
    days: int
    metric: bool = True


async def measure(
    label: str,
    once: Callable[[], Awaitable[Any]],
    rounds: int,
    batch: int = 200,
    sink: JsonlAuditSink | None = None,
) -> float:
    """Median µs per call over ``rounds`` batches of ``batch`` calls. With a ``sink``, each
    batch ends by writing out what it logged, so the audit log's whole cost (serializing and
    writing, which its thread would otherwise do later) is counted against the calls that
    caused it."""
    for _ in range(batch * 5):
        await once()
    if sink is not None:
        sink.flush()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(batch):
            await once()
        if sink is not None:
            sink.flush()
        samples.append((time.perf_counter_ns() - start) / batch / 1000)
    median = statistics.median(samples)
    print(f"{label:<44} {median:8.2f} µs")
    return median


async def bench_floor(rounds: int) -> float:
    adapter = TypeAdapter(ForecastArgs)

    async def once() -> Any:
        args = adapter.validate_json(ARGS)
        return await forecast(args.city, args.days, args.metric)

    return await measure("floor (validate_json + call)", once, rounds)


async def bench_minimum(rounds: int) -> float:
    """The least any Python executor with invokit's contract does per call, inlined by hand:
    look the tool up, parse and validate the arguments (the same compiled validator), await
    the function, build the result and the outcome. No policy, no deadline, no events: it
    shows how much of the floor ratio is simply Python, not the pipeline's steps."""
    from invokit._calls import new_text_result
    from invokit.execution._outcomes import completed

    validate = tool(forecast).validator.validate
    table = {"forecast": forecast}
    call = ToolCall(id="c1", name="forecast", arguments=ARGS)
    perf_counter = time.perf_counter

    async def once() -> Any:
        start = perf_counter()
        fn = table[call.name]
        value = await fn(**validate(call.arguments))
        return completed(new_text_result(call.id, call.name, value, perf_counter() - start))

    return await measure("python minimum (validate + call + result)", once, rounds)


async def bench_invokit(rounds: int, audit_dir: Path) -> dict[str, float]:
    sink = JsonlAuditSink(audit_dir / "audit.jsonl", types=AUDIT_TYPES)
    executor = Executor([tool(forecast, read_only=True)], policy=Policy.allow_all(), events=[sink])
    call = ToolCall(id="c1", name="forecast", arguments=ARGS)
    denied_executor = Executor(
        [tool(forecast, read_only=True)], policy=Policy.deny_all(), events=[sink]
    )
    invalid = ToolCall(
        id="c2", name="forecast", arguments='{"city": 3, "days": "x", "metric": true}'
    )
    plain = Executor([tool(forecast, read_only=True)], policy=Policy.allow_all())
    plain_denied = Executor([tool(forecast, read_only=True)], policy=Policy.deny_all())
    results = {
        "invokit": await measure(
            "invokit execute (allow, audit on)", lambda: executor.execute(call), rounds, sink=sink
        ),
        "deny": await measure(
            "invokit execute (deny, audit on)",
            lambda: denied_executor.execute(call),
            rounds,
            sink=sink,
        ),
        "invalid": await measure(
            "invokit execute (invalid, audit on)",
            lambda: executor.execute(invalid),
            rounds,
            sink=sink,
        ),
        "plain": await measure(
            "invokit execute (allow, no sinks)", lambda: plain.execute(call), rounds
        ),
        "plain_deny": await measure(
            "invokit execute (deny, no sinks)", lambda: plain_denied.execute(call), rounds
        ),
        "plain_invalid": await measure(
            "invokit execute (invalid, no sinks)", lambda: plain.execute(invalid), rounds
        ),
    }
    sink.close()
    return results


async def bench_peers(rounds: int) -> dict[str, float]:
    found: dict[str, float] = {}
    try:
        from agents import FunctionTool, function_tool  # type: ignore[import-not-found]
        from agents.tool_context import ToolContext as AgentsToolContext  # type: ignore[import-not-found]

        agents_tool: FunctionTool = function_tool(forecast)
        context = AgentsToolContext(
            context=None, tool_name="forecast", tool_call_id="c1", tool_arguments=ARGS
        )
        found["openai-agents"] = await measure(
            "openai-agents FunctionTool.on_invoke_tool",
            lambda: agents_tool.on_invoke_tool(context, ARGS),
            rounds,
        )
    except ImportError as exc:
        print(f"{'openai-agents':<44} not installed ({exc.name})")
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.context import Context

        server = MCPServer("bench")
        server.add_tool(forecast)
        manager = server._tool_manager
        context = Context(mcp_server=server, subscriptions=server._subscriptions)
        arguments = {"city": "Madrid", "days": 3, "metric": True}
        found["mcp"] = await measure(
            "mcp SDK ToolManager.call_tool",
            lambda: manager.call_tool("forecast", arguments, context, convert_result=True),
            rounds,
        )
    except (ImportError, AttributeError, TypeError) as exc:
        print(f"{'mcp SDK ToolManager':<44} unavailable ({exc!r})")
    try:
        found.update(await _pydantic_ai(rounds))
    except ImportError as exc:
        print(f"{'pydantic-ai':<44} not installed ({exc.name})")
    return found


async def _pydantic_ai(rounds: int) -> dict[str, float]:
    from pydantic_ai import RunContext  # type: ignore[import-not-found]
    from pydantic_ai.messages import ToolCallPart  # type: ignore[import-not-found]
    from pydantic_ai.models.test import TestModel  # type: ignore[import-not-found]
    from pydantic_ai.tool_manager import ToolManager  # type: ignore[import-not-found]
    from pydantic_ai.toolsets import FunctionToolset  # type: ignore[import-not-found]
    from pydantic_ai.usage import RunUsage  # type: ignore[import-not-found]

    toolset = FunctionToolset([forecast])
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager = await ToolManager(toolset).for_run_step(ctx)
    part = ToolCallPart(tool_name="forecast", args=ARGS, tool_call_id="c1")
    return {
        "pydantic-ai": await measure(
            "pydantic-ai ToolManager.handle_call", lambda: manager.handle_call(part), rounds
        )
    }


async def bench_concurrency(count: int = 1000) -> tuple[float, float]:
    async def nap(n: int) -> int:
        await asyncio.sleep(0.01)
        return n

    executor = Executor(
        [tool(nap, read_only=True)], limits=Limits(max_concurrency=count), policy=Policy.allow_all()
    )
    calls = [ToolCall(id=str(i), name="nap", arguments={"n": i}) for i in range(count)]

    async def bare() -> None:
        await asyncio.gather(*(nap(i) for i in range(count)))

    async def ours() -> None:
        await executor.execute_many(calls)

    def best(samples: list[float]) -> float:
        return min(samples)

    bare_times, our_times = [], []
    for _ in range(7):
        start = time.perf_counter()
        await bare()
        bare_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        await ours()
        our_times.append(time.perf_counter() - start)
    b, o = best(bare_times) * 1000, best(our_times) * 1000
    print(
        f"{count} concurrent sleeping calls: gather {b:.1f} ms, execute_many {o:.1f} ms ({o / b:.2f}x)"
    )
    return b, o


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 20 if parser.parse_args().quick else 60
    print(f"python {sys.version.split()[0]}, median of {rounds} batches of 200 calls")
    with tempfile.TemporaryDirectory() as tmp:
        floor = await bench_floor(rounds)
        minimum = await bench_minimum(rounds)
        ours = await bench_invokit(rounds, Path(tmp))
    peers = await bench_peers(rounds)
    print()
    print(
        f"invokit / floor: {ours['invokit'] / floor:.2f}x with audit, {ours['plain'] / floor:.2f}x without   (target <= 2x)"
    )
    print(f"python minimum / floor: {minimum / floor:.2f}x")
    if peers:
        fastest_name, fastest = min(peers.items(), key=lambda kv: kv[1])
        print(
            f"fastest peer {fastest_name}: {fastest:.2f} µs, {fastest / ours['invokit']:.1f}x slower than invokit (target >= 4x)"
        )
    print(
        f"deny / success: {ours['deny'] / ours['invokit']:.2f}x, invalid / success: {ours['invalid'] / ours['invokit']:.2f}x"
    )
    await bench_concurrency()


if __name__ == "__main__":
    asyncio.run(main())
