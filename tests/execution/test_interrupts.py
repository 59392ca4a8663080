"""Auth and external-call interrupts, streaming progress."""

from __future__ import annotations

import datetime
import decimal
import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

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


class _Opaque:
    """A value with no JSON form."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Row:
    when: datetime.datetime
    tags: frozenset[str]


async def test_progress_reaches_on_progress_and_stream_as_json_data() -> None:
    """What a streaming tool yields and reports reaches on_progress and stream() converted as
    a result is (datetimes, sets, dataclasses as JSON data; amounts finite numbers or None;
    messages text), never as the raw objects."""
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)

    @tool(read_only=True)
    async def rows(ctx: ToolContext) -> AsyncIterator[Any]:
        """Yield rows."""
        odd: Any = (decimal.Decimal("1.5"), math.nan, _Row(when=moment, tags=frozenset()))
        await ctx.report_progress(*odd)  # what a tool may pass, typed or not
        yield {"at": moment, "ids": {3, 1, 2}}
        yield _Row(when=moment, tags=frozenset({"b", "a"}))

    got: list[Progress] = []

    async def collect(progress: Progress) -> None:
        got.append(progress)

    outcome = await Executor([rows]).execute(ToolCall(id="1", name="rows"), on_progress=collect)
    assert isinstance(outcome, Completed), outcome
    streamed = [
        item
        async for item in Executor([rows]).stream(ToolCall(id="2", name="rows"))
        if isinstance(item, Progress)
    ]
    for seen in (got, streamed):
        first, second, third = seen
        assert (first.progress, first.total) == (1.5, None)
        assert first.message is not None
        assert json.loads(first.message) == {"tags": [], "when": "2026-01-02T03:04:05+00:00"}
        assert second.data == {"at": "2026-01-02T03:04:05+00:00", "ids": [1, 2, 3]}
        assert third.data == {"when": "2026-01-02T03:04:05+00:00", "tags": ["a", "b"]}
        for progress in seen:
            json.dumps(
                [progress.progress, progress.total, progress.message, progress.data],
                allow_nan=False,
            )


async def test_a_yield_with_no_json_form_fails_the_call_as_a_return_would() -> None:
    """A streaming tool that yields a value with no JSON form fails with execution_failed,
    listened to or not, like one that returns it; the value never reaches the caller."""

    @tool(read_only=True)
    async def leaky() -> AsyncIterator[Any]:
        """Yield an object."""
        yield _Opaque()
        yield "done"

    got: list[Progress] = []

    async def collect(progress: Progress) -> None:
        got.append(progress)

    for on_progress in (collect, None):
        outcome = await Executor([leaky]).execute(
            ToolCall(id="1", name="leaky"), on_progress=on_progress
        )
        assert isinstance(outcome, Completed) and outcome.result.error is not None
        assert outcome.result.error.kind == "execution_failed"
    assert got == []
