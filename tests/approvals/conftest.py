"""Fixtures shared by the approval tests: a settable clock and both stores."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit.approvals import ApprovalStore, MemoryApprovalStore, SqliteApprovalStore

from .helpers import Clock


@pytest.fixture
def clock() -> Clock:
    """A hand-moved clock starting at a fixed time."""
    return Clock()


@pytest.fixture(params=["memory", "sqlite"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[ApprovalStore]:
    """Each store implementation, on the test's clock."""
    made: ApprovalStore
    if request.param == "memory":
        made = MemoryApprovalStore(clock=clock)
    else:
        made = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3", clock=clock)
    yield made
    await made.close()
