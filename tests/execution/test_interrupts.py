"""Auth and external-call interrupts, streaming progress."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from invokit import AuthRequired, Progress, ToolCall, ToolContext, declare, tool
from invokit.execution import (
    AuthorizationRequired,
    Completed,
    Executor,
    ExternalCall,
    Interrupted,
    interrupt_from_dict,
)
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


async def test_auth_required_interrupts_and_resumes_with_credentials() -> None:
    """A tool raising AuthRequired pauses; resumed with credentials it sees them in ctx."""

    @tool(read_only=True)
    async def repos(ctx: ToolContext) -> list[str]:
        """List repositories."""
        token = ctx.credentials.get("token")
        if token is None:
            raise AuthRequired(
                "github", scopes=["repo"], challenge={"url": "https://example.test/auth"}
            )
        return [f"repo-for-{token}"]

    executor = Executor([repos])
    outcome = await executor.execute(ToolCall(id="1", name="repos"))
    assert isinstance(outcome, Interrupted)
    interrupt = outcome.interrupt
    assert isinstance(interrupt, AuthorizationRequired)
    assert interrupt.provider == "github" and interrupt.scopes == ("repo",)
    restored = interrupt_from_dict(json.loads(json.dumps(interrupt.to_dict())))
    resumed = await executor.resume(restored, credentials={"token": "t1"})
    assert isinstance(resumed, Completed)
    assert resumed.result.structured == ["repo-for-t1"]
    assert "t1" not in json.dumps(resumed.result.to_dict()["content"]).replace("repo-for-t1", "")


async def test_declared_tool_is_handed_to_the_host() -> None:
    """A declaration-only tool returns ExternalCall; the host's result completes it."""
    browser = declare(
        "browser.click",
        "Click an element",
        {"type": "object", "properties": {"selector": {"type": "string"}}},
    )
    executor = Executor([browser], policy=Policy.allow_all())
    outcome = await executor.execute(
        ToolCall(id="1", name="browser.click", arguments={"selector": "#go"})
    )
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ExternalCall)
    assert outcome.interrupt.arguments == {"selector": "#go"}
    done = await executor.resume(outcome.interrupt, result={"clicked": True})
    assert isinstance(done, Completed) and done.result.structured == {"clicked": True}


async def test_stream_yields_progress_then_outcome() -> None:
    """executor.stream gives each progress report and partial result, then the outcome."""

    @tool(read_only=True)
    async def count(n: int) -> AsyncIterator[int]:
        """Count up."""
        for i in range(n):
            yield Progress(progress=i, total=n, message=f"step {i}")  # type: ignore[misc]
            yield i

    executor = Executor([count])
    items = [
        item async for item in executor.stream(ToolCall(id="1", name="count", arguments={"n": 3}))
    ]
    progress = [i for i in items if isinstance(i, Progress)]
    assert [p.message for p in progress if p.message] == ["step 0", "step 1", "step 2"]
    assert [p.data for p in progress if p.data is not None] == [1, 2] or [
        p.data for p in progress if p.message is None
    ] == [0, 1, 2]
    final = items[-1]
    assert isinstance(final, Completed) and final.result.structured == 2


async def test_report_progress_reaches_the_caller() -> None:
    """ctx.report_progress is delivered to execute's on_progress callback."""
    got: list[Progress] = []

    @tool(read_only=True)
    async def work(ctx: ToolContext) -> str:
        """Work."""
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2, "done")
        return "ok"

    async def collect(progress: Progress) -> None:
        got.append(progress)

    await Executor([work]).execute(ToolCall(id="1", name="work"), on_progress=collect)
    assert [(p.progress, p.total, p.message) for p in got] == [(1, 2, "half"), (2, 2, "done")]
