"""Grants recorded before the stores kept their givers: a SQLite file and a PostgreSQL
database written then gain the columns on open, and their grants read back with no giver.
That every store keeps the giver: ``contract/test_grant_givers.py``."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from invokit.approvals import SqliteApprovalStore

from .helpers import Clock

pytestmark = pytest.mark.anyio


def _file_without_givers(path: Path) -> None:
    """A version-2 file as written before givers: ``session_grants`` without ``by`` and
    ``approval_id``, holding one grant."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    SqliteApprovalStore(path)  # the current schema; then make session_grants the older one
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TABLE session_grants;
        CREATE TABLE session_grants (
            session_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            spec_fingerprint TEXT NOT NULL,
            project TEXT,
            granted_at REAL NOT NULL
        );
        INSERT INTO session_grants VALUES ('s1', 'fs.write', 'f1', '/p', 1000.0);
        """
    )
    conn.close()


async def test_an_older_sqlite_file_gains_the_giver_columns(tmp_path: Path) -> None:
    """The old grant still counts and names nobody; a new grant names its giver, also when
    the file is opened again."""
    path = tmp_path / "state" / "approvals.sqlite3"
    _file_without_givers(path)
    store = SqliteApprovalStore(path)
    old = await store.session_grant("s1", "fs.write", "f1", project="/p")
    assert old is not None and (old.at, old.by, old.approval_id) == (1000.0, None, None)
    await store.grant_session("s2", "fs.write", "f1", project="/p", by="ann", approval_id="apr_1")
    await store.close()
    again = SqliteApprovalStore(path)
    new = await again.session_grant("s2", "fs.write", "f1", project="/p")
    assert new is not None and (new.by, new.approval_id) == ("ann", "apr_1")
    await again.close()


async def test_a_version_3_postgres_database_gains_the_giver_columns(postgres_url: str) -> None:
    """A database at schema 3 with a grant: migrated, the grant counts and names nobody, and a
    new grant names its giver."""
    import psycopg

    from invokit.postgres import SCHEMA_VERSION, PostgresApprovalStore
    from invokit.postgres._schema import MIGRATIONS

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in MIGRATIONS[1] + MIGRATIONS[2] + MIGRATIONS[3]:
            conn.execute(statement)
        conn.execute(
            "CREATE TABLE invokit_schema (id integer PRIMARY KEY CHECK (id = 1), "
            "version integer NOT NULL)"
        )
        conn.execute("INSERT INTO invokit_schema (id, version) VALUES (1, 3)")
        conn.execute(
            "INSERT INTO invokit_session_grants (session_id, tool, spec_fingerprint, project, "
            "granted_at) VALUES ('s1', 'fs.write', 'f1', '/p', 1000.0)"
        )
    store = PostgresApprovalStore(postgres_url, clock=Clock(time.time()))
    old = await store.session_grant("s1", "fs.write", "f1", project="/p")
    assert old is not None and (old.at, old.by, old.approval_id) == (1000.0, None, None)
    await store.grant_session("s2", "fs.write", "f1", project="/p", by="ann", approval_id="apr_1")
    new = await store.session_grant("s2", "fs.write", "f1", project="/p")
    assert new is not None and (new.by, new.approval_id) == ("ann", "apr_1")
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SELECT version FROM invokit_schema").fetchone()
    assert version == (SCHEMA_VERSION,) and SCHEMA_VERSION >= 4
    await store.close()
