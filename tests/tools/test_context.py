"""Tests for ToolContext and Progress (invokit.tools._context)."""

from __future__ import annotations

import pytest

from invokit import Progress, ToolCall, ToolContext


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests here run on both backends: the lifecycle and threads must not assume asyncio."""
    return str(request.param)


def test_direct_context_has_local_defaults() -> None:
    """A context made without a call reports a local call and empty resources."""
    ctx = ToolContext()
    assert ctx.call is None
    assert ctx.call_id == "local"
    assert ctx.tool_name == ""
    assert (ctx.session_id, ctx.turn_id) == (None, None)
    assert dict(ctx.resources) == {}
    assert dict(ctx.credentials) == {}
    assert dict(ctx.metadata) == {}
    assert ctx.cancelled is False


def test_context_reads_ids_from_its_call() -> None:
    """Call id, tool name, session, turn and metadata come from the call being run."""
    call = ToolCall(id="c1", name="fs.read", session_id="s1", turn_id="t1", metadata={"k": 1})
    ctx = ToolContext(call, resources={"db": "pool"}, credentials={"token": "x"})
    assert (ctx.call_id, ctx.tool_name, ctx.session_id, ctx.turn_id) == (
        "c1",
        "fs.read",
        "s1",
        "t1",
    )
    assert ctx.metadata == {"k": 1}
    assert ctx.resources["db"] == "pool"
    assert ctx.credentials["token"] == "x"


def test_keyword_ids_build_a_call() -> None:
    """Passing ids as keywords is the same as passing a call with them."""
    ctx = ToolContext(call_id="c2", tool_name="x", session_id="s", turn_id="t")
    assert ctx.call == ToolCall(id="c2", name="x", session_id="s", turn_id="t")


def test_idempotency_key_is_stable_per_call() -> None:
    """The key is the same for the same call in any context, differs between calls, and can be set."""
    one = ToolContext(ToolCall(id="c1", name="pay", session_id="s"))
    again = ToolContext(ToolCall(id="c1", name="pay", session_id="s"))
    other = ToolContext(ToolCall(id="c2", name="pay", session_id="s"))
    assert one.idempotency_key == again.idempotency_key
    assert one.idempotency_key != other.idempotency_key
    assert ToolContext(idempotency_key="fixed").idempotency_key == "fixed"


def test_cancel_marks_the_context() -> None:
    """``cancel`` sets ``cancelled`` for sync tools that poll it."""
    ctx = ToolContext()
    ctx.cancel()
    assert ctx.cancelled is True


@pytest.mark.anyio
async def test_progress_and_partial_results_reach_the_callback() -> None:
    """report_progress and emit deliver Progress values to the host's callback, in order."""
    seen: list[Progress] = []

    async def on_progress(progress: Progress) -> None:
        seen.append(progress)

    ctx = ToolContext(on_progress=on_progress)
    await ctx.report_progress(1, total=4, message="reading")
    await ctx.emit({"rows": 10})
    assert seen == [
        Progress(progress=1, total=4, message="reading"),
        Progress(data={"rows": 10}),
    ]


@pytest.mark.anyio
async def test_progress_without_a_listener_is_a_no_op() -> None:
    """Reporting progress with no callback does nothing and does not fail."""
    ctx = ToolContext()
    await ctx.report_progress(0.5)
    await ctx.emit("partial")
