"""The SQLite store's leases: a file written before them gains the column, and a resume of a
question whose lease ran out runs nothing; the keeper renews while a sweep is slow. What every store does with a lease is in
``contract/test_leases.py``."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from invokit import Executor, Policy, ToolCall
from invokit.approvals import ApprovalRecord, MemoryApprovalStore, SqliteApprovalStore
from invokit.approvals._lease import LeaseKeeper, leased
from invokit.builtin import filesystem
from invokit.execution import Failed, Interrupted

from .helpers import Clock, make_request

pytestmark = pytest.mark.anyio


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


class SlowToSweep(MemoryApprovalStore):
    """A memory store whose sweep of lapsed questions never finishes (a database withdrawing
    many of them under load), and which counts the renewals of each lease."""

    def __init__(self) -> None:
        super().__init__()
        self.renewed = 0
        self.renewed_again = anyio.Event()

    async def renew_lease(self, approval_id: str, until: float | None) -> ApprovalRecord:
        self.renewed += 1
        if self.renewed >= 3:  # taken, then renewed twice by the keeper
            self.renewed_again.set()
        return await super().renew_lease(approval_id, until)

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_slow_sweep_does_not_hold_back_the_renewals() -> None:
    """Recording other processes' lapsed questions as withdrawn can take long on a loaded
    database; meanwhile this process's own leases are still renewed (before, the renewals
    waited for the sweep and the leases ran out behind it)."""
    store = SlowToSweep()
    request = make_request(Clock(time.time()))
    await store.put(request)
    keeper = LeaseKeeper(store, ttl=0.3)
    async with anyio.create_task_group() as group:
        group.start_soon(keeper.run)
        await anyio.wait_all_tasks_blocked()
        with leased(keeper, lambda record: None) as lease:
            await lease.hold(request.id)
            with anyio.fail_after(30):
                await store.renewed_again.wait()
        group.cancel_scope.cancel()
    assert (await store.get(request.id)).status == "pending"
