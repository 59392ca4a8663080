"""``execute_many``: parallel where safe, alone where not, one outcome per call, in order; and
``stream``, one call's progress then its outcome.

The calls are taken in order, in stretches: a run of shared calls runs concurrently (at most
``max_concurrency`` at once); an exclusive call runs alone, after every call before it
finished and before any call after it starts. A fixed pool of workers takes the calls, so a
batch of any size costs a pool, not a task per call; and a worker that ran past the time
slice yields to the event loop, so other tasks keep ticking through a batch of instant calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from time import perf_counter
from typing import TYPE_CHECKING

from invokit._calls import ToolCall
from invokit._loops import running_asyncio

if TYPE_CHECKING:
    from invokit.execution._doors import Batching
    from invokit.execution._outcomes import Outcome
    from invokit.tools import Progress

SLICE = 0.005
"""Seconds a batch may hold the event loop before its workers yield."""


def stretches(kinds: Sequence[str]) -> list[range]:
    """Call indexes grouped into what may run together: each exclusive call alone, each run
    of shared calls between them together."""
    out: list[range] = []
    start = 0
    for index, kind in enumerate(kinds):
        if kind == "exclusive":
            if start < index:
                out.append(range(start, index))
            out.append(range(index, index + 1))
            start = index + 1
    if start < len(kinds):
        out.append(range(start, len(kinds)))
    return out


async def run_batch(
    executor: Batching,
    calls: Sequence[ToolCall],
    max_concurrency: int,
    on_outcome: Callable[[int, Outcome], None] | None = None,
) -> list[Outcome]:
    """Run ``calls`` stretch by stretch (see the module); results keep call order.
    ``on_outcome(index, outcome)`` hears of each call as it finishes, so a caller cancelled
    mid-batch knows which calls did."""
    outcomes: list[Outcome | None] = [None] * len(calls)
    running = running_asyncio()
    asyncio = running[0] if running is not None else None
    if asyncio is not None:
        checkpoint = asyncio.sleep
    else:
        import anyio

        checkpoint = anyio.sleep
    # When the batch last gave the loop a turn. A worker that finds it too long ago yields;
    # only the first worker back in the next turn restarts the clock, so the others in the
    # same turn see the slice used up and yield after one call each.
    held = [perf_counter()]

    async def pause() -> None:
        stamp = held[0]
        await checkpoint(0)
        if held[0] == stamp:
            held[0] = perf_counter()

    async def work(indexes: Iterator[int]) -> None:
        for index in indexes:
            outcome = await executor.execute(calls[index])
            outcomes[index] = outcome
            if on_outcome is not None:
                on_outcome(index, outcome)
            if perf_counter() - held[0] > SLICE:
                await pause()

    kinds: list[str] = []
    for call in calls:
        # A malformed name is shared: it fails at once, without running anything.
        kinds.append(executor.concurrency_of(call) if type(call.name) is str else "shared")
        if perf_counter() - held[0] > SLICE:
            await pause()
    for stretch in stretches(kinds):
        workers = min(len(stretch), max(1, max_concurrency))
        shared = iter(stretch)  # one iterator: each index goes to exactly one worker
        if workers == 1:
            await work(shared)
        elif asyncio is not None:
            # asyncio's own task group: the same structured cancellation, cheaper per task.
            async with asyncio.TaskGroup() as native_group:
                for _ in range(workers):
                    native_group.create_task(work(shared))
        else:
            import anyio

            async with anyio.create_task_group() as group:
                for _ in range(workers):
                    group.start_soon(work, shared)
    done: list[Outcome] = []
    for outcome in outcomes:
        assert outcome is not None  # every call stored its outcome or raised out of the group
        done.append(outcome)
    return done


async def stream(ex: Batching, call: ToolCall) -> AsyncIterator[Progress | Outcome]:
    """:meth:`Executor.stream`: progress events as the call runs, then its outcome (always
    the last item)."""
    import anyio

    from invokit.execution._outcomes import Outcome
    from invokit.tools import Progress

    send, receive = anyio.create_memory_object_stream[Progress | Outcome](max_buffer_size=1024)

    async def forward(progress: Progress) -> None:
        await send.send(progress)

    async def run() -> None:
        async with send:
            await send.send(await ex.execute(call, on_progress=forward))

    async with anyio.create_task_group() as group, receive:
        group.start_soon(run)
        async for item in receive:
            yield item
