"""Approvals: bound to the exact call, single-use, expiring, never granted by a timeout."""

from __future__ import annotations

import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import ApprovalDecision, ApprovalRequest, MemoryApprovalStore
from invokit.exceptions import ApprovalAlreadyUsed
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted, Limits
from invokit.permissions import FileWrite, Policy, ShellExec

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


async def test_approve_once_runs_exactly_once(registry: ToolRegistry, recorder: Recorder) -> None:
    """An approved call runs once; resuming the same approval again raises."""
    executor = Executor(registry)
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    )
    request = interrupt.request
    assert request.tool == "delete"
    assert request.arguments == {"path": "a"}
    outcome = await executor.resume(request.id, approve=True, by="alice")
    assert isinstance(outcome, Completed)
    assert outcome.result.text == "deleted a"
    assert outcome.result.metadata["approval_id"] == request.id
    with pytest.raises(ApprovalAlreadyUsed):
        await executor.resume(request.id, approve=True)
    assert recorder.count("delete") == 1


async def test_denial_reason_reaches_the_model(registry: ToolRegistry, recorder: Recorder) -> None:
    """A denied approval fails with approval_denied and the person's reason; nothing runs."""
    executor = Executor(registry)
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    )
    outcome = await executor.resume(interrupt.id, approve=False, reason="keep that file")
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "approval_denied"
    assert "keep that file" in outcome.result.text
    assert recorder.count("delete") == 0


async def test_approval_for_call_a_cannot_run_call_b(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """Another call (other arguments) is asked about anew; A's approval runs only A."""
    executor = Executor(registry)
    first = _approval(
        await executor.execute(ToolCall(id="a", name="delete", arguments={"path": "a"}))
    )
    await executor.approvals.resolve(first.id, ApprovalDecision(approved=True))
    second = await executor.execute(ToolCall(id="b", name="delete", arguments={"path": "b"}))
    assert isinstance(second, Interrupted)
    assert recorder.count("delete") == 0
    outcome = await executor.resume(first.id)
    assert isinstance(outcome, Completed)
    assert recorder.calls == [("delete", {"path": "a"})]


async def test_changed_spec_invalidates_the_approval(recorder: Recorder) -> None:
    """An approval for one version of a tool cannot run a changed version."""

    @tool(destructive=True)
    async def drop(table: str) -> str:
        """Drop a table."""
        recorder.saw("drop", table=table)
        return "dropped"

    registry = ToolRegistry([drop])
    executor = Executor(registry)
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="drop", arguments={"table": "t"}))
    )
    changed = drop.spec.with_description("Drop a table and all its backups.")
    drop.current_spec = lambda: changed  # type: ignore[method-assign]
    outcome = await executor.resume(interrupt.id, approve=True)
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "approval_mismatch"
    assert recorder.count("drop") == 0


async def test_edited_arguments_are_checked_again(recorder: Recorder) -> None:
    """Edited arguments are validated and decided again: a deny rule still wins."""

    @tool(permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write a file."""
        recorder.saw("write", path=path)
        return f"wrote {path}"

    executor = Executor([write], policy=Policy(deny=["write(path=**/.env)"]))
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="write", arguments={"path": "a.txt"}))
    )
    denied = await executor.resume(interrupt.id, approve=True, arguments={"path": "x/.env"})
    assert isinstance(denied, Failed)
    assert denied.result.error is not None and denied.result.error.kind == "denied"
    interrupt = _approval(
        await executor.execute(ToolCall(id="2", name="write", arguments={"path": "a.txt"}))
    )
    invalid = await executor.resume(interrupt.id, approve=True, arguments={"path": 3})
    assert isinstance(invalid, Failed)
    assert invalid.result.error is not None and invalid.result.error.kind == "invalid_arguments"
    interrupt = _approval(
        await executor.execute(ToolCall(id="3", name="write", arguments={"path": "a.txt"}))
    )
    edited = await executor.resume(interrupt.id, approve=True, arguments={"path": "b.txt"})
    assert isinstance(edited, Completed)
    assert recorder.calls == [("write", {"path": "b.txt"})]


async def test_unresolved_request_expires_and_counts_as_denied(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A request past its time is refused, never approved by the timeout."""
    executor = Executor(registry, limits=Limits(approval_ttl=0.01))
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    )
    import anyio

    await anyio.sleep(0.05)
    outcome = await executor.resume(interrupt.id, approve=True)
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "approval_expired"
    assert recorder.count("delete") == 0


async def test_session_scope_covers_later_calls_in_that_session_only(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """Approve for the session: the same tool runs without asking in that session, not in another."""
    executor = Executor(registry)
    call = ToolCall(id="1", name="delete", arguments={"path": "a"}, session_id="s1")
    interrupt = _approval(await executor.execute(call))
    assert isinstance(await executor.resume(interrupt.id, approve=True, scope="session"), Completed)
    again = await executor.execute(
        ToolCall(id="2", name="delete", arguments={"path": "b"}, session_id="s1")
    )
    other = await executor.execute(
        ToolCall(id="3", name="delete", arguments={"path": "c"}, session_id="s2")
    )
    assert isinstance(again, Completed)
    assert isinstance(other, Interrupted)
    assert recorder.count("delete") == 2


async def test_always_scope_records_a_standing_rule(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """Approve always: the rule is recorded in the store and later identical calls run; a tool
    that declares no requests gets a rule pinned to its arguments, so other arguments ask."""
    store = MemoryApprovalStore()
    executor = Executor(registry, approvals=store)
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    )
    assert isinstance(await executor.resume(interrupt.id, approve=True, scope="always"), Completed)
    assert [r.rule for r in await store.always_rules()] == ['delete(path="a")']
    fresh = Executor(registry, approvals=store)
    again = await fresh.execute(ToolCall(id="2", name="delete", arguments={"path": "a"}))
    assert isinstance(again, Completed)
    other = await fresh.execute(ToolCall(id="3", name="delete", arguments={"path": "b"}))
    assert isinstance(other, Interrupted)


async def test_inline_approver_decides(registry: ToolRegistry, recorder: Recorder) -> None:
    """With an approver the executor awaits it inline; a failing approver never approves."""
    seen: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(request)
        return ApprovalDecision(
            approved=request.arguments["path"] != "secret", reason="not that one"
        )

    executor = Executor(registry, approver=approve)
    ok = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    no = await executor.execute(ToolCall(id="2", name="delete", arguments={"path": "secret"}))
    assert isinstance(ok, Completed)
    assert isinstance(no, Failed) and "not that one" in no.result.text

    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("approver crashed")

    crashed = await Executor(registry, approver=broken).execute(
        ToolCall(id="3", name="delete", arguments={"path": "b"})
    )
    assert isinstance(crashed, Failed)
    assert crashed.result.error is not None and crashed.result.error.kind == "approval_failed"
    assert recorder.calls == [("delete", {"path": "a"})]
    assert [r.arguments for r in seen] == [{"path": "a"}, {"path": "secret"}]


async def test_approval_decided_elsewhere_lets_the_retried_call_run(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """When a person approves in another place, the model's identical retry runs (once)."""
    executor = Executor(registry)
    call = ToolCall(id="1", name="delete", arguments={"path": "a"})
    interrupt = _approval(await executor.execute(call))
    await executor.approvals.resolve(interrupt.id, ApprovalDecision(approved=True, by="cli"))
    retried = await executor.execute(ToolCall(id="2", name="delete", arguments='{"path":"a"}'))
    assert isinstance(retried, Completed)
    third = await executor.execute(ToolCall(id="3", name="delete", arguments={"path": "a"}))
    assert isinstance(third, Interrupted)
    assert recorder.count("delete") == 1


async def test_audit_events_say_who_approved_what(registry: ToolRegistry) -> None:
    """Events record the request, the decision with who made it, and what ran."""
    sink = ListSink()
    executor = Executor(registry, events=[sink])
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    )
    await executor.resume(interrupt.id, approve=True, by="alice")
    requested = sink.of("approval_requested")[0].data
    resolved = sink.of("approval_resolved")[0].data
    completed = sink.of("completed")[0].data
    assert requested["arguments"] == {"path": "a"}
    assert resolved["by"] == "alice" and resolved["approved"] is True
    assert completed["approval_id"] == interrupt.id and completed["arguments"] == {"path": "a"}


async def test_wider_scope_decided_elsewhere_is_remembered(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A session approval given in another place covers later calls once the retry ran."""
    executor = Executor(registry)
    call = ToolCall(id="1", name="delete", arguments={"path": "a"}, session_id="s")
    interrupt = _approval(await executor.execute(call))
    await executor.approvals.resolve(
        interrupt.id, ApprovalDecision(approved=True, scope="session", by="cli")
    )
    assert isinstance(await executor.execute(call), Completed)
    later = await executor.execute(
        ToolCall(id="2", name="delete", arguments={"path": "b"}, session_id="s")
    )
    assert isinstance(later, Completed)
    assert recorder.count("delete") == 2


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["echo", "hi", " "], id="space-word"),
        pytest.param(["echo", "", "--secret-flag"], id="empty-word"),
    ],
)
async def test_always_without_an_exact_rule_stays_once(argv: list[str]) -> None:
    """When no rule can say exactly what was approved, "always" runs the call once, records
    nothing and never raises."""
    ran: list[list[str]] = []

    @tool(permissions=lambda args: [ShellExec(argv=tuple(args["argv"]))])
    async def run(argv: list[str]) -> str:
        """Run a command."""
        ran.append(argv)
        return "ok"

    store = MemoryApprovalStore()
    executor = Executor([run], approvals=store)
    interrupt = _approval(
        await executor.execute(ToolCall(id="1", name="run", arguments={"argv": argv}))
    )
    with pytest.warns(RuntimeWarning, match="approved once only"):
        outcome = await executor.resume(interrupt.id, approve=True, scope="always")
    assert isinstance(outcome, Completed)
    assert await store.always_rules() == []
    assert ran == [argv]
