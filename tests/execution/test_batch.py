"""execute_many: call order kept, exclusive calls one at a time, one outcome per call."""

from __future__ import annotations

import random

import anyio
import pytest

from invokit import ToolCall, tool
from invokit.execution import Completed, Executor, Failed, Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


async def test_order_is_kept_under_random_delays() -> None:
    """Results come back in call order whatever order the calls finish in."""
    rng = random.Random(7)

    @tool(read_only=True)
    async def nap(n: int, delay: float) -> int:
        """Sleep then return n."""
        await anyio.sleep(delay)
        return n

    calls = [
        ToolCall(id=str(i), name="nap", arguments={"n": i, "delay": rng.random() / 50})
        for i in range(40)
    ]
    outcomes = await Executor([nap]).execute_many(calls)
    assert [o.result.structured for o in outcomes if isinstance(o, Completed)] == list(range(40))


async def test_exclusive_calls_run_one_at_a_time_in_order() -> None:
    """Tools that are not read-only run one at a time, in call order; shared ones overlap."""
    running = 0
    peak = 0
    order: list[int] = []

    @tool(destructive=True)
    async def change(n: int) -> int:
        """Change something."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.005)
        order.append(n)
        running -= 1
        return n

    shared_peak = 0
    shared_running = 0

    @tool(read_only=True)
    async def look(n: int) -> int:
        """Look."""
        nonlocal shared_running, shared_peak
        shared_running += 1
        shared_peak = max(shared_peak, shared_running)
        await anyio.sleep(0.01)
        shared_running -= 1
        return n

    calls = [ToolCall(id=f"c{i}", name="change", arguments={"n": i}) for i in range(5)]
    calls += [ToolCall(id=f"l{i}", name="look", arguments={"n": i}) for i in range(5)]
    outcomes = await Executor([change, look], policy=Policy(allow=["*"])).execute_many(calls)
    assert all(isinstance(o, Completed) for o in outcomes)
    assert peak == 1 and order == [0, 1, 2, 3, 4]
    assert shared_peak > 1


async def test_every_call_gets_one_outcome_and_approvals_surface_together() -> None:
    """Mixed batches: unknown, invalid, asked and allowed calls each get exactly one outcome."""

    @tool(read_only=True)
    async def ok() -> str:
        """Fine."""
        return "ok"

    @tool()
    async def risky(n: int) -> str:
        """Needs approval."""
        return "done"

    calls = [
        ToolCall(id="1", name="ok"),
        ToolCall(id="2", name="missing"),
        ToolCall(id="3", name="risky", arguments={"n": "x"}),
        ToolCall(id="4", name="risky", arguments={"n": 1}),
        ToolCall(id="5", name="risky", arguments={"n": 2}),
    ]
    outcomes = await Executor([ok, risky]).execute_many(calls)
    assert len(outcomes) == 5
    assert isinstance(outcomes[0], Completed)
    assert isinstance(outcomes[1], Failed) and isinstance(outcomes[2], Failed)
    assert isinstance(outcomes[3], Interrupted) and isinstance(outcomes[4], Interrupted)
    assert outcomes[3].interrupt.id != outcomes[4].interrupt.id


async def test_max_concurrency_bounds_parallel_calls() -> None:
    """No more than max_concurrency calls run at once."""
    running = 0
    peak = 0

    @tool(read_only=True)
    async def nap() -> None:
        """Sleep."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.005)
        running -= 1

    calls = [ToolCall(id=str(i), name="nap") for i in range(20)]
    await Executor([nap]).execute_many(calls, max_concurrency=3)
    assert peak == 3


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_bounded_batches_on_both_backends(anyio_backend: str) -> None:
    """More calls than the limit: the limit holds and order is kept on asyncio and on trio."""
    running = 0
    peak = 0

    @tool(read_only=True)
    async def nap(n: int) -> int:
        """Sleep."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.002)
        running -= 1
        return n

    @tool(destructive=True)
    async def change(n: int) -> int:
        """Change."""
        await anyio.sleep(0.001)
        return n

    calls = [ToolCall(id=str(i), name="nap", arguments={"n": i}) for i in range(12)]
    calls += [ToolCall(id=f"c{i}", name="change", arguments={"n": i}) for i in range(3)]
    outcomes = await Executor([nap, change], policy=Policy(allow=["*"])).execute_many(
        calls, max_concurrency=4
    )
    assert [o.result.structured for o in outcomes if isinstance(o, Completed)] == [
        *range(12),
        *range(3),
    ]
    assert peak <= 4
