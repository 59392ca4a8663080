"""Executor overhead: a full ``execute`` against the floor and against peers, in one run.

Run: ``.venv/bin/python benchmarks/bench_executor.py`` (``--quick`` for fewer rounds).

* floor — what any tool layer must do: ``TypeAdapter.validate_json`` of the arguments, then the call.
* python minimum — the least a Python executor with invokit's contract does, inlined by hand.
* invokit — ``Executor.execute`` of the same trivial async tool under an allow policy, with the
  JSONL audit sink on (every event type, as ``invokit serve`` runs it) and without sinks; deny
  and invalid, the refused paths.
* peers — the same tool through openai-agents' ``FunctionTool.on_invoke_tool``, the MCP SDK's
  ``ToolManager.call_tool`` and pydantic-ai's ``ToolManager``, when installed (they are not
  dependencies of invokit; ``pip install openai-agents pydantic-ai-slim`` in a separate venv).
* concurrency — 1000 concurrent sleeping calls via ``execute_many`` versus a bare ``gather``.

Every contender runs one batch per round, in turn, so a change in the machine's speed hits all
of them alike; ratios are taken within each round and their median is reported. Times are the
CPU time of the thread that runs the calls (``time.thread_time``): on a machine shared with
other work, wall-clock batches mostly measure who else was scheduled.

"audit durable" is the JSONL sink as the CLI runs it: each call's outcome is returned once its
records are written (group commit, on the event loop for the JSONL file), so serializing and
writing count against the calls. "audit on" is the same sink with ``group_commit=False``: its
records are serialized and written by the sink's writer thread, off the call's path: those batches measure the call's path with
that writer running beside them (it shares the interpreter lock, so whatever it takes while a
batch runs counts against the batch), and the writer's own CPU time per call is reported
apart, measured over the whole run. "audit on, flushed" flushes at the end of each batch, so
serializing and writing every record count against the calls that caused them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from invokit import Executor, Limits, Policy, ToolCall, tool
from invokit.execution import JsonlAuditSink

clock = time.thread_time_ns
ARGS = '{"city": "Madrid", "days": 3, "metric": true}'
INVALID = '{"city": 3, "days": "x", "metric": true}'


async def forecast(city: str, days: int, metric: bool = True) -> str:
    """The trivial tool every contender runs."""
    return city


class ForecastArgs(BaseModel):
    city: str
    days: int
    metric: bool = True


@dataclass
class Contender:
    label: str
    once: Callable[[], Awaitable[Any]]
    sink: JsonlAuditSink | None = None
    """Flushed at the end of each batch when set."""
    flush_timed: bool = True
    """Whether that flush counts in the batch's time (else it is timed apart: ``writer``)."""


def floor_and_minimum() -> list[Contender]:
    from invokit._calls import new_text_result
    from invokit.execution._outcomes import completed

    adapter = TypeAdapter(ForecastArgs)

    async def floor() -> Any:
        args = adapter.validate_json(ARGS)
        return await forecast(args.city, args.days, args.metric)

    # The least any Python executor with invokit's contract does per call, inlined by hand:
    # look the tool up, parse and validate the arguments (the same compiled validator), await
    # the function, build the result and the outcome. No policy, deadline or events.
    validate = tool(forecast).validator.validate
    table = {"forecast": forecast}
    call = ToolCall(id="c1", name="forecast", arguments=ARGS)
    perf_counter = time.perf_counter

    async def minimum() -> Any:
        start = perf_counter()
        value = await table[call.name](**validate(call.arguments))
        return completed(new_text_result(call.id, call.name, value, perf_counter() - start))

    return [
        Contender("floor (validate_json + call)", floor),
        Contender("python minimum (validate + call + result)", minimum),
    ]


def invokit_contenders(audit_dir: Path) -> list[Contender]:
    # Every event type, as the CLI runs it. The writer thread never wakes by itself here: each
    # batch's records are written right after it, timed apart (or within it, "flushed").
    def sink(name: str, group_commit: bool = False) -> JsonlAuditSink:
        return JsonlAuditSink(
            audit_dir / name, flush_interval=3600, max_buffer=1 << 30, group_commit=group_commit
        )

    apart, within = sink("audit.jsonl"), sink("flushed.jsonl")
    # As the CLI runs it: every call's outcome waits for its records' group commit.
    durable = sink("durable.jsonl", group_commit=True)
    call = ToolCall(id="c1", name="forecast", arguments=ARGS)
    invalid = ToolCall(id="c2", name="forecast", arguments=INVALID)

    def executor(policy: Policy, sink: JsonlAuditSink | None) -> Executor:
        return Executor(
            [tool(forecast, read_only=True)],
            policy=policy,
            events=[sink] if sink is not None else [],
        )

    audited, audited_deny = executor(Policy.allow_all(), apart), executor(Policy.deny_all(), apart)
    flushed = executor(Policy.allow_all(), within)
    committed = executor(Policy.allow_all(), durable)
    plain, plain_deny = executor(Policy.allow_all(), None), executor(Policy.deny_all(), None)
    return [
        Contender("invokit execute (allow, audit on)", lambda: audited.execute(call), apart, False),
        Contender("invokit execute (allow, audit flushed)", lambda: flushed.execute(call), within),
        Contender(
            "invokit execute (allow, audit durable)", lambda: committed.execute(call), durable
        ),
        Contender(
            "invokit execute (deny, audit on)", lambda: audited_deny.execute(call), apart, False
        ),
        Contender(
            "invokit execute (invalid, audit on)", lambda: audited.execute(invalid), apart, False
        ),
        Contender("invokit execute (allow, no sinks)", lambda: plain.execute(call)),
        Contender("invokit execute (deny, no sinks)", lambda: plain_deny.execute(call)),
        Contender("invokit execute (invalid, no sinks)", lambda: plain.execute(invalid)),
    ]


async def peer_contenders() -> list[Contender]:
    found: list[Contender] = []
    try:
        from agents import FunctionTool, function_tool  # type: ignore[import-not-found]
        from agents.tool_context import ToolContext as AgentsToolContext  # type: ignore[import-not-found]

        agents_tool: FunctionTool = function_tool(forecast)
        context = AgentsToolContext(
            context=None, tool_name="forecast", tool_call_id="c1", tool_arguments=ARGS
        )
        found.append(
            Contender(
                "openai-agents FunctionTool.on_invoke_tool",
                lambda: agents_tool.on_invoke_tool(context, ARGS),
            )
        )
    except ImportError as exc:
        print(f"{'openai-agents':<44} not installed ({exc.name})")
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.context import Context

        server = MCPServer("bench")
        server.add_tool(forecast)
        manager = server._tool_manager
        mcp_context = Context(mcp_server=server, subscriptions=server._subscriptions)
        arguments = {"city": "Madrid", "days": 3, "metric": True}
        found.append(
            Contender(
                "mcp SDK ToolManager.call_tool",
                lambda: manager.call_tool("forecast", arguments, mcp_context, convert_result=True),
            )
        )
    except (ImportError, AttributeError, TypeError) as exc:
        print(f"{'mcp SDK ToolManager':<44} unavailable ({exc!r})")
    try:
        found.append(await _pydantic_ai())
    except ImportError as exc:
        print(f"{'pydantic-ai':<44} not installed ({exc.name})")
    return found


async def _pydantic_ai() -> Contender:
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
    return Contender("pydantic-ai ToolManager.handle_call", lambda: manager.handle_call(part))


async def run_rounds(
    contenders: list[Contender], rounds: int, batch: int = 200
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """µs per call of every contender, one batch each per round, in turn; and for contenders
    whose flush is timed apart, µs per call of that flush (serializing and writing)."""
    for contender in contenders:  # warm up
        for _ in range(batch * 2):
            await contender.once()
        if contender.sink is not None:
            contender.sink.flush()
    samples: dict[str, list[float]] = {c.label: [] for c in contenders}
    writer: dict[str, list[float]] = {c.label: [] for c in contenders if not c.flush_timed}
    for _ in range(rounds):
        for contender in contenders:
            once, sink = contender.once, contender.sink
            start = clock()
            for _ in range(batch):
                await once()
            if sink is not None and contender.flush_timed:
                sink.flush()
            samples[contender.label].append((clock() - start) / batch / 1000)
            if sink is not None and not contender.flush_timed:
                start = clock()
                sink.flush()
                writer[contender.label].append((clock() - start) / batch / 1000)
    return samples, writer


def ratio(samples: dict[str, list[float]], top: str, bottom: str) -> float:
    """The median over rounds of ``top / bottom``."""
    return statistics.median(a / b for a, b in zip(samples[top], samples[bottom], strict=True))


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

    bare_times, our_times = [], []
    for _ in range(7):
        start = time.perf_counter()
        await bare()
        bare_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        await ours()
        our_times.append(time.perf_counter() - start)
    b, o = min(bare_times) * 1000, min(our_times) * 1000
    print(
        f"{count} concurrent sleeping calls: gather {b:.1f} ms, execute_many {o:.1f} ms ({o / b:.2f}x)"
    )
    return b, o


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    rounds = 15 if parser.parse_args().quick else 50
    print(f"python {sys.version.split()[0]}, {rounds} rounds of one 200-call batch per contender")
    with tempfile.TemporaryDirectory() as tmp:
        ours = invokit_contenders(Path(tmp))
        peers = await peer_contenders()
        samples, writer = await run_rounds(floor_and_minimum() + ours + peers, rounds)
        for contender in ours:
            if contender.sink is not None:
                contender.sink.close()
    floor, audited, plain = (
        "floor (validate_json + call)",
        "invokit execute (allow, audit on)",
        "invokit execute (allow, no sinks)",
    )
    for label, values in samples.items():
        print(
            f"{label:<44} {statistics.median(values):8.2f} µs  {ratio(samples, label, floor):5.2f}x floor"
        )
    print()
    print(
        f"invokit / floor: {ratio(samples, audited, floor):.2f}x with audit, "
        f"{ratio(samples, plain, floor):.2f}x without"
    )
    print(
        f"audit on / no sinks: {ratio(samples, audited, plain):.2f}x (target <= 1.25x); "
        f"flushed in the batch: {ratio(samples, 'invokit execute (allow, audit flushed)', plain):.2f}x"
    )
    durable = "invokit execute (allow, audit durable)"
    print(
        f"audit durable (group commit, as the CLI runs it) / no sinks: "
        f"{ratio(samples, durable, plain):.2f}x (target <= 1.25x)"
    )
    print(
        f"writer (serialize + write, off the call's path): "
        f"{statistics.median(writer[audited]):.2f} µs per allowed call"
    )
    print(
        f"python minimum / floor: {ratio(samples, 'python minimum (validate + call + result)', floor):.2f}x"
    )
    agents = "openai-agents FunctionTool.on_invoke_tool"
    if agents in samples:
        print(
            f"invokit with audit / {agents}: {ratio(samples, audited, agents):.2f}x "
            f"(target <= 1x), without: {ratio(samples, plain, agents):.2f}x, "
            f"durable audit: {ratio(samples, durable, agents):.2f}x"
        )
    if peers:
        fastest = min(peers, key=lambda c: statistics.median(samples[c.label])).label
        print(
            f"fastest peer {fastest}: {ratio(samples, fastest, audited):.2f}x invokit with audit, "
            f"{ratio(samples, fastest, plain):.2f}x without"
        )
    print(
        f"deny / success: {ratio(samples, 'invokit execute (deny, audit on)', audited):.2f}x, "
        f"invalid / success: {ratio(samples, 'invokit execute (invalid, audit on)', audited):.2f}x (audit on); "
        f"{ratio(samples, 'invokit execute (deny, no sinks)', plain):.2f}x, "
        f"{ratio(samples, 'invokit execute (invalid, no sinks)', plain):.2f}x (no sinks)"
    )
    await bench_concurrency()


if __name__ == "__main__":
    asyncio.run(main())
