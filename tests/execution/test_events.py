"""Events and progress: a sink takes what it asks for, and a host's callbacks never fail a call."""

from __future__ import annotations

import pytest

from invokit import ToolCall, ToolContext, tool
from invokit.execution import Completed, Executor
from invokit.execution._events import Event
from invokit.tools._context import Progress

pytestmark = pytest.mark.anyio


class PlainSink:
    """A custom sink with emit, flush and close, and no ``types`` attribute."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class ListSink(PlainSink):
    def __init__(self) -> None:
        super().__init__()
        self.types = None


@tool(read_only=True)
async def steps(ctx: ToolContext) -> str:
    """Reports progress twice, then answers."""
    await ctx.report_progress(1, 2, "half")
    await ctx.report_progress(2, 2, "done")
    return "finished"


async def test_a_sink_without_types_gets_every_event() -> None:
    """A custom sink without a ``types`` attribute is accepted and receives all event types."""
    sink = PlainSink()
    executor = Executor([steps], events=[sink])  # type: ignore[list-item]
    outcome = await executor.execute(ToolCall(id="1", name="steps"), on_progress=None)
    assert isinstance(outcome, Completed)
    kinds = [event.type for event in sink.events]
    assert kinds[0] == "received" and kinds[-1] == "completed"
    assert "validated" in kinds and "decided" in kinds


async def test_a_failing_progress_callback_never_fails_the_call() -> None:
    """The host's on_progress raising is reported (a warning, once) and the call's own result
    comes back intact, not execution_failed blamed on the tool."""
    heard: list[Progress] = []

    async def broken(progress: Progress) -> None:
        heard.append(progress)
        raise ConnectionResetError("client went away")

    with pytest.warns(RuntimeWarning, match="on_progress callback") as caught:
        outcome = await Executor([steps]).execute(
            ToolCall(id="1", name="steps"), on_progress=broken
        )
    assert isinstance(outcome, Completed)
    assert not outcome.result.is_error and outcome.result.text == "finished"
    assert len(heard) == 2 and len(caught) == 1


async def test_a_failing_progress_callback_is_an_event() -> None:
    """A sink hears of the failed callback in a progress event with ``callback_error``."""
    sink = ListSink()

    async def broken(progress: Progress) -> None:
        raise ValueError("bad host")

    with pytest.warns(RuntimeWarning):
        outcome = await Executor([steps], events=[sink]).execute(
            ToolCall(id="1", name="steps"), on_progress=broken
        )
    assert isinstance(outcome, Completed) and not outcome.result.is_error
    errors = [e.data["callback_error"] for e in sink.events if "callback_error" in e.data]
    assert len(errors) == 1 and "bad host" in errors[0]
    assert [e.type for e in sink.events].count("progress") == 3


async def test_a_failing_progress_callback_under_warnings_as_errors() -> None:
    """Even with warnings turned into errors, the callback's failure does not fail the call."""
    import warnings

    async def broken(progress: Progress) -> None:
        raise RuntimeError("nope")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = await Executor([steps]).execute(
            ToolCall(id="1", name="steps"), on_progress=broken
        )
    assert isinstance(outcome, Completed) and outcome.result.text == "finished"


async def test_events_of_one_execution_share_an_identity() -> None:
    """Every event of one execute carries the same execution identity, kept out of the
    event's stored form."""
    sink = ListSink()
    executor = Executor([steps], events=[sink])
    await executor.execute(ToolCall(id="same", name="steps"))
    first = {event.execution for event in sink.events}
    sink.events.clear()
    keep = ToolCall(id="same", name="steps")  # alive while the first call's object may be reused
    await executor.execute(keep)
    second = {event.execution for event in sink.events}
    assert len(first) == 1 and len(second) == 1
    assert "execution" not in sink.events[0].to_dict()
