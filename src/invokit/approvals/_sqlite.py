"""Approvals in a SQLite file: they survive the process and are shared between processes.

Every state change is one conditional ``UPDATE`` whose row count says who won, so two
processes that consume the same approval at once cannot both run the call.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from invokit._state import store_file
from invokit.approvals._lease import lapse_decision, lapsed
from invokit.approvals._models import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
)
from invokit.approvals._standing import StandingRule, check_scope
from invokit.approvals._store import (
    check_rule,
    consume_refusal,
    effective_status,
    interrupt_expired,
    interrupt_missing,
    interrupt_used,
    next_allowed,
    resolve_refusal,
    withdraw_refusal,
)
from invokit.exceptions import ApprovalNotFound

T = TypeVar("T")

DEFAULT_FILE = "approvals.sqlite3"

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
    granted_at REAL NOT NULL
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
_RULE_COLUMNS = "id, rule, project, server, fingerprint, created_at, by"


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
                        f"INSERT INTO standing_rules ({_RULE_COLUMNS}) VALUES (?, ?, NULL, '', '', ?, NULL)",
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


def _cut(text: str | None) -> str | None:
    """``text`` up to its first NUL: what SQLite's ``json_extract`` returns for it."""
    return None if text is None else text.partition("\x00")[0]


def _standing(row: tuple[Any, ...]) -> StandingRule:
    rule_id, rule, project, server, fingerprint, created_at, by = row
    return StandingRule(
        id=rule_id,
        rule=rule,
        project=project,
        server=server or None,
        fingerprint=fingerprint or None,
        created_at=created_at,
        by=by,
    )


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


_INTERRUPTS = """
CREATE TABLE IF NOT EXISTS interrupts (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    taken_at REAL
);
"""


class SqliteApprovalStore:
    """An :class:`ApprovalStore` in a SQLite file (WAL mode, file 0600 in a 0700 directory).

    Args:
        path: the database file; ``None`` is ``approvals.sqlite3`` in the state directory.
        forbidden_roots: directories tools may write; a path inside one is refused, so a
            tool can never forge or replay an approval.
        clock: the time source (``time.time``); tests pass their own.
        busy_timeout: seconds to wait for another process's write lock.
        poll_interval: seconds between reads of a record ``wait_decided`` waits on.

    Raises:
        ValueError: ``path`` is inside one of ``forbidden_roots``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        forbidden_roots: Iterable[str | os.PathLike[str]] = (),
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 10.0,
        poll_interval: float = 0.05,
    ) -> None:
        self._poll = poll_interval
        self.path = store_file(path, DEFAULT_FILE, forbidden_roots, "approvals")
        self._clock = clock
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.executescript(_SCHEMA)
        self._conn.executescript(_INTERRUPTS)
        self._conn.executescript(_CALLS)
        try:
            _add_leases(self._conn)
            _migrate(self._conn, clock)
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------

    async def _run(self, function: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(partial(self._locked, function))

    def _locked(self, function: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._conn is None:
                raise RuntimeError("the approval store is closed")
            return function(self._conn)

    def _record(self, conn: sqlite3.Connection, approval_id: str) -> ApprovalRecord:
        row = conn.execute(
            "SELECT status, request, decision, resolved_at, consumed_at, expires_at, "
            "lease_until FROM approvals WHERE id = ?",
            (approval_id,),
        ).fetchone()
        if row is None:
            raise ApprovalNotFound(approval_id, "there is no approval with this id")
        stored, request, decision, resolved_at, consumed_at, expires_at, lease_until = row
        now = self._clock()
        status: ApprovalStatus = effective_status(stored, expires_at, now)
        record = ApprovalRecord(
            request=ApprovalRequest.from_dict(json.loads(request)),
            status=status,
            decision=None if decision is None else ApprovalDecision.from_dict(json.loads(decision)),
            resolved_at=resolved_at,
            consumed_at=consumed_at,
        )
        return lapsed(record, lease_until, now)

    # -- the store --------------------------------------------------------------------------

    async def put(self, request: ApprovalRequest) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO approvals (id, tool, session_id, status, request, created_at, "
                    "expires_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)",
                    (
                        request.id,
                        request.tool,
                        request.session_id,
                        json.dumps(request.to_dict()),
                        request.created_at,
                        request.expires_at,
                    ),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"approval {request.id} is already stored") from None

        await self._run(insert)

    async def get(self, approval_id: str) -> ApprovalRecord:
        return await self._run(lambda conn: self._record(conn, approval_id))

    async def resolve(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        status = "approved" if decision.approved else "denied"
        stored = json.dumps(decision.to_dict(include_credentials=True))

        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            now = self._clock()
            changed = conn.execute(
                "UPDATE approvals SET status = ?, decision = ?, resolved_at = ? "
                "WHERE id = ? AND status = 'pending' AND expires_at > ? "
                "AND (lease_until IS NULL OR lease_until > ?)",
                (status, stored, now, approval_id, now, now),
            ).rowcount
            record = self._record(conn, approval_id)
            if changed != 1:
                raise resolve_refusal(record)
            return record

        return await self._run(update)

    async def consume(self, approval_id: str) -> ApprovalRecord:
        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            now = self._clock()
            # The whole guard is in the WHERE clause: SQLite serializes writers, so exactly
            # one UPDATE sees status 'approved' and changes the row.
            changed = conn.execute(
                "UPDATE approvals SET status = 'consumed', consumed_at = ? "
                "WHERE id = ? AND status = 'approved' AND expires_at > ?",
                (now, approval_id, now),
            ).rowcount
            record = self._record(conn, approval_id)
            if changed != 1:
                raise consume_refusal(record)
            return record

        return await self._run(update)

    async def withdraw(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        stored = json.dumps(decision.to_dict(include_credentials=False))

        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            # One conditional UPDATE: a consume racing this withdrawal changes the row first
            # (and the call runs) or finds it denied (and nothing runs); never both.
            now = self._clock()
            # A question whose lease ran out is withdrawn already: that first "no" stays.
            changed = conn.execute(
                "UPDATE approvals SET status = 'denied', decision = ?, resolved_at = ? "
                "WHERE id = ? AND status IN ('pending', 'approved') "
                "AND NOT (status = 'pending' AND lease_until IS NOT NULL AND lease_until <= ?)",
                (stored, now, approval_id, now),
            ).rowcount
            record = self._record(conn, approval_id)
            if changed != 1 and record.status == "consumed":
                raise withdraw_refusal(record)
            return record

        return await self._run(update)

    async def wait_decided(self, approval_id: str, timeout: float) -> ApprovalRecord:  # noqa: ASYNC109
        """The record once it is no longer pending, or as it is after ``timeout`` seconds (or
        at its expiry). SQLite cannot announce a change to another process, so this reads the
        record every ``poll_interval`` seconds (50 ms by default): a decision made in any
        process is seen within that interval."""
        deadline = anyio.current_time() + max(0.0, timeout)
        while True:
            record = await self.get(approval_id)
            if record.status != "pending":
                return record
            left = min(deadline - anyio.current_time(), record.request.expires_at - self._clock())
            if left <= 0:
                return record
            await anyio.sleep(min(left, self._poll))

    async def renew_lease(self, approval_id: str, until: float | None) -> ApprovalRecord:
        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            now = self._clock()
            # A lease that ran out is never renewed: once lapsed, the question stays withdrawn.
            conn.execute(
                "UPDATE approvals SET lease_until = ? WHERE id = ? AND status = 'pending' "
                "AND expires_at > ? AND (lease_until IS NULL OR lease_until > ?)",
                (until, approval_id, now, now),
            )
            return self._record(conn, approval_id)

        return await self._run(update)

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        def update(conn: sqlite3.Connection) -> list[ApprovalRecord]:
            now = self._clock()
            due = conn.execute(
                "SELECT id, lease_until FROM approvals INDEXED BY approvals_lease "
                "WHERE status = 'pending' AND lease_until IS NOT NULL AND lease_until <= ?",
                (now,),
            ).fetchall()
            changed: list[ApprovalRecord] = []
            for approval_id, until in due:
                decision = json.dumps(lapse_decision(until).to_dict())
                # Conditional on the same lease: of the processes sweeping, one records it.
                if conn.execute(
                    "UPDATE approvals SET status = 'denied', decision = ?, resolved_at = ? "
                    "WHERE id = ? AND status = 'pending' AND lease_until = ?",
                    (decision, until, approval_id, until),
                ).rowcount:
                    changed.append(self._record(conn, approval_id))
            return changed

        return await self._run(update)

    async def put_interrupt(
        self, interrupt_id: str, data: dict[str, Any], expires_at: float
    ) -> None:
        text = json.dumps(data)

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO interrupts (id, data, created_at, expires_at) VALUES (?, ?, ?, ?)",
                    (interrupt_id, text, self._clock(), expires_at),
                )
            except sqlite3.IntegrityError:
                raise ValueError(f"interrupt {interrupt_id} is already stored") from None

        await self._run(insert)

    async def take_interrupt(self, interrupt_id: str) -> dict[str, Any]:
        def update(conn: sqlite3.Connection) -> dict[str, Any]:
            now = self._clock()
            changed = conn.execute(
                "UPDATE interrupts SET taken_at = ? "
                "WHERE id = ? AND taken_at IS NULL AND expires_at > ?",
                (now, interrupt_id, now),
            ).rowcount
            row = conn.execute(
                "SELECT data, taken_at FROM interrupts WHERE id = ?", (interrupt_id,)
            ).fetchone()
            if row is None:
                raise interrupt_missing(interrupt_id)
            if changed != 1:
                raise (
                    interrupt_used(interrupt_id)
                    if row[1] is not None
                    else interrupt_expired(interrupt_id)
                )
            data: dict[str, Any] = json.loads(row[0])
            return data

        return await self._run(update)

    async def count_call(
        self, key: str, *, limit: int, window: float | None, now: float
    ) -> float | None:
        def update(conn: sqlite3.Connection) -> float | None:
            # BEGIN IMMEDIATE takes the write lock first: another process counting the same
            # key waits, then sees this call, so the limit holds across processes.
            conn.execute("BEGIN IMMEDIATE")
            try:
                if window is not None:
                    conn.execute(
                        "DELETE FROM quota_calls WHERE key = ? AND at <= ?", (key, now - window)
                    )
                times = [
                    row[0]
                    for row in conn.execute(
                        "SELECT at FROM quota_calls WHERE key = ? ORDER BY at", (key,)
                    )
                ]
                if len(times) >= limit:
                    conn.execute("COMMIT")
                    return next_allowed(times, limit, window)
                conn.execute("INSERT INTO quota_calls (key, at) VALUES (?, ?)", (key, now))
                conn.execute("COMMIT")
                return None
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        return await self._run(update)

    async def list_pending(self) -> list[ApprovalRequest]:
        def select(conn: sqlite3.Connection) -> list[ApprovalRequest]:
            now = self._clock()
            rows = conn.execute(
                "SELECT request FROM approvals WHERE status = 'pending' AND expires_at > ? "
                "AND (lease_until IS NULL OR lease_until > ?) ORDER BY created_at, id",
                (now, now),
            ).fetchall()
            return [ApprovalRequest.from_dict(json.loads(row[0])) for row in rows]

        return await self._run(select)

    async def find_approved(
        self,
        tool: str,
        spec_fingerprint: str,
        arguments_hash: str,
        session_id: str | None,
        *,
        project: str | None = None,
    ) -> ApprovalRequest | None:
        def select(conn: sqlite3.Connection) -> ApprovalRequest | None:
            # Only rows bound to this very call are read back: an asking call never parses
            # every approved-but-unused request of the store in Python. The expression and
            # the equalities are the index's (approvals_bound): one index seek per lookup. It is
            # named because the planner, guessing without statistics, prefers walking every
            # approved row along approvals_status to sorting the few rows of this call.
            rows = conn.execute(
                "SELECT request FROM approvals INDEXED BY approvals_bound "
                "WHERE status = 'approved' AND tool = ? "
                "AND session_id IS ? AND expires_at > ? "
                "AND json_extract(request, '$.arguments_hash') = ? "
                "AND json_extract(request, '$.spec_fingerprint') = ? ORDER BY created_at, id",
                (tool, session_id, self._clock(), arguments_hash, spec_fingerprint),
            ).fetchall()
            for row in rows:
                request = ApprovalRequest.from_dict(json.loads(row[0]))
                if request.binds(spec_fingerprint, arguments_hash, session_id, project):
                    return request
            return None

        return await self._run(select)

    async def find_by_call(
        self, call_id: str, *, session_id: str | None, project: str | None
    ) -> ApprovalRecord | None:
        def select(conn: sqlite3.Connection) -> ApprovalRecord | None:
            # The expression is the index's (approvals_call): one index seek per lookup.
            # json_extract ends a text at a NUL ("c\0x" reads as "c"): the rows found are
            # candidates, the newest whose request names exactly this call is the answer.
            rows = conn.execute(
                "SELECT id FROM approvals WHERE json_extract(request, '$.call.id') IN (?, ?) "
                "AND session_id IS ? AND (json_extract(request, '$.project') IS ? "
                "OR json_extract(request, '$.project') IS ?) "
                "ORDER BY created_at DESC, rowid DESC",
                (call_id, _cut(call_id), session_id, project, _cut(project)),
            )
            for (approval_id,) in rows:
                record = self._record(conn, approval_id)
                if record.request.call.id == call_id and record.request.project == project:
                    return record
            return None

        return await self._run(select)

    async def grant_session(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> None:
        key = (session_id, tool, spec_fingerprint, project)

        def insert(conn: sqlite3.Connection) -> None:
            # One statement: a grant already there (``project IS ?`` also matches NULL) is kept.
            conn.execute(
                "INSERT INTO session_grants (session_id, tool, spec_fingerprint, project, "
                "granted_at) SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM session_grants "
                "WHERE session_id = ? AND tool = ? AND spec_fingerprint = ? AND project IS ?)",
                (*key, self._clock(), *key),
            )

        await self._run(insert)

    async def has_session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> bool:
        def select(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT 1 FROM session_grants WHERE session_id = ? AND tool = ? "
                "AND spec_fingerprint = ? AND project IS ?",
                (session_id, tool, spec_fingerprint, project),
            ).fetchone()
            return row is not None

        return await self._run(select)

    async def revoke_session(self, session_id: str) -> None:
        """Forget every grant of ``session_id``."""
        await self._run(
            lambda conn: conn.execute(
                "DELETE FROM session_grants WHERE session_id = ?", (session_id,)
            )
        )

    async def add_always_rule(
        self,
        rule: str,
        *,
        project: str,
        server: str | None = None,
        fingerprint: str | None = None,
        by: str | None = None,
    ) -> StandingRule:
        text = check_rule(rule)
        check_scope(project, server, fingerprint)
        record = StandingRule.new(
            text,
            project=project,
            server=server,
            fingerprint=fingerprint,
            created_at=self._clock(),
            by=by,
        )

        def insert(conn: sqlite3.Connection) -> StandingRule:
            scope = (text, project, server or "", fingerprint or "")
            conn.execute(
                f"INSERT OR IGNORE INTO standing_rules ({_RULE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.id, *scope, record.created_at, by),
            )
            row = conn.execute(
                f"SELECT {_RULE_COLUMNS} FROM standing_rules "
                "WHERE rule = ? AND project = ? AND server = ? AND fingerprint = ?",
                scope,
            ).fetchone()
            return _standing(row)

        return await self._run(insert)

    async def remove_always_rule(
        self, rule: str, *, project: str | None = None
    ) -> list[StandingRule]:
        """Drop the standing rule with this id, or else the rules with this text."""

        def delete(conn: sqlite3.Connection) -> list[StandingRule]:
            conn.execute("BEGIN IMMEDIATE")
            try:
                where = "id = ?"
                params: tuple[str, ...] = (rule,)
                found = conn.execute(
                    f"SELECT {_RULE_COLUMNS} FROM standing_rules WHERE {where}", params
                ).fetchall()
                if not found:
                    where = "rule = ?" if project is None else "rule = ? AND project = ?"
                    params = (rule,) if project is None else (rule, project)
                    found = conn.execute(
                        f"SELECT {_RULE_COLUMNS} FROM standing_rules WHERE {where} "
                        "ORDER BY created_at, rowid",
                        params,
                    ).fetchall()
                conn.execute(f"DELETE FROM standing_rules WHERE {where}", params)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return [_standing(row) for row in found]

        return await self._run(delete)

    async def always_rules(self, project: str | None = None) -> list[StandingRule]:
        def select(conn: sqlite3.Connection) -> list[StandingRule]:
            if project is None:
                rows = conn.execute(
                    f"SELECT {_RULE_COLUMNS} FROM standing_rules ORDER BY created_at, rowid"
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_RULE_COLUMNS} FROM standing_rules WHERE project = ? "
                    "ORDER BY created_at, rowid",
                    (project,),
                ).fetchall()
            return [_standing(row) for row in rows]

        return await self._run(select)

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SqliteApprovalStore({str(self.path)!r})"
