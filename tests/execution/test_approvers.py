"""Inline approvers that misbehave: a bool, an exception, no answer, a caller that goes away."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from invokit import ToolCall, ToolRegistry
from invokit.approvals import ApprovalRequest, SqliteApprovalStore
from invokit.execution import Completed, Executor, Failed, Limits

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio


def _kind(outcome: object) -> str | None:
    assert isinstance(outcome, Failed | Completed)
    return outcome.result.error.kind if outcome.result.error is not None else None


@pytest.mark.parametrize(
    ("answer", "kind", "runs"),
    [pytest.param(True, None, 1, id="true"), pytest.param(False, "approval_denied", 0, id="false")],
)
async def test_approver_returning_a_bool(
    registry: ToolRegistry, recorder: Recorder, answer: bool, kind: str | None, runs: int
) -> None:
    """True approves once, False denies; execute does not raise."""

    async def approver(request: ApprovalRequest) -> bool:
        return answer

    executor = Executor(registry, approver=approver)
    outcome = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    assert _kind(outcome) == kind
    assert recorder.count("delete") == runs
    again = await executor.execute(ToolCall(id="2", name="delete", arguments={"path": "b"}))
    assert _kind(again) == kind  # "once": the next call is asked again
    assert recorder.count("delete") == 2 * runs


@pytest.mark.parametrize(
    "behaviour",
    [pytest.param("raise", id="raises"), pytest.param("nonsense", id="answers-nonsense")],
)
async def test_failing_approver_is_not_a_person_saying_no(
    registry: ToolRegistry, recorder: Recorder, tmp_path: Path, behaviour: str
) -> None:
    """An approver that raises or answers neither a decision nor a bool fails the call as
    ``approval_failed`` (not "a person denied"), and the request is recorded as denied by the
    executor, so no later approval can run it."""

    async def approver(request: ApprovalRequest) -> object:
        if behaviour == "raise":
            raise ConnectionError("terminal is gone")
        return "sure"

    store = SqliteApprovalStore(tmp_path / "a.sqlite3")
    executor = Executor(registry, approver=approver, approvals=store)  # type: ignore[arg-type]
    outcome = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    assert isinstance(outcome, Failed) and _kind(outcome) == "approval_failed"
    assert "approver failed" in outcome.result.text
    assert "A person denied" not in outcome.result.text
    (record,) = [await store.get(r.id) for r in await _all(store)]
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "executor"
    later = await executor.resume(record.request.id, approve=True)
    assert _kind(later) == "approval_denied"
    assert recorder.count("delete") == 0
    await executor.aclose()


async def _all(store: SqliteApprovalStore) -> list[ApprovalRequest]:
    import json
    import sqlite3

    with sqlite3.connect(store.path) as conn:
        rows = conn.execute("SELECT request FROM approvals").fetchall()
    return [ApprovalRequest.from_dict(json.loads(row[0])) for row in rows]


async def test_approver_that_never_answers_is_bounded_by_the_ttl(
    registry: ToolRegistry, recorder: Recorder, tmp_path: Path
) -> None:
    """An approver that hangs ends the call ``approval_expired`` when the approval's lifetime
    runs out; the request is no longer approvable and the tool never runs."""
    started = anyio.Event()

    async def approver(request: ApprovalRequest) -> bool:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    store = SqliteApprovalStore(tmp_path / "a.sqlite3")
    executor = Executor(
        registry, approver=approver, approvals=store, limits=Limits(approval_ttl=0.3)
    )
    # The approver never answers: only the request's 0.3 s lifetime can end the call within
    # this deadline (a bound on a hang, not a speed).
    with anyio.fail_after(30):
        outcome = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "a"}))
    assert started.is_set()
    assert _kind(outcome) == "approval_expired"
    (request,) = await _all(store)
    assert (await store.get(request.id)).status in ("expired", "denied")
    assert _kind(await executor.resume(request.id, approve=True)) in (
        "approval_expired",
        "approval_denied",
    )
    assert recorder.count("delete") == 0
    await executor.aclose()


async def test_cancel_while_asking_withdraws_the_request(
    registry: ToolRegistry, recorder: Recorder, tmp_path: Path
) -> None:
    """When the caller goes away while a person is being asked, the request is recorded as
    denied by the executor ("the caller went away"), an ``approval_resolved`` event says so,
    and approving it afterwards (as ``invokit approvals approve`` would) runs nothing."""
    asked = anyio.Event()
    seen: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> bool:
        seen.append(request)
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    sink = ListSink()
    store = SqliteApprovalStore(tmp_path / "a.sqlite3")
    executor = Executor(registry, approver=approver, approvals=store, events=[sink])
    async with anyio.create_task_group() as group:
        group.start_soon(executor.execute, ToolCall(id="1", name="delete", arguments={"path": "a"}))
        await asked.wait()
        group.cancel_scope.cancel()
    (request,) = seen
    record = await store.get(request.id)
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "executor"
    assert record.decision.reason == "the caller went away"
    (resolved,) = sink.of("approval_resolved")
    assert resolved.data["id"] == request.id and resolved.data["approved"] is False
    late = await executor.resume(request.id, approve=True, by="cli")
    assert _kind(late) == "approval_denied"
    assert recorder.count("delete") == 0
    await executor.aclose()
