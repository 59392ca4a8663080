"""``execute_many``: parallel where safe, in order where not, one outcome per call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio

from invokit._calls import ToolCall

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
    limiter = anyio.CapacityLimiter(max(1, max_concurrency))
    exclusive = [i for i, call in enumerate(calls) if executor.concurrency_of(call) == "exclusive"]
    exclusive_set = set(exclusive)

    async def run_one(index: int) -> None:
        async with limiter:
            outcome = outcomes[index] = await executor.execute(calls[index])
            if on_outcome is not None:
                on_outcome(index, outcome)

    async def run_in_order() -> None:
        for index in exclusive:
            await run_one(index)

    async with anyio.create_task_group() as group:
        if exclusive:
            group.start_soon(run_in_order)
        for index in range(len(calls)):
            if index not in exclusive_set:
                group.start_soon(run_one, index)
    done: list[Outcome] = []
    for outcome in outcomes:
        assert (
            outcome is not None
        )  # every task either stored its outcome or raised out of the group
        done.append(outcome)
    return done
