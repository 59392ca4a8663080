"""execute_many: call order kept, exclusive calls one at a time, one outcome per call."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from invokit import ToolCall, tool
from invokit.execution import Completed, Executor, Failed, Interrupted
from invokit.execution._batch import SLICE as _SLICE
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


async def test_an_exclusive_call_runs_alone() -> None:
    """An exclusive call never overlaps any other call: every call before it has finished
    when it starts, and none after it has started until it finished."""
    log: list[tuple[str, str]] = []

    @tool(read_only=True)
    async def look(n: int) -> int:
        """Look."""
        log.append(("start", f"look{n}"))
        await anyio.sleep(0.01)
        log.append(("end", f"look{n}"))
        return n

    @tool(destructive=True)
    async def change(n: int) -> int:
        """Change."""
        log.append(("start", f"change{n}"))
        await anyio.sleep(0.01)
        log.append(("end", f"change{n}"))
        return n

    calls = [ToolCall(id=f"l{i}", name="look", arguments={"n": i}) for i in range(3)]
    calls.append(ToolCall(id="c0", name="change", arguments={"n": 0}))
    calls += [ToolCall(id=f"l{i}", name="look", arguments={"n": i}) for i in range(3, 6)]
    outcomes = await Executor([look, change], policy=Policy(allow=["*"])).execute_many(calls)
    assert [o.result.structured for o in outcomes if isinstance(o, Completed)] == [
        0,
        1,
        2,
        0,
        3,
        4,
        5,
    ]
    at = log.index(("start", "change0"))
    assert log[at + 1] == ("end", "change0")
    assert {name for _, name in log[:at]} == {"look0", "look1", "look2"}
    assert len(log[:at]) == 6  # every earlier call both started and ended


class SteppedClock:
    """A ``perf_counter`` for the batch that moves ``step`` seconds each time it is read: how
    often the batch yields then depends on how many calls it made, never on the machine's
    speed or load."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


async def _batch_seen_by_another_task(
    monkeypatch: pytest.MonkeyPatch, count: int, step: float
) -> tuple[list[Any], list[int], int]:
    """Run ``count`` instant calls through ``execute_many`` (clock moving ``step`` a read)
    while another task counts, at each of its turns, how many calls had finished; the
    outcomes, those counts, and how many tasks the batch created."""
    import asyncio

    from invokit.execution import _batch

    monkeypatch.setattr(_batch, "perf_counter", SteppedClock(step))

    @tool(read_only=True)
    async def instant(n: int) -> int:
        """Returns at once, never suspending."""
        return n

    loop = asyncio.get_running_loop()
    created = 0
    default = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        nonlocal created
        created += 1
        if default is not None:
            return default(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    finished = 0
    seen: list[int] = []
    done = False

    def heard(index: int, outcome: object) -> None:
        nonlocal finished
        finished += 1

    async def ticker() -> None:
        while not done:
            seen.append(finished)
            await anyio.lowlevel.checkpoint()

    calls = [ToolCall(id=str(i), name="instant", arguments={"n": i}) for i in range(count)]
    executor = Executor([instant])
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        loop.set_task_factory(counting)
        try:
            outcomes = await executor.execute_many(calls, max_concurrency=16, on_outcome=heard)
        finally:
            loop.set_task_factory(default)
        done = True
    seen.append(finished)
    return outcomes, seen, created


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_large_batch_of_instant_calls_lets_other_tasks_run(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of many calls that never suspend runs on a small pool of workers (not a task
    per call) that yields to the event loop as it goes: another task gets turns all through
    it, and outcomes come back in order."""
    outcomes, seen, created = await _batch_seen_by_another_task(monkeypatch, 20_000, _SLICE / 4)
    assert [o.result.structured for o in outcomes if isinstance(o, Completed)] == list(
        range(20_000)
    )
    assert created <= 16
    # Without yielding, the other task gets one turn, maybe two, for the whole batch.
    assert len(set(seen)) >= 20_000 // 64


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("per_slice", [1, 10, 100, 1_000])
async def test_a_batch_holds_the_loop_for_a_slice_of_calls_at_most(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch, per_slice: int
) -> None:
    """Between two turns of another task, a batch of calls that never suspend finishes about
    what one time slice holds (with a clock that moves a fixed amount a call: ``per_slice``
    calls a slice; at most twice that, plus a call per worker), never the whole batch: its own
    work never holds the loop for long. (What a slice holds in real time, on this machine, is
    measured by benchmarks/batch_turns.py.)"""
    outcomes, seen, _ = await _batch_seen_by_another_task(monkeypatch, 16_000, _SLICE / per_slice)
    assert len(outcomes) == seen[-1] == 16_000
    steps = [after - before for before, after in pairwise(seen)]
    assert max(steps) <= 2 * per_slice + 16


def test_stretches_split_at_exclusive_calls() -> None:
    """Shared calls between exclusive ones form one stretch; each exclusive call is alone."""
    from invokit.execution._batch import stretches

    kinds = ["shared", "shared", "exclusive", "exclusive", "shared"]
    assert [list(r) for r in stretches(kinds)] == [[0, 1], [2], [3], [4]]
    assert stretches([]) == []
