"""``execute_many``: parallel where safe, in order where not, one outcome per call."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._loops import running_asyncio

if TYPE_CHECKING:
    from invokit.execution._executor import Executor
    from invokit.execution._outcomes import Outcome


async def run_batch(
    executor: Executor,
    calls: Sequence[ToolCall],
    max_concurrency: int,
    on_outcome: Callable[[int, Outcome], None] | None = None,
) -> list[Outcome]:
    """Shared calls run concurrently (at most ``max_concurrency`` at once); exclusive calls run
    one at a time in call order, beside them. Results keep call order. ``on_outcome(index,
    outcome)`` hears of each call as it finishes, so a caller cancelled mid-batch knows which
    calls did."""
    outcomes: list[Outcome | None] = [None] * len(calls)
    exclusive = [i for i, call in enumerate(calls) if executor.concurrency_of(call) == "exclusive"]
    exclusive_set = set(exclusive)
    shared = [i for i in range(len(calls)) if i not in exclusive_set]
    # A limit only matters when more calls than it could run at once.
    bounded = len(shared) + (1 if exclusive else 0) > max(1, max_concurrency)
    running = running_asyncio()
    asyncio = running[0] if running is not None else None
    limiter: Any = None
    if bounded:
        if asyncio is not None:
            limiter = asyncio.Semaphore(max(1, max_concurrency))
        else:
            import anyio  # trio: anyio's primitives

            limiter = anyio.CapacityLimiter(max(1, max_concurrency))

    async def run_one(index: int) -> None:
        if limiter is None:
            outcome = await executor.execute(calls[index])
        else:
            async with limiter:
                outcome = await executor.execute(calls[index])
        outcomes[index] = outcome
        if on_outcome is not None:
            on_outcome(index, outcome)

    async def run_in_order() -> None:
        for index in exclusive:
            await run_one(index)

    jobs: list[Callable[[], Coroutine[Any, Any, None]]] = [
        functools.partial(run_one, i) for i in shared
    ]
    if exclusive:
        jobs.append(run_in_order)
    if asyncio is not None:
        # asyncio's own task group: the same structured cancellation, at a fraction of the
        # cost per task (1000 parallel calls spawn 1000 tasks).
        async with asyncio.TaskGroup() as native_group:
            for job in jobs:
                native_group.create_task(job())
    else:
        import anyio

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(job)
    done: list[Outcome] = []
    for outcome in outcomes:
        assert (
            outcome is not None
        )  # every task either stored its outcome or raised out of the group
        done.append(outcome)
    return done
