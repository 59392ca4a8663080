"""Timeouts and cancellation: one error result, no task left running, cancel never swallowed."""

from __future__ import annotations

import threading

import anyio
import pytest

from invokit import ToolCall, ToolContext, tool
from invokit.execution import Completed, Executor, Limits

from .conftest import ListSink

pytestmark = pytest.mark.anyio


async def test_timeout_yields_one_error_and_stops_the_body() -> None:
    """A tool past its timeout is stopped; the result says timeout and the body saw the cancel."""
    finished: list[str] = []

    @tool(read_only=True, timeout=0.05)
    async def slow() -> str:
        """Sleep."""
        try:
            await anyio.sleep(10)
        finally:
            finished.append("cleaned up")
        return "never"

    sink = ListSink()
    with anyio.fail_after(30):
        outcome = await Executor([slow], events=[sink]).execute(ToolCall(id="1", name="slow"))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    assert finished == ["cleaned up"]
    assert len(sink.of("completed")) == 1


async def test_executor_default_timeout_applies() -> None:
    """Without a per-tool timeout the executor's limit is used."""

    @tool(read_only=True)
    async def slow() -> str:
        """Sleep."""
        await anyio.sleep(10)
        return "never"

    outcome = await Executor([slow], limits=Limits(timeout=0.05)).execute(
        ToolCall(id="1", name="slow")
    )
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"


async def test_sync_tool_timeout_sets_cancelled_flag() -> None:
    """A sync tool cannot be killed; on timeout its context says cancelled so it can stop."""
    stopped = threading.Event()

    @tool(read_only=True, timeout=0.05)
    def busy(ctx: ToolContext) -> str:
        """Spin until cancelled."""
        while not ctx.cancelled:
            threading.Event().wait(0.01)
        stopped.set()
        return "stopped"

    outcome = await Executor([busy]).execute(ToolCall(id="1", name="busy"))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    assert await anyio.to_thread.run_sync(stopped.wait, 2)


async def test_caller_cancellation_propagates_after_recording() -> None:
    """Cancelling the caller cancels the tool, records a cancelled event, and is not swallowed."""
    cleaned: list[bool] = []
    started = anyio.Event()

    @tool(read_only=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        try:
            await anyio.sleep(10)
        finally:
            cleaned.append(True)
        return "never"

    sink = ListSink()
    executor = Executor([wait], events=[sink])
    reached_after = False
    async with anyio.create_task_group() as group:

        async def run() -> None:
            nonlocal reached_after
            await executor.execute(ToolCall(id="1", name="wait"))
            reached_after = True

        group.start_soon(run)
        await started.wait()
        group.cancel_scope.cancel()
    assert cleaned == [True]
    assert not reached_after
    failed = sink.of("failed")
    assert len(failed) == 1 and failed[0].data["kind"] == "cancelled"


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_tools_that_open_cancel_scopes_first(anyio_backend: str) -> None:
    """A tool that opens cancel scopes and task groups before it first waits runs normally and
    still times out cleanly."""

    @tool(read_only=True, timeout=5)
    async def scoped(delay: float) -> str:
        """Open a scope and a task group, then wait."""
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(anyio.sleep, delay / 2)
                await anyio.sleep(delay)
        return "done"

    @tool(read_only=True, timeout=0.05)
    async def stuck() -> str:
        """Open a scope, then wait too long."""
        with anyio.CancelScope():
            await anyio.sleep(10)
        return "never"

    executor = Executor([scoped, stuck])
    ok = await executor.execute(ToolCall(id="1", name="scoped", arguments={"delay": 0.01}))
    late = await executor.execute(ToolCall(id="2", name="stuck"))
    assert isinstance(ok, Completed) and ok.result.text == "done"
    assert isinstance(late, Completed)
    assert late.result.error is not None and late.result.error.kind == "timeout"


async def test_long_deadlines_share_timers_and_still_fire() -> None:
    """Deadlines of a second or more share one timer per slot: many waiting calls time out on
    time (at most a slot late), and no timer is left behind by calls that finished."""
    import time

    from invokit.execution import _invoke

    @tool(read_only=True, timeout=1.0)
    async def stuck(n: int) -> int:
        """Wait too long."""
        await anyio.sleep(30)
        return n

    @tool(read_only=True, timeout=5.0)
    async def quick(n: int) -> int:
        """Wait a little."""
        await anyio.sleep(0.01)
        return n

    executor = Executor([stuck, quick])
    started = time.monotonic()
    calls = [ToolCall(id=f"s{i}", name="stuck", arguments={"n": i}) for i in range(50)]
    calls += [ToolCall(id=f"q{i}", name="quick", arguments={"n": i}) for i in range(50)]
    # Fifty one-second timeouts one after another would take 50 s: run side by side, they
    # end well within this deadline (a bound on a hang, not a speed).
    with anyio.fail_after(30):
        outcomes = await executor.execute_many(calls, max_concurrency=len(calls))
    elapsed = time.monotonic() - started
    kinds = [o.result.error.kind if o.result.error else None for o in outcomes]
    assert kinds == ["timeout"] * 50 + [None] * 50
    assert elapsed >= 1.0  # a timeout never fires early
    import asyncio

    assert not _invoke.watchdog(asyncio.get_running_loop()).deadlines


async def test_a_tool_that_swallows_its_deadline_still_times_out() -> None:
    """A tool that catches the cancellation its deadline caused and returns anyway gets a
    timeout result, and the caller's task is left uncancelled."""
    import asyncio

    @tool(read_only=True, timeout=0.05)
    async def stubborn() -> str:
        """Ignore the deadline."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "finished anyway"
        return "never"

    outcome = await Executor([stubborn]).execute(ToolCall(id="1", name="stubborn"))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # no cancellation is pending for this task


async def test_a_long_deadline_never_fires_early() -> None:
    """A shared (coarse) deadline may fire late, never before its time."""

    @tool(read_only=True, timeout=1.0)
    async def half(n: int) -> int:
        """Wait half the deadline."""
        await anyio.sleep(0.5)
        return n

    executor = Executor([half])
    calls = [ToolCall(id=str(i), name="half", arguments={"n": i}) for i in range(20)]
    outcomes = await executor.execute_many(calls, max_concurrency=20)
    assert [o.result.structured for o in outcomes] == list(range(20))


async def test_the_current_task_is_read_at_native_speed() -> None:
    """The watchdog's task lookup finds the running task (asyncio's own table or function)."""
    import asyncio

    from invokit.execution._invoke import watchdog

    loop = asyncio.get_running_loop()
    assert watchdog(loop).task(loop) is asyncio.current_task()

    async def inner() -> bool:
        return watchdog(loop).task(loop) is asyncio.current_task()

    assert await asyncio.create_task(inner())


async def test_nested_calls_with_the_same_deadline_both_stop() -> None:
    """A tool that runs another tool through the executor: when both deadlines come due in the
    same round, the outer call still times out on time (each deadline keeps its own cancel)."""
    import asyncio

    @tool(read_only=True, timeout=1.0)
    async def inner() -> str:
        """Hang."""
        await asyncio.sleep(30)
        return "never"

    executor = Executor([inner])

    @tool(read_only=True, timeout=1.0)
    async def outer() -> str:
        """Call inner, then keep working."""
        await executor.execute(ToolCall(id="in", name="inner"))
        await asyncio.sleep(5)
        return "outer ran on"

    runner = Executor([outer, inner])
    with anyio.fail_after(30):  # a bound on a hang; "timeout", not "outer ran on", is the check
        outcome = await runner.execute(ToolCall(id="out", name="outer"))
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_callers_cancel_is_not_taken_for_a_timeout() -> None:
    """The caller cancels; the tool cleans up slowly and its deadline passes meanwhile: the
    caller's cancellation still reaches the caller."""
    import asyncio

    @tool(read_only=True, timeout=1.0)
    async def careful() -> str:
        """Wait; on cancel, clean up slowly, then stop."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(1.5)
            raise
        return "never"

    executor = Executor([careful])
    caller = asyncio.create_task(executor.execute(ToolCall(id="1", name="careful")))
    await asyncio.sleep(0.2)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller


async def test_deadlines_keep_time_on_a_busy_loop() -> None:
    """A deadline is measured on the clock, not in watchdog rounds: a loop kept busy by other
    work (each of its turns blocking) does not stretch it."""
    import asyncio
    import time

    @tool(read_only=True, timeout=1.0)
    async def hang() -> str:
        """Hang."""
        await asyncio.sleep(60)
        return "never"

    async def busy() -> None:
        while True:
            time.sleep(0.2)  # noqa: ASYNC251 - work that does not yield, on purpose
            await asyncio.sleep(0)

    hog = asyncio.create_task(busy())
    try:
        started = time.monotonic()
        # The body hangs for a minute: a timeout that work on the loop stretched would not
        # end the call within this deadline.
        with anyio.fail_after(30):
            outcome = await Executor([hang]).execute(ToolCall(id="1", name="hang"))
        elapsed = time.monotonic() - started
    finally:
        hog.cancel()
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    assert elapsed >= 1.0  # never early


async def test_one_broken_deadline_does_not_stop_the_others() -> None:
    """An entry whose task cannot be cancelled raises inside the watchdog's round; the next
    rounds still run and other deadlines still fire."""
    import asyncio

    from invokit.execution._invoke import watchdog

    @tool(read_only=True, timeout=1.0)
    async def hang() -> str:
        """Hang."""
        await asyncio.sleep(60)
        return "never"

    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, _context: None)
    dog = watchdog(loop)
    dog.deadlines[object()] = (object(), 0.0, 0)  # due now; has no cancel()
    dog.wake(0.0)
    try:
        with anyio.fail_after(30):  # the body hangs a minute: only its deadline can end it
            outcome = await Executor([hang]).execute(ToolCall(id="1", name="hang"))
    finally:
        dog.deadlines.clear()
        dog.fired.clear()
        loop.set_exception_handler(handler)
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"


def test_event_loops_are_not_kept_alive() -> None:
    """Watchdogs hold their loop; nothing holds a watchdog once its loop's calls are done."""
    import asyncio
    import gc
    import weakref

    @tool(read_only=True)
    async def ping() -> str:
        """Answer."""
        return "pong"

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def once() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        await Executor([ping]).execute(ToolCall(id="1", name="ping"))

    for _ in range(5):
        asyncio.run(once())
    gc.collect()
    assert sum(ref() is not None for ref in loops) == 0


async def test_a_swallowed_cancel_does_not_take_another_request_with_it() -> None:
    """A tool that swallows its deadline's cancellation, nested in a call with the same
    deadline: the outer deadline's request rode on the same CancelledError and is not lost."""
    import asyncio

    @tool(read_only=True, timeout=1.0)
    async def swallow() -> str:
        """Wait; on cancellation, return anyway."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "cleaned up"
        return "never"

    @tool(read_only=True, timeout=1.0)
    async def outer() -> str:
        """Call swallow, then keep working."""
        await executor.execute(ToolCall(id="inner", name="swallow"))
        await asyncio.sleep(5)
        return "outer finished"

    executor = Executor([swallow, outer])
    with anyio.fail_after(30):  # a bound on a hang; "timeout", not "outer finished", is the check
        outcome = await executor.execute(ToolCall(id="outer", name="outer"))
    assert outcome.result.error is not None and outcome.result.error.kind == "timeout"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_what_is_not_an_error_passes_a_fired_deadline() -> None:
    """SystemExit raised after the deadline fired is not turned into a timeout result."""
    import asyncio

    @tool(read_only=True, timeout=0.05)
    async def leave() -> str:
        """Exit when cancelled."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise SystemExit(3) from None
        return "never"

    with pytest.raises(SystemExit):
        await Executor([leave]).execute(ToolCall(id="1", name="leave"))
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_quick_calls_leave_no_timers_behind() -> None:
    """Calls that finish in time schedule nothing, however short their deadline: the loop has
    one timer, for the earliest deadline."""
    import asyncio

    @tool(read_only=True, timeout=0.5)
    async def quick() -> str:
        """Answer at once."""
        return "ok"

    loop = asyncio.get_running_loop()
    executor = Executor([quick])
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    for _ in range(500):
        await executor.execute(ToolCall(id="1", name="quick"))
    assert len(loop._scheduled) - before <= 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_every_backend_reports_a_passed_deadline_alike(anyio_backend: str) -> None:
    """A tool that swallows its cancellation, or turns it into another error, times out on
    asyncio and trio alike."""

    @tool(read_only=True, timeout=0.1)
    async def swallow() -> str:
        """Ignore the cancellation."""
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            return "returned anyway"
        return "never"

    @tool(read_only=True, timeout=0.1)
    async def convert() -> str:
        """Turn the cancellation into an error."""
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            raise ValueError("interrupted") from None
        return "never"

    executor = Executor([swallow, convert])
    for name in ("swallow", "convert"):
        outcome = await executor.execute(ToolCall(id=name, name=name))
        assert outcome.result.error is not None and outcome.result.error.kind == "timeout", name


def test_limits_refuse_what_is_not_a_duration() -> None:
    """A timeout, approval lifetime or concurrency that is not a positive number is refused."""
    for bad in (
        {"timeout": float("nan")},
        {"timeout": 0},
        {"timeout": -1.0},
        {"timeout": float("inf")},
        {"approval_ttl": 0},
        {"max_concurrency": 0},
    ):
        with pytest.raises(ValueError, match="must be"):
            Limits(**bad)


async def test_deadlines_due_beside_a_broken_one_still_fire() -> None:
    """When firing one due deadline fails, the others due in the same round fire in the next."""
    import asyncio

    from invokit.execution._invoke import Watchdog

    loop = asyncio.get_running_loop()
    dog = Watchdog(loop)
    sleeper = asyncio.create_task(asyncio.sleep(30))
    await asyncio.sleep(0)
    dog.deadlines["broken"] = (object(), 0.0, 0)  # due; has no cancel()
    dog.deadlines["real"] = (sleeper, 0.0, 0)
    with pytest.raises(AttributeError):
        dog._check()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(sleeper, 1.0)
    assert set(dog.fired) == {"broken", "real"}
