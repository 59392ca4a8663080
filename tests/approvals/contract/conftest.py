"""The stores the contract runs against: each store alone, and two SQL stores on one
database (what two processes' connections see of each other)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit.approvals import ApprovalStore, MemoryApprovalStore, SqliteApprovalStore

from ..helpers import Clock

STORES = ["memory", "sqlite", "postgres"]
SHARED = ["sqlite", "postgres"]
"""The stores that several processes share: two of them can open one database."""


def _open(kind: str, request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> ApprovalStore:
    """A store of ``kind`` on the test's clock: SQLite in the test's file, PostgreSQL on the
    test's fresh database; opened twice, two stores on the same data."""
    if kind == "memory":
        return MemoryApprovalStore(clock=clock)
    if kind == "sqlite":
        return SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3", clock=clock)
    from invokit.postgres import PostgresApprovalStore

    return PostgresApprovalStore(request.getfixturevalue("postgres_url"), clock=clock)


@pytest.fixture(params=STORES)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[ApprovalStore]:
    """Each store implementation (PostgreSQL on a fresh database), on the test's clock."""
    made = _open(request.param, request, tmp_path, clock)
    yield made
    await made.close()


@pytest.fixture(params=SHARED)
async def twins(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[tuple[ApprovalStore, ApprovalStore]]:
    """Two stores of one kind on one database (two processes' connections), on the test's
    clock."""
    one = _open(request.param, request, tmp_path, clock)
    two = _open(request.param, request, tmp_path, clock)
    yield one, two
    await one.close()
    await two.close()
