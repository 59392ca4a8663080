"""The tables invokit keeps in PostgreSQL, created and migrated by invokit, versioned.

``invokit_schema`` holds one row: the version of the tables. A process that finds an older
version takes a transaction-scoped advisory lock, reads the version again and runs the missing
migrations in that one transaction, so whichever process gets there first migrates and the
others wait, then see it done. A database written by a newer invokit is refused.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 5
"""The version of the tables this invokit writes."""

MIGRATION_LOCK = 0x696E766F6B6974  # "invokit": the advisory lock key for migrations

_V1 = [
    """CREATE TABLE invokit_approvals (
        id text PRIMARY KEY,
        seq bigserial NOT NULL,
        tool text NOT NULL,
        call_id text NOT NULL,
        session_id text,
        project text,
        spec_fingerprint text NOT NULL,
        arguments_hash text NOT NULL,
        status text NOT NULL,
        request text NOT NULL,
        decision text,
        created_at double precision NOT NULL,
        expires_at double precision NOT NULL,
        resolved_at double precision,
        consumed_at double precision
    )""",
    "CREATE INDEX invokit_approvals_pending ON invokit_approvals (created_at, id) "
    "WHERE status = 'pending'",
    "CREATE INDEX invokit_approvals_approved ON invokit_approvals (tool, arguments_hash) "
    "WHERE status = 'approved'",
    "CREATE INDEX invokit_approvals_call ON invokit_approvals (call_id, created_at, seq)",
    """CREATE TABLE invokit_interrupts (
        id text PRIMARY KEY,
        data text NOT NULL,
        created_at double precision NOT NULL,
        expires_at double precision NOT NULL,
        taken_at double precision
    )""",
    """CREATE TABLE invokit_session_grants (
        session_id text NOT NULL,
        tool text NOT NULL,
        spec_fingerprint text NOT NULL,
        project text,
        granted_at double precision NOT NULL
    )""",
    # One grant per key; a grant without a project is its own key (NULL is not '').
    "CREATE UNIQUE INDEX invokit_session_grants_key ON invokit_session_grants "
    "(session_id, tool, spec_fingerprint, (project IS NULL), coalesce(project, ''))",
    """CREATE TABLE invokit_standing_rules (
        id text PRIMARY KEY,
        seq bigserial NOT NULL,
        rule text NOT NULL,
        project text NOT NULL,
        server text NOT NULL DEFAULT '',
        fingerprint text NOT NULL DEFAULT '',
        created_at double precision NOT NULL,
        by text,
        UNIQUE (rule, project, server, fingerprint)
    )""",
    """CREATE TABLE invokit_quota_calls (
        key text NOT NULL,
        at double precision NOT NULL
    )""",
    "CREATE INDEX invokit_quota_calls_key ON invokit_quota_calls (key, at)",
    """CREATE TABLE invokit_audit_events (
        id bigserial PRIMARY KEY,
        time double precision,
        type text NOT NULL,
        call_id text NOT NULL,
        tool text NOT NULL,
        session_id text,
        data text NOT NULL,
        decision_key text
    )""",
    "CREATE INDEX invokit_audit_events_call ON invokit_audit_events (call_id, id)",
    "CREATE INDEX invokit_audit_events_session ON invokit_audit_events (session_id, id)",
    # A decision is recorded once, whether the store wrote it with the change or a sink
    # received it from the executor afterwards.
    "CREATE UNIQUE INDEX invokit_audit_events_decision ON invokit_audit_events (decision_key) "
    "WHERE decision_key IS NOT NULL",
    """CREATE TABLE invokit_artifacts (
        handle text PRIMARY KEY,
        seq bigserial NOT NULL,
        body bytea NOT NULL,
        created_at double precision NOT NULL
    )""",
    "CREATE INDEX invokit_artifacts_seq ON invokit_artifacts (seq)",
    """CREATE TABLE invokit_mcp_pins (
        server text NOT NULL,
        tool text NOT NULL,
        fingerprint text NOT NULL,
        trusted_at double precision NOT NULL,
        PRIMARY KEY (server, tool)
    )""",
]

_V2 = [
    # invokit serve's per-project HTTP token, one for every replica.
    """CREATE TABLE invokit_serve_tokens (
        project text PRIMARY KEY,
        token text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    )""",
    # The replicas' journal of calls started and ended (a replica that died leaves its calls
    # open, its advisory lock freed).
    """CREATE TABLE invokit_executions (
        id text PRIMARY KEY,
        replica text NOT NULL,
        lock_key bigint NOT NULL,
        call_id text NOT NULL,
        tool text NOT NULL,
        session_id text,
        project text,
        started_at double precision NOT NULL,
        ended_at double precision,
        outcome text
    )""",
    "CREATE INDEX invokit_executions_open ON invokit_executions (replica) WHERE ended_at IS NULL",
]

_V3 = [
    # The lease of the call waiting for a question (invokit.approvals._lease): renewed by the
    # replica holding the call; a question whose lease ran out counts as withdrawn.
    "ALTER TABLE invokit_approvals ADD COLUMN lease_until double precision",
    "CREATE INDEX invokit_approvals_lease ON invokit_approvals (lease_until) "
    "WHERE status = 'pending' AND lease_until IS NOT NULL",
]

_V4 = [
    # Who gave a session grant and by answering which approval, so every replica names the
    # giver of a grant another one recorded (rows recorded before keep NULL: no giver known).
    "ALTER TABLE invokit_session_grants ADD COLUMN by text",
    "ALTER TABLE invokit_session_grants ADD COLUMN approval_id text",
]

_V5 = [
    # The OAuth tokens invokit holds as a client of remote MCP servers (invokit.postgres._oauth):
    # a server one replica signed in to is signed in for all of them.
    """CREATE TABLE invokit_mcp_oauth (
        server text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        expires_at double precision,
        PRIMARY KEY (server, key)
    )""",
]

MIGRATIONS: dict[int, list[str]] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5}
"""The statements that bring the tables from version ``n - 1`` to ``n``."""

_CREATE_VERSION = (
    "CREATE TABLE IF NOT EXISTS invokit_schema ("
    "id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
)
_EXISTS = "SELECT to_regclass('invokit_schema') IS NOT NULL"
# The version is read without a lock first (the common case: up to date); otherwise the table
# is created under the lock and the version read again.
_LOCK = f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"
_READ_LOCKED = "SELECT coalesce(max(version), 0) FROM invokit_schema"
_SET_VERSION = (
    "INSERT INTO invokit_schema (id, version) VALUES (1, %s) "
    "ON CONFLICT (id) DO UPDATE SET version = excluded.version"
)


class NewerSchema(ValueError):
    """The database was written by a newer invokit."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"the PostgreSQL store was written by a newer invokit (schema {version}; this one "
            f"reads up to {SCHEMA_VERSION})"
        )


def _steps(version: int) -> list[str]:
    if version > SCHEMA_VERSION:
        raise NewerSchema(version)
    steps: list[str] = []
    for target in range(version + 1, SCHEMA_VERSION + 1):
        steps.extend(MIGRATIONS[target])
    return steps


def _scalar(row: tuple[Any, ...] | None) -> int:
    return 0 if row is None or row[0] is None else int(row[0])


async def migrate(conn: Any) -> None:
    """Bring the database to :data:`SCHEMA_VERSION` over an autocommit ``AsyncConnection``."""
    if (await (await conn.execute(_EXISTS)).fetchone())[0] and not _steps(
        _scalar(await (await conn.execute(_READ_LOCKED)).fetchone())
    ):
        return
    async with conn.transaction():
        await conn.execute(_LOCK)
        await conn.execute(_CREATE_VERSION)
        version = _scalar(await (await conn.execute(_READ_LOCKED)).fetchone())
        for statement in _steps(version):
            await conn.execute(statement)
        if version < SCHEMA_VERSION:
            await conn.execute(_SET_VERSION, (SCHEMA_VERSION,))


def migrate_sync(conn: Any) -> None:
    """:func:`migrate` over an autocommit (blocking) ``Connection``."""
    if conn.execute(_EXISTS).fetchone()[0] and not _steps(
        _scalar(conn.execute(_READ_LOCKED).fetchone())
    ):
        return
    with conn.transaction():
        conn.execute(_LOCK)
        conn.execute(_CREATE_VERSION)
        version = _scalar(conn.execute(_READ_LOCKED).fetchone())
        for statement in _steps(version):
            conn.execute(statement)
        if version < SCHEMA_VERSION:
            conn.execute(_SET_VERSION, (SCHEMA_VERSION,))
