"""One decision for every path: preflight, policy and the tool's own approval check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from invokit import AccessDenied, ToolCall, ToolContext, ToolRegistry, tool
from invokit.approvals import ApprovalDecision, MemoryApprovalStore
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted, Rewrite
from invokit.permissions import FileWrite, PermissionRequest, Policy

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio


def _kind(outcome: object) -> str | None:
    assert isinstance(outcome, Failed | Completed)
    return outcome.result.error.kind if outcome.result.error is not None else None


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


async def test_preflight_refusal_keeps_its_kind_and_words(recorder: Recorder) -> None:
    """A tool that refuses in preflight (AccessDenied) fails with its own kind and message, not a
    repr, and nobody is asked."""

    def guard(args: Mapping[str, Any]) -> list[PermissionRequest]:
        if args["path"].startswith("/"):
            raise AccessDenied(f"{args['path']} is outside the workspace")
        return [FileWrite(path=args["path"])]

    @tool(permissions=guard)
    async def write(path: str) -> str:
        """Write a file."""
        recorder.saw("write", path=path)
        return "ok"

    sink = ListSink()
    asked: list[object] = []

    async def approver(request: object) -> bool:
        asked.append(request)
        return True

    executor = Executor([write], approver=approver, events=[sink])
    outcome = await executor.execute(ToolCall(id="1", name="write", arguments={"path": "/etc/x"}))
    assert isinstance(outcome, Failed)
    assert _kind(outcome) == "denied"
    assert outcome.result.text == "/etc/x is outside the workspace"
    assert asked == [] and recorder.count("write") == 0
    assert sink.of("approval_requested") == []


async def test_broken_preflight_fails_as_denied_without_a_repr(recorder: Recorder) -> None:
    """A preflight that crashes refuses the call as ``denied``, naming the error type only."""

    def broken(args: Mapping[str, Any]) -> list[PermissionRequest]:
        raise KeyError("secret-internal-detail")

    @tool(permissions=broken, read_only=True)
    async def look(path: str) -> str:
        """Look."""
        recorder.saw("look", path=path)
        return "ok"

    outcome = await Executor([look]).execute(ToolCall(id="1", name="look", arguments={"path": "a"}))
    assert _kind(outcome) == "denied"
    assert isinstance(outcome, Failed)
    assert "KeyError" in outcome.result.text
    assert "secret-internal-detail" not in outcome.result.text
    assert recorder.count("look") == 0


async def test_identical_retry_is_decided_by_the_policy_in_force(recorder: Recorder) -> None:
    """A retry that would use an approval given elsewhere is refused when the policy in force
    now denies the call; the approval never runs it."""

    @tool(destructive=True)
    async def drop(table: str) -> str:
        """Drop a table."""
        recorder.saw("drop", table=table)
        return "dropped"

    store = MemoryApprovalStore()
    first = Executor([drop], approvals=store)
    call = ToolCall(id="1", name="drop", arguments={"table": "users"})
    request = _approval(await first.execute(call)).request
    await store.resolve(request.id, ApprovalDecision.approve(by="cli"))
    stricter = Executor([drop], approvals=store, policy=Policy(deny=["drop"]))
    outcome = await stricter.execute(call)
    assert _kind(outcome) == "denied"
    assert recorder.count("drop") == 0
    assert (await store.get(request.id)).status == "approved"  # not used by a denied call


async def test_hook_rewrite_is_decided_again(recorder: Recorder) -> None:
    """A hook that rewrites the arguments to a denied target is refused by the same decision."""

    @tool(permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write a file."""
        recorder.saw("write", path=path)
        return "ok"

    class Redirect:
        async def before_call(self, call: ToolCall, args: dict[str, Any], ctx: ToolContext) -> Any:
            return Rewrite(arguments={"path": ".env"})

    executor = Executor(
        [write], policy=Policy(allow=["write"], deny=["write(.env)"]), hooks=[Redirect()]
    )
    outcome = await executor.execute(ToolCall(id="1", name="write", arguments={"path": "a"}))
    assert _kind(outcome) == "denied"
    assert recorder.count("write") == 0


# -- needs_approval as a function of the arguments ---------------------------------------------


def _payments(recorder: Recorder, check: Any) -> ToolRegistry:
    @tool(needs_approval=check)
    async def pay(to: str, amount: int) -> str:
        """Pay someone."""
        recorder.saw("pay", to=to, amount=amount)
        return f"paid {amount} to {to}"

    return ToolRegistry([pay])


async def test_approval_check_true_asks_even_under_an_allow_rule(recorder: Recorder) -> None:
    """A needs_approval function that says True makes the call wait for a person although an
    allow rule matches; False leaves the policy's allow."""
    registry = _payments(recorder, lambda args: args["amount"] > 100)
    executor = Executor(registry, policy=Policy(allow=["pay"]))
    small = await executor.execute(ToolCall(id="1", name="pay", arguments={"to": "a", "amount": 5}))
    big = await executor.execute(ToolCall(id="2", name="pay", arguments={"to": "b", "amount": 500}))
    assert isinstance(small, Completed)
    request = _approval(big).request
    assert request.arguments == {"to": "b", "amount": 500}
    assert recorder.calls == [("pay", {"to": "a", "amount": 5})]
    done = await executor.resume(request.id, approve=True)
    assert isinstance(done, Completed) and recorder.count("pay") == 2


async def test_approval_check_never_beats_a_deny_rule(recorder: Recorder) -> None:
    """A check that says no approval is needed leaves a deny rule in force."""
    registry = _payments(recorder, lambda args: False)
    executor = Executor(registry, policy=Policy(allow=["pay"], deny=["pay(to=mallory)"]))
    outcome = await executor.execute(
        ToolCall(id="1", name="pay", arguments={"to": "mallory", "amount": 1})
    )
    assert _kind(outcome) == "denied" and recorder.count("pay") == 0


async def test_async_approval_check_with_context(recorder: Recorder) -> None:
    """An async check taking the ToolContext sees the call's session."""
    seen: list[str | None] = []

    async def check(args: Mapping[str, Any], ctx: ToolContext) -> bool:
        seen.append(ctx.session_id)
        return ctx.session_id != "trusted"

    executor = Executor(_payments(recorder, check), policy=Policy.allow_all())
    trusted = await executor.execute(
        ToolCall(id="1", name="pay", arguments={"to": "a", "amount": 1}, session_id="trusted")
    )
    other = await executor.execute(
        ToolCall(id="2", name="pay", arguments={"to": "a", "amount": 1}, session_id="guest")
    )
    assert isinstance(trusted, Completed)
    _approval(other)
    assert seen == ["trusted", "guest"]


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(lambda args: 1 / 0, id="raises"),
        pytest.param(lambda args: "yes", id="not-a-bool"),
        pytest.param(lambda args: None, id="forgot-to-return"),
    ],
)
async def test_failing_approval_check_fails_the_call_cleanly(
    recorder: Recorder, check: Any
) -> None:
    """A check that raises or answers something other than a bool fails the call as denied,
    with a message naming the check; the tool never runs and execute does not raise."""
    executor = Executor(_payments(recorder, check), policy=Policy.allow_all())
    outcome = await executor.execute(
        ToolCall(id="1", name="pay", arguments={"to": "a", "amount": 1})
    )
    assert isinstance(outcome, Failed) and _kind(outcome) == "denied"
    assert "needs_approval" in outcome.result.text
    assert recorder.count("pay") == 0


async def test_approval_check_applies_through_a_prefix(recorder: Recorder) -> None:
    """A prefixed (renamed) tool keeps its approval check."""
    registry = _payments(recorder, lambda args: True).prefixed("bank")
    executor = Executor(registry, policy=Policy.allow_all())
    outcome = await executor.execute(
        ToolCall(id="1", name="bank.pay", arguments={"to": "a", "amount": 1})
    )
    _approval(outcome)
    assert recorder.count("pay") == 0


async def test_resume_runs_the_approval_check_again_under_a_deny(recorder: Recorder) -> None:
    """Approved edited arguments go through the same decision: a deny rule on them wins and
    the approval is used up."""
    registry = _payments(recorder, lambda args: True)
    executor = Executor(registry, policy=Policy(allow=["pay"], deny=["pay(to=mallory)"]))
    request = _approval(
        await executor.execute(ToolCall(id="1", name="pay", arguments={"to": "bob", "amount": 9}))
    ).request
    edited = await executor.resume(
        request.id, approve=True, arguments={"to": "mallory", "amount": 9}
    )
    assert _kind(edited) == "denied"
    assert (await executor.approvals.get(request.id)).status == "consumed"
    assert recorder.count("pay") == 0
