"""The SQLite store's leases: a file written before them gains the column, and a resume of a
question whose lease ran out runs nothing. What every store does with a lease is in
``contract/test_leases.py``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from invokit import Executor, Policy, ToolCall
from invokit.approvals import SqliteApprovalStore
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
