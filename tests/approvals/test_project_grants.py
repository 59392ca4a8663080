"""A request's project round-trips, and a version-1 SQLite file's grants keep no project: they
match only a caller without one. That every store matches a project: ``contract/``."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from invokit.approvals import ApprovalRequest, SqliteApprovalStore
from invokit.approvals._sqlite import SCHEMA_VERSION

from .helpers import Clock, make_request

pytestmark = pytest.mark.anyio


async def test_request_project_round_trips(clock: Clock) -> None:
    """The project is part of a request's JSON form; an old dict without it reads as None."""
    request = replace(make_request(clock), project="/p")
    assert ApprovalRequest.from_dict(request.to_dict()) == request
    old = request.to_dict()
    del old["project"]
    assert ApprovalRequest.from_dict(old).project is None


def _version_1_file(path: Path) -> None:
    """A version-1 file: session grants keyed without a project, holding one grant."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    SqliteApprovalStore(path)  # creates the current schema; then make it look like version 1
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TABLE session_grants;
        CREATE TABLE session_grants (
            session_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            spec_fingerprint TEXT NOT NULL,
            granted_at REAL NOT NULL,
            PRIMARY KEY (session_id, tool, spec_fingerprint)
        );
        INSERT INTO session_grants VALUES ('s1', 'fs.write', 'f1', 1000.0);
        PRAGMA user_version = 1;
        """
    )
    conn.close()


async def test_version_1_grants_get_no_project(tmp_path: Path) -> None:
    """Migrating to version 2 keeps a version-1 grant with a NULL project: it covers no
    project's executor; the same grant can then be given in a project."""
    path = tmp_path / "state" / "approvals.sqlite3"
    _version_1_file(path)
    store = SqliteApprovalStore(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    assert conn.execute("SELECT project FROM session_grants").fetchall() == [(None,)]
    conn.close()
    assert await store.has_session_grant("s1", "fs.write", "f1")
    assert not await store.has_session_grant("s1", "fs.write", "f1", project="/p")
    await store.grant_session("s1", "fs.write", "f1", project="/p")
    assert await store.has_session_grant("s1", "fs.write", "f1", project="/p")
    await store.close()
    again = SqliteApprovalStore(path)  # opening a migrated file again changes nothing
    assert await again.has_session_grant("s1", "fs.write", "f1", project="/p")
    assert await again.has_session_grant("s1", "fs.write", "f1")
    await again.close()
