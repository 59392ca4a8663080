"""Every store: a question held by a lease lives only as long as the lease is renewed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from invokit import Executor, Policy, ToolCall
from invokit.approvals import ApprovalDecision, ApprovalStore, SqliteApprovalStore
from invokit.approvals._lease import LeasedStore
from invokit.builtin import filesystem
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError
from invokit.execution import Failed, Interrupted

from .helpers import Clock, make_request

pytestmark = pytest.mark.anyio

YES = ApprovalDecision.approve(by="cli", channel="cli")


def leased(store: ApprovalStore) -> LeasedStore:
    assert isinstance(store, LeasedStore)
    return store


async def test_a_lease_that_runs_out_withdraws_the_question(
    store: ApprovalStore, clock: Clock
) -> None:
    """Past its lease the question is withdrawn by the executor, says why, is no longer
    listed, and no channel can approve it; the sweep records it once."""
    request = make_request(clock)
    await store.put(request)
    assert (await leased(store).renew_lease(request.id, clock.now + 10)).status == "pending"
    clock.now += 11
    record = await store.get(request.id)
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "executor"
    assert "its caller went away at" in (record.decision.reason or "")
    assert await store.list_pending() == []
    with pytest.raises(ApprovalAlreadyUsed) as refused:
        await store.resolve(request.id, YES)
    assert refused.value.detail.startswith("withdrawn: its caller went away at")
    with pytest.raises(ApprovalError):
        await store.consume(request.id)
    swept = await leased(store).withdraw_lapsed()
    assert [r.request.id for r in swept] == [request.id]
    assert swept[0].decision == record.decision
    assert await leased(store).withdraw_lapsed() == []
    assert (await store.get(request.id)).decision == record.decision


async def test_a_renewed_lease_keeps_the_question(store: ApprovalStore, clock: Clock) -> None:
    """Renewed before it runs out, the lease holds: the question waits and can be approved."""
    request = make_request(clock)
    await store.put(request)
    for _ in range(5):
        await leased(store).renew_lease(request.id, clock.now + 10)
        clock.now += 8
    assert await leased(store).withdraw_lapsed() == []
    assert [r.id for r in await store.list_pending()] == [request.id]
    assert (await store.resolve(request.id, YES)).status == "approved"


async def test_a_lease_that_ran_out_is_not_renewed(store: ApprovalStore, clock: Clock) -> None:
    """A late renewal does not bring a withdrawn question back; nor does a release."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    clock.now += 10
    assert (await leased(store).renew_lease(request.id, clock.now + 10)).status == "denied"
    assert (await leased(store).renew_lease(request.id, None)).status == "denied"
    await leased(store).withdraw_lapsed()
    clock.now -= 5  # recorded: even a clock read earlier again finds it withdrawn
    assert (await store.get(request.id)).status == "denied"


async def test_a_released_lease_leaves_the_question_waiting(
    store: ApprovalStore, clock: Clock
) -> None:
    """Released (nobody waits, the model was told to call again), the question stays pending
    until it expires, and can be approved long after the lease would have run out."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    assert (await leased(store).renew_lease(request.id, None)).status == "pending"
    clock.now += 600
    assert await leased(store).withdraw_lapsed() == []
    assert (await store.resolve(request.id, YES)).status == "approved"


async def test_a_withdrawal_after_the_lease_ran_out_keeps_the_first_no(
    store: ApprovalStore, clock: Clock
) -> None:
    """The lease ran out: a later "no" changes nothing, and a decided question has no lease
    to renew."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    clock.now += 20
    lapsed = (await store.get(request.id)).decision
    record = await store.withdraw(request.id, ApprovalDecision.deny("no", by="cli"))
    assert record.decision == lapsed
    other = make_request(clock, path="src/b.py")
    await store.put(other)
    await store.resolve(other.id, YES)
    assert (await leased(store).renew_lease(other.id, clock.now + 10)).status == "approved"


async def test_another_process_sees_the_lease_run_out(tmp_path: Path, clock: Clock) -> None:
    """Two SQLite connections (a replica that died, and the CLI): the second sees the question
    withdrawn once the first stops renewing, and cannot approve it."""
    path = tmp_path / "approvals.sqlite3"
    holder = SqliteApprovalStore(path, clock=clock)
    cli = SqliteApprovalStore(path, clock=clock)
    request = make_request(clock)
    await holder.put(request)
    await holder.renew_lease(request.id, clock.now + 10)
    clock.now += 5
    assert [r.id for r in await cli.list_pending()] == [request.id]
    clock.now += 6
    with pytest.raises(ApprovalAlreadyUsed, match="withdrawn: its caller went away"):
        await cli.resolve(request.id, YES)
    assert [r.request.id for r in await cli.withdraw_lapsed()] == [request.id]
    await holder.close()
    await cli.close()


async def test_a_file_written_before_leases_gets_the_column(tmp_path: Path, clock: Clock) -> None:
    """An approval file written before leases (no ``lease_until``): opened, it gains the
    column, its pending question keeps waiting without a lease, and a new one can be leased."""
    from tests.approvals.test_standing_migration import OLD_SCHEMA

    path = tmp_path / "approvals.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(OLD_SCHEMA)
    before = make_request(clock)
    old.execute(
        "INSERT INTO approvals (id, tool, session_id, status, request, created_at, expires_at) "
        "VALUES (?, ?, ?, 'pending', ?, ?, ?)",
        (
            before.id,
            before.tool,
            before.session_id,
            json.dumps(before.to_dict()),
            before.created_at,
            before.expires_at,
        ),
    )
    old.commit()
    old.close()
    store = SqliteApprovalStore(path, clock=clock)
    after = make_request(clock, path="src/b.py")
    await store.put(after)
    await store.renew_lease(after.id, clock.now + 10)
    clock.now += 60
    assert [r.id for r in await store.list_pending()] == [before.id]
    assert (await store.get(after.id)).status == "denied"
    await store.close()


async def test_resume_of_a_question_whose_lease_ran_out_runs_nothing(
    tmp_path: Path, clock: Clock
) -> None:
    """``Executor.resume(approve=True)`` of a question whose lease ran out: nothing runs, and
    the model reads that it was withdrawn because its caller went away."""
    root = tmp_path / "root"
    root.mkdir()
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3", clock=clock)
    executor = Executor(
        filesystem(root), policy=Policy(ask=["fs.write"], root=root), approvals=store
    )
    outcome = await executor.execute(
        ToolCall(id="w1", name="fs.write", arguments={"path": "x.txt", "content": "x"})
    )
    assert isinstance(outcome, Interrupted)
    approval_id = outcome.interrupt.id
    await store.renew_lease(approval_id, clock.now + 10)
    clock.now += 11
    resumed = await executor.resume(approval_id, approve=True)
    assert isinstance(resumed, Failed)
    assert resumed.result.error is not None and resumed.result.error.kind == "approval_denied"
    assert "went away" in resumed.result.error.message
    assert not (root / "x.txt").exists()
    await executor.aclose()
