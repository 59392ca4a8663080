"""The SQLite store finds an approved call by one index seek on its arguments hash, in a new file
and in a file written before the index existed."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.approvals._sqlite import SCHEMA_VERSION

from .helpers import Clock, make_request

pytestmark = pytest.mark.anyio


def _plans(store: SqliteApprovalStore, statements: list[str]) -> list[str]:
    """The query plan of each traced ``find_approved`` statement, one line per plan step."""
    conn = store._conn
    assert conn is not None
    plans = []
    for sql in statements:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
        plans.append("\n".join(row[-1] for row in rows))
    return plans


async def test_find_approved_seeks_the_arguments_hash(tmp_path: Path, clock: Clock) -> None:
    """With many approved-but-unused rows of the same tool and session, the lookup is a search
    of approvals_bound on the hash, tool, session and status, never a scan of the approved rows;
    a session-less lookup seeks too, and the answers are right."""
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3", clock=clock)
    for n in range(50):
        other = make_request(clock, path=f"src/{n}.py")
        await store.put(other)
        await store.resolve(other.id, ApprovalDecision.approve())
    mine = make_request(clock, path="mine.py")
    await store.put(mine)
    await store.resolve(mine.id, ApprovalDecision.approve())
    loose = make_request(clock, path="loose.py", session=None)
    await store.put(loose)
    await store.resolve(loose.id, ApprovalDecision.approve())
    conn = store._conn
    assert conn is not None
    traced: list[str] = []
    conn.set_trace_callback(traced.append)
    try:
        key = (mine.tool, mine.spec_fingerprint, mine.arguments_hash)
        assert await store.find_approved(*key, "s1") == mine
        assert await store.find_approved(*key, "s2") is None
        assert await store.find_approved(*key, None) is None
        assert await store.find_approved(mine.tool, "other", mine.arguments_hash, "s1") is None
        free = (loose.tool, loose.spec_fingerprint, loose.arguments_hash, None)
        assert await store.find_approved(*free) == loose
    finally:
        conn.set_trace_callback(None)
    statements = [sql for sql in traced if sql.lstrip().startswith("SELECT request")]
    assert len(statements) == 5
    for plan in _plans(store, statements):
        assert (
            "USING INDEX approvals_bound (<expr>=? AND tool=? AND session_id=? AND status=?)"
            in (plan)
        ), plan
        assert "SCAN" not in plan, plan
    await store.close()


def _pre_index_file(path: Path, request_json: str, created_at: float, expires_at: float) -> None:
    """A version-2 file as invokit wrote it before approvals_bound, holding one approved row."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            session_id TEXT,
            status TEXT NOT NULL,
            request TEXT NOT NULL,
            decision TEXT,
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            resolved_at REAL,
            consumed_at REAL
        );
        CREATE INDEX approvals_status ON approvals (status, created_at);
        CREATE INDEX approvals_call
            ON approvals (json_extract(request, '$.call.id'), session_id, created_at);
        CREATE TABLE session_grants (
            session_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            spec_fingerprint TEXT NOT NULL,
            project TEXT,
            granted_at REAL NOT NULL
        );
        CREATE TABLE standing_rules (
            id TEXT PRIMARY KEY,
            rule TEXT NOT NULL,
            project TEXT,
            server TEXT NOT NULL DEFAULT '',
            fingerprint TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            by TEXT,
            UNIQUE (rule, project, server, fingerprint)
        );
        PRAGMA user_version = 2;
        """
    )
    decision = json.dumps(ApprovalDecision.approve().to_dict(include_credentials=True))
    request = json.loads(request_json)
    conn.execute(
        "INSERT INTO approvals (id, tool, session_id, status, request, decision, created_at, "
        "expires_at, resolved_at) VALUES (?, ?, ?, 'approved', ?, ?, ?, ?, ?)",
        (
            request["id"],
            request["tool"],
            request["session_id"],
            request_json,
            decision,
            created_at,
            expires_at,
            created_at,
        ),
    )
    conn.commit()
    conn.close()


async def test_a_file_from_before_the_index_gets_it_and_keeps_its_approvals(
    tmp_path: Path, clock: Clock
) -> None:
    """Opening a file written without approvals_bound builds the index once from the rows there:
    its approval is found (and consumed) through the index, the schema version is unchanged (so
    an older invokit still opens the file), and opening it again changes nothing."""
    path = tmp_path / "state" / "approvals.sqlite3"
    request = replace(make_request(clock, path="old.py"), project="/p")
    _pre_index_file(path, json.dumps(request.to_dict()), request.created_at, request.expires_at)
    store = SqliteApprovalStore(path, clock=clock)
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, request.session_id)
    assert await store.find_approved(*key, project="/p") == request
    assert await store.find_approved(*key, project="/q") is None
    await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "approvals_bound" in names
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    again = SqliteApprovalStore(path, clock=clock)
    assert await again.find_approved(*key, project="/p") == request
    await again.consume(request.id)
    assert await again.find_approved(*key, project="/p") is None
    await again.close()
