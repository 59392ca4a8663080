"""Executor.aclose: every tool set up is torn down once, each within its bound, and the event
sinks and approval store close whatever a tool does."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from invokit import Tool, ToolAnnotations, ToolCall, ToolContext, ToolRegistry, ToolSpec
from invokit.approvals import MemoryApprovalStore
from invokit.execution import Completed, Executor, Limits

from .conftest import ListSink


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Cancellation of a hung teardown must work on both backends."""
    return str(request.param)


pytestmark = pytest.mark.anyio


class Lifecycle(Tool):
    """A read-only tool that records its setups and teardowns; its teardown may hang or fail."""

    def __init__(self, name: str, *, teardown: str = "ok") -> None:
        self._name = name
        self.setups = 0
        self.teardowns = 0
        self.teardown_kind = teardown
        self.hidden = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self._name,
            description="Lifecycle.",
            annotations=ToolAnnotations(read_only=True),
        )

    async def setup(self) -> None:
        self.setups += 1

    async def teardown(self) -> None:
        self.teardowns += 1
        if self.teardown_kind == "hang":
            await anyio.sleep_forever()
        if self.teardown_kind == "fail":
            raise OSError("socket already closed")

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return self._name


class ClosingSink(ListSink):
    """An event sink that counts its closes."""

    def __init__(self) -> None:
        super().__init__()
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


class ClosingStore(MemoryApprovalStore):
    """A memory store that counts its closes."""

    closes = 0

    async def close(self) -> None:
        self.closes += 1
        await super().close()


async def _call_each(executor: Executor, names: list[str]) -> None:
    for name in names:
        outcome = await executor.execute(ToolCall(id=name, name=name))
        assert isinstance(outcome, Completed), outcome


async def test_a_hung_or_failing_teardown_never_keeps_the_rest_open() -> None:
    """A teardown that never returns is left after its bound and one that raises is reported:
    both as RuntimeWarnings. Every other tool, the sinks and the store still close, once."""
    hung, failing, fine = (
        Lifecycle("a_hung", teardown="hang"),
        Lifecycle("b_fail", teardown="fail"),
        Lifecycle("c_fine"),
    )
    sink, store = ClosingSink(), ClosingStore()
    executor = Executor(
        ToolRegistry([hung, failing, fine]),
        events=[sink],
        approvals=store,
        limits=Limits(teardown=0.2),
    )
    await _call_each(executor, ["a_hung", "b_fail", "c_fine"])
    with anyio.fail_after(30), pytest.warns(RuntimeWarning) as warned:
        await executor.aclose()
    messages = " ".join(str(w.message) for w in warned)
    assert "'a_hung' did not finish" in messages and "socket already closed" in messages
    assert [t.teardowns for t in (hung, failing, fine)] == [1, 1, 1]
    assert (sink.closes, store.closes) == (1, 1)
    with anyio.fail_after(30):
        await executor.aclose()  # nothing is torn down twice
    assert [t.teardowns for t in (hung, failing, fine)] == [1, 1, 1]


async def test_a_tool_set_up_behind_an_unadvertised_name_is_torn_down() -> None:
    """A tool the model is not shown but that was called (and so set up) is torn down by
    aclose, like a listed one; one never called is never set up nor torn down."""
    hidden, idle, listed = Lifecycle("hidden"), Lifecycle("idle"), Lifecycle("listed")
    registry = ToolRegistry([hidden, idle, listed]).unadvertised(["hidden", "idle"])
    assert [spec.name for spec in registry.specs()] == ["listed"]
    executor = Executor(registry)
    await _call_each(executor, ["hidden", "listed"])
    with anyio.fail_after(30):
        await executor.aclose()
    assert [(t.setups, t.teardowns) for t in (hidden, idle, listed)] == [(1, 1), (0, 0), (1, 1)]
