"""What tracing costs a call: ``Executor.execute`` without sinks, and with the OpenTelemetry
sink recording into the SDK (a no-op span processor, and the in-memory exporter), in one run.

Run: ``.venv/bin/python benchmarks/bench_tracing.py`` (``--quick`` for fewer rounds). Needs
``opentelemetry-sdk`` (in the ``dev`` extra).

Each contender runs one batch per round, in turn; ratios to "no sinks" are taken within each
round and their median is reported. Times are the CPU time of the calling thread
(``time.thread_time``): the span is started on the caller's task (its parent is the caller's
current span), the rest of the span is built by the sink's writer thread, flushed at the end
of each batch so that work counts too ("flushed").
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from invokit import Executor, ToolCall, tool
from invokit.execution import OpenTelemetrySink

clock = time.thread_time_ns


@tool(read_only=True)
async def forecast(city: str, days: int, metric: bool = True) -> str:
    """The trivial tool every contender runs."""
    return city


CALL = ToolCall(id="c1", name="forecast", arguments='{"city": "Madrid", "days": 3}')


async def batch(executor: Executor, n: int, after: Callable[[], Any] | None) -> float:
    start = clock()
    for _ in range(n):
        await executor.execute(CALL)
    if after is not None:
        after()
    return (clock() - start) / n / 1000


async def main(rounds: int, n: int) -> None:
    plain = Executor([forecast])
    quiet_provider = TracerProvider()  # spans are made and ended, nothing is exported
    quiet = OpenTelemetrySink(tracer_provider=quiet_provider, flush_interval=60)
    exporter = InMemorySpanExporter()
    exporting_provider = TracerProvider()
    exporting_provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporting = OpenTelemetrySink(tracer_provider=exporting_provider, flush_interval=60)
    contenders: dict[str, tuple[Executor, Callable[[], Any] | None]] = {
        "no sinks": (plain, None),
        "otel sink, caller's path only": (Executor([forecast], events=[quiet]), None),
        "otel sink, flushed": (Executor([forecast], events=[quiet]), quiet.flush),
        "otel sink + in-memory exporter, flushed": (
            Executor([forecast], events=[exporting]),
            lambda: (exporting.flush(), exporter.clear()),
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for executor, after in contenders.values():
        await batch(executor, n // 10, after)  # warm up
    for _ in range(rounds):
        for name, (executor, after) in contenders.items():
            times[name].append(await batch(executor, n, after))
    base = times["no sinks"]
    print(f"{'contender':<42} {'µs/call':>9} {'× no sinks':>11}")
    for name, measured in times.items():
        ratio = statistics.median(m / b for m, b in zip(measured, base, strict=True))
        print(f"{name:<42} {statistics.median(measured):>9.2f} {ratio:>10.2f}×")
    quiet.close()
    exporting.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    asyncio.run(main(rounds=5 if options.quick else 15, n=500 if options.quick else 2000))
