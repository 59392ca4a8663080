"""The tables of the SQLite approval store, and bringing an older file up to date."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from invokit.approvals._sqlcore import RULE
from invokit.approvals._standing import StandingRule

_SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
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
CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, created_at);
CREATE INDEX IF NOT EXISTS approvals_call
    ON approvals (json_extract(request, '$.call.id'), session_id, created_at);
-- find_approved seeks the arguments hash: an asking call reads the rows of its own call, not
-- every approved-but-unused row of the tool. An expression index needs no new column, so a
-- file written before it just gets the index when opened, and older invokit still reads it.
CREATE INDEX IF NOT EXISTS approvals_bound
    ON approvals (json_extract(request, '$.arguments_hash'), tool, session_id, status);
"""

_GRANTS = """
CREATE TABLE IF NOT EXISTS session_grants (
    session_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    spec_fingerprint TEXT NOT NULL,
    project TEXT,
    granted_at REAL NOT NULL,
    by TEXT,
    approval_id TEXT
);
CREATE INDEX IF NOT EXISTS session_grants_key
    ON session_grants (session_id, tool, spec_fingerprint, project);
"""

_CALLS = """
CREATE TABLE IF NOT EXISTS quota_calls (
    key TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS quota_calls_key ON quota_calls (key, at);
"""

SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of a file this code wrote: 1 scopes standing rules, 2 gives session
grants a project."""

_STANDING = """
CREATE TABLE IF NOT EXISTS standing_rules (
    id TEXT PRIMARY KEY,
    rule TEXT NOT NULL,
    project TEXT,
    server TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    by TEXT,
    UNIQUE (rule, project, server, fingerprint)
)
"""


def _migrate(conn: sqlite3.Connection, clock: Callable[[], float]) -> None:
    """Bring a file to :data:`SCHEMA_VERSION`, once, even with other processes opening it.

    Version 0 (before scopes) kept "approve always" rules in ``always_rules`` with no scope:
    they move to ``standing_rules`` with no project, where they apply nowhere and are listed as
    legacy so a person can revoke them (or approve again in a project). Version 1 kept session
    grants without a project: they keep a ``NULL`` project, which only a store caller without a
    project matches (an executor always has one).
    """
    conn.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it done
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"the approval store was written by a newer invokit (schema {version}; this one "
                f"reads up to {SCHEMA_VERSION})"
            )
        if version < 1:
            conn.execute(_STANDING)
            old = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'always_rules'"
            ).fetchone()
            if old is not None:
                for rule, added_at in conn.execute(
                    "SELECT rule, added_at FROM always_rules ORDER BY added_at, rule"
                ).fetchall():
                    legacy = StandingRule.new(
                        rule,
                        project=None,
                        server=None,
                        fingerprint=None,
                        created_at=added_at if added_at is not None else clock(),
                        by=None,
                    )
                    conn.execute(
                        f"INSERT INTO standing_rules ({RULE}) VALUES (?, ?, NULL, '', '', ?, NULL)",
                        (legacy.id, legacy.rule, legacy.created_at),
                    )
                conn.execute("DROP TABLE always_rules")
        if version < 2:
            _grants_with_project(conn)
        if version < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _grants_with_project(conn: sqlite3.Connection) -> None:
    """Version 2: ``session_grants`` gets a ``project`` column (``NULL`` for the grants already
    there); the table is rebuilt because the old primary key left the project out."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(session_grants)").fetchall()}
    if "project" in columns:
        return
    if columns:
        conn.execute("ALTER TABLE session_grants RENAME TO session_grants_v1")
    for statement in _GRANTS.split(";"):
        if statement.strip():
            conn.execute(statement)
    if not columns:
        return  # a new file
    conn.execute(
        "INSERT INTO session_grants (session_id, tool, spec_fingerprint, project, granted_at) "
        "SELECT session_id, tool, spec_fingerprint, NULL, granted_at FROM session_grants_v1"
    )
    conn.execute("DROP TABLE session_grants_v1")


_LEASE_INDEX = """
CREATE INDEX IF NOT EXISTS approvals_lease ON approvals (lease_until)
    WHERE status = 'pending' AND lease_until IS NOT NULL
"""


def _add_leases(conn: sqlite3.Connection) -> None:
    """The ``lease_until`` column (:mod:`invokit.approvals._lease`), added to a file written
    before it: a nullable column, so older invokit still reads the file (and sees no lease)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(approvals)").fetchall()}
    if "lease_until" not in columns:
        try:
            conn.execute("ALTER TABLE approvals ADD COLUMN lease_until REAL")
        except sqlite3.OperationalError as exc:  # another process added it meanwhile
            if "duplicate column" not in str(exc):
                raise
    conn.execute(_LEASE_INDEX)


def _add_givers(conn: sqlite3.Connection) -> None:
    """The ``by`` and ``approval_id`` columns of ``session_grants`` (who gave a grant, by
    answering which approval), added to a file written before them: nullable columns, so older
    invokit still reads the file, and its grants read back with no giver."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(session_grants)").fetchall()}
    for column in ("by", "approval_id"):
        if column in columns:
            continue
        try:
            conn.execute(f"ALTER TABLE session_grants ADD COLUMN {column} TEXT")
        except sqlite3.OperationalError as exc:  # another process added it meanwhile
            if "duplicate column" not in str(exc):
                raise


_INTERRUPTS = """
CREATE TABLE IF NOT EXISTS interrupts (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    taken_at REAL
);
"""


def open_schema(conn: sqlite3.Connection, clock: Callable[[], float]) -> None:
    """Create the tables a new file lacks and migrate an older one to :data:`SCHEMA_VERSION`."""
    conn.executescript(_SCHEMA)
    conn.executescript(_INTERRUPTS)
    conn.executescript(_CALLS)
    _add_leases(conn)
    _migrate(conn, clock)  # creates session_grants in a new file: its columns come after
    _add_givers(conn)
