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

The audit sink is the JSONL log with every event type, as ``invokit serve`` runs it. Its
contenders:

* "audit, commit deferred" is the call's path as the CLI serves it: the executor is built with
  ``commit_on_return=False`` and returns without waiting for the write; the server awaits
  ``executor.commit()`` before it answers. The batch counts recording the five events (a tuple
  appended to the sink's buffer each); the records are serialized and written right after the
  batch, timed apart ("writer"), which in use happens on the writer thread or in the server's
  commit, once for every call that ended together.
* "execute + commit" awaits ``executor.commit()`` after every call: a sequential caller that
  tells someone of each result before the next call, so each call pays for serializing and
  writing its own records (one write per call), durable when it returns. An executor built with
  the default ``commit_on_return=True`` costs the same.
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
FLOOR = "floor (validate_json + call)"
AUDITED = "invokit execute (allow, audit, commit deferred)"
DURABLE = "invokit execute + commit (allow, audit)"
PLAIN = "invokit execute (allow, no sinks)"
AGENTS = "openai-agents FunctionTool.on_invoke_tool"
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
        Contender(FLOOR, floor),
        Contender("python minimum (validate + call + result)", minimum),
    ]


def invokit_contenders(audit_dir: Path) -> list[Contender]:
    # Every event type, as the CLI runs it. The writer thread never wakes by itself here: each
    # batch's records are written right after it, timed apart (or by each call's commit).
    def sink(name: str) -> JsonlAuditSink:
        return JsonlAuditSink(audit_dir / name, flush_interval=3600, max_buffer=1 << 30)

    deferred, durable = sink("audit.jsonl"), sink("durable.jsonl")
    call = ToolCall(id="c1", name="forecast", arguments=ARGS)
    invalid = ToolCall(id="c2", name="forecast", arguments=INVALID)

    def executor(policy: Policy, sink: JsonlAuditSink | None) -> Executor:
        return Executor(
            [tool(forecast, read_only=True)],
            policy=policy,
            events=[sink] if sink is not None else [],
            commit_on_return=False,  # as invokit serve builds it
        )

    audited, audited_deny = (
        executor(Policy.allow_all(), deferred),
        executor(Policy.deny_all(), deferred),
    )
    committing = executor(Policy.allow_all(), durable)
    plain, plain_deny = executor(Policy.allow_all(), None), executor(Policy.deny_all(), None)

    async def execute_and_commit() -> None:
        await committing.execute(call)
        await committing.commit()

    return [
        Contender(AUDITED, lambda: audited.execute(call), deferred, False),
        Contender(DURABLE, execute_and_commit),
        Contender(
            "invokit execute (deny, audit)", lambda: audited_deny.execute(call), deferred, False
        ),
        Contender(
            "invokit execute (invalid, audit)", lambda: audited.execute(invalid), deferred, False
        ),
        Contender(PLAIN, lambda: plain.execute(call)),
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
                AGENTS,
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
    for label, values in samples.items():
        print(
            f"{label:<48} {statistics.median(values):8.2f} µs  {ratio(samples, label, FLOOR):5.2f}x floor"
        )
    print()
    print(
        f"invokit / floor: {ratio(samples, AUDITED, FLOOR):.2f}x with the audit (commit deferred), "
        f"{ratio(samples, PLAIN, FLOOR):.2f}x without sinks"
    )
    print(f"audit, commit deferred / no sinks: {ratio(samples, AUDITED, PLAIN):.2f}x")
    print(
        f"execute + commit per call / no sinks: {ratio(samples, DURABLE, PLAIN):.2f}x "
        "(each call serializes and writes its own records)"
    )
    print(
        f"writer (serialize + write, after the batch): "
        f"{statistics.median(writer[AUDITED]):.2f} µs per allowed call"
    )
    print(
        f"python minimum / floor: {ratio(samples, 'python minimum (validate + call + result)', FLOOR):.2f}x"
    )
    if AGENTS in samples:
        print(
            f"invokit with the audit, commit deferred / {AGENTS}: "
            f"{ratio(samples, AUDITED, AGENTS):.2f}x (target <= 1x); no sinks: "
            f"{ratio(samples, PLAIN, AGENTS):.2f}x; execute + commit: "
            f"{ratio(samples, DURABLE, AGENTS):.2f}x"
        )
    if peers:
        fastest = min(peers, key=lambda c: statistics.median(samples[c.label])).label
        print(
            f"fastest peer {fastest}: {ratio(samples, fastest, AUDITED):.2f}x invokit with the "
            f"audit, {ratio(samples, fastest, PLAIN):.2f}x without"
        )
    print(
        f"deny / success: {ratio(samples, 'invokit execute (deny, audit)', AUDITED):.2f}x, "
        f"invalid / success: {ratio(samples, 'invokit execute (invalid, audit)', AUDITED):.2f}x (audit); "
        f"{ratio(samples, 'invokit execute (deny, no sinks)', PLAIN):.2f}x, "
        f"{ratio(samples, 'invokit execute (invalid, no sinks)', PLAIN):.2f}x (no sinks)"
    )
    await bench_concurrency()


if __name__ == "__main__":
    asyncio.run(main())
