"""Hooks observe, rewrite (checked again), skip with a result, or halt."""

from __future__ import annotations

from typing import Any

import pytest

from invokit import ToolCall, ToolRegistry, ToolResult, ToolSpec, tool
from invokit.execution import (
    Completed,
    Executor,
    Failed,
    Halt,
    HookAction,
    Interrupted,
    Rewrite,
    Skip,
)
from invokit.permissions import FileWrite, Policy

from .conftest import Recorder

pytestmark = pytest.mark.anyio


class Rewriter:
    def __init__(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments

    async def before_call(
        self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
    ) -> HookAction:
        return Rewrite(self.arguments)


async def test_rewrite_runs_new_arguments(registry: ToolRegistry, recorder: Recorder) -> None:
    """A rewrite changes what runs."""
    executor = Executor(registry, hooks=[Rewriter({"text": "b", "times": 3})])
    outcome = await executor.execute(ToolCall(id="1", name="echo", arguments={"text": "a"}))
    assert isinstance(outcome, Completed) and outcome.result.text == "bbb"


async def test_rewrite_is_validated_again(registry: ToolRegistry, recorder: Recorder) -> None:
    """Rewritten arguments that break the schema fail; the tool never runs."""
    executor = Executor(registry, hooks=[Rewriter({"text": 1})])
    outcome = await executor.execute(ToolCall(id="1", name="echo", arguments={"text": "a"}))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "invalid_arguments"
    assert recorder.count("echo") == 0


async def test_invalid_rewrite_says_a_hook_rewrote_them(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """The error for an invalid rewrite is a sentence saying the hook's arguments are invalid."""
    executor = Executor(registry, hooks=[Rewriter({"text": 1})])
    outcome = await executor.execute(ToolCall(id="1", name="echo", arguments={"text": "a"}))
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.message.startswith("The arguments a hook rewrote are invalid:")


async def test_rewrite_is_decided_again(recorder: Recorder) -> None:
    """Guards see what will really run: a rewrite into a denied target is denied."""

    @tool(permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write."""
        recorder.saw("write", path=path)
        return "ok"

    executor = Executor(
        [write],
        policy=Policy(allow=["write"], deny=["write(path=**/.env)"]),
        hooks=[Rewriter({"path": ".env"})],
    )
    outcome = await executor.execute(ToolCall(id="1", name="write", arguments={"path": "ok.txt"}))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "denied"
    assert recorder.count("write") == 0


async def test_rewrite_into_an_ask_needs_approval(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A rewrite that the policy asks about is not covered by the original allow."""

    class ToDelete:
        async def before_call(
            self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
        ) -> HookAction | None:
            return Rewrite({"path": "other"}) if spec.name == "delete" else None

    executor = Executor(registry, policy=Policy(allow=["delete(path=ok)"]), hooks=[ToDelete()])
    outcome = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "ok"}))
    assert isinstance(outcome, Interrupted)
    assert recorder.count("delete") == 0


async def test_skip_returns_the_hook_result(registry: ToolRegistry, recorder: Recorder) -> None:
    """Skip answers with the hook's result and the body never runs."""

    class Cache:
        async def before_call(
            self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
        ) -> HookAction:
            return Skip(ToolResult.make_error("", "", "cached", "from cache"))

    outcome = await Executor(registry, hooks=[Cache()]).execute(
        ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert isinstance(outcome, Completed)
    assert outcome.result.call_id == "1" and outcome.result.text == "from cache"
    assert recorder.count("echo") == 0


async def test_halt_fails_the_call(registry: ToolRegistry, recorder: Recorder) -> None:
    """Halt fails the call with kind halted and the reason."""

    class Stop:
        async def before_call(
            self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
        ) -> HookAction:
            return Halt("budget exhausted")

    outcome = await Executor(registry, hooks=[Stop()]).execute(
        ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "halted"
    assert "budget exhausted" in outcome.result.text
    assert recorder.count("echo") == 0


async def test_after_call_may_replace_the_result(registry: ToolRegistry) -> None:
    """after_call sees the result and may replace it; a crashing hook becomes an error result."""

    class Redact:
        async def after_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
            return ToolResult(call_id=result.call_id, name=result.name, structured="[redacted]")

    class Crash:
        async def after_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
            raise RuntimeError("hook bug")

    redacted = await Executor(registry, hooks=[Redact()]).execute(
        ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    crashed = await Executor(registry, hooks=[Crash()]).execute(
        ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert isinstance(redacted, Completed) and redacted.result.structured == "[redacted]"
    assert isinstance(crashed, Completed)
    assert crashed.result.error is not None and crashed.result.error.kind == "hook_failed"


async def test_editing_arguments_in_place_changes_nothing(recorder: Recorder) -> None:
    """A hook that mutates the arguments it was given, without returning Rewrite, does not
    change what runs (so it cannot slip past validation and policy)."""

    @tool(permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write."""
        recorder.saw("write", path=path)
        return "ok"

    class Sneaky:
        async def before_call(
            self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
        ) -> None:
            arguments["path"] = ".env"

    executor = Executor(
        [write], policy=Policy(allow=["write"], deny=["write(path=.env)"]), hooks=[Sneaky()]
    )
    outcome = await executor.execute(ToolCall(id="1", name="write", arguments={"path": "ok.txt"}))
    assert isinstance(outcome, Completed)
    assert recorder.calls == [("write", {"path": "ok.txt"})]


async def test_a_rewrite_to_arguments_a_person_refused_stays_refused(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A hook's rewrite to the arguments a person said "no" to for this very call is refused,
    even when a session grant covers the tool: a grant never overrules a "no"."""
    from invokit.approvals import ApprovalDecision, MemoryApprovalStore

    store = MemoryApprovalStore()
    policy = Policy(ask=["delete"])
    call = ToolCall(id="c1", name="delete", arguments={"path": "x"}, session_id="s1")
    asking = Executor(registry, policy=policy, approvals=store, project="/p")
    asked = await asking.execute(call)
    assert isinstance(asked, Interrupted)
    no = ApprovalDecision(approved=False, by="alice", reason="not x")
    await store.resolve(asked.interrupt.id, no)
    spec = registry.get("delete").spec  # type: ignore[union-attr]
    await store.grant_session("s1", spec.name, spec.fingerprint, project="/p")
    hooked = Executor(
        registry, policy=policy, approvals=store, project="/p", hooks=[Rewriter({"path": "x"})]
    )
    outcome = await hooked.execute(
        ToolCall(id="c1", name="delete", arguments={"path": "y"}, session_id="s1")
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "approval_denied"
    assert recorder.count("delete") == 0
