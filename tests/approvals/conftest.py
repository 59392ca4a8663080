"""Fixtures shared by the approval tests: a settable clock and every store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit.approvals import ApprovalStore, MemoryApprovalStore, SqliteApprovalStore

from .helpers import Clock

STORES = ["memory", "sqlite", "postgres"]


@pytest.fixture
def clock() -> Clock:
    """A hand-moved clock starting at a fixed time."""
    return Clock()


@pytest.fixture(params=STORES)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[ApprovalStore]:
    """Each store implementation (PostgreSQL on a fresh database), on the test's clock."""
    made: ApprovalStore
    if request.param == "memory":
        made = MemoryApprovalStore(clock=clock)
    elif request.param == "sqlite":
        made = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3", clock=clock)
    else:
        from invokit.postgres import PostgresApprovalStore

        made = PostgresApprovalStore(request.getfixturevalue("postgres_url"), clock=clock)
    yield made
    await made.close()
