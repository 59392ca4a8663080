"""Approvals in a SQLite file: they survive the process and are shared between processes.

Every state change is one conditional ``UPDATE`` whose row count says who won, so two
processes that consume the same approval at once cannot both run the call. The rows, the
checks and the rule of each change are the SQL core's (:mod:`invokit.approvals._sqlcore`),
shared with PostgreSQL; this module keeps SQLite's statements, its one connection behind a
lock, and polling, since SQLite cannot tell another process of a change.
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
from invokit.approvals import _sqlcore as core
from invokit.approvals._models import ApprovalDecision, ApprovalRecord, ApprovalRequest
from invokit.approvals._sqlcore import GRANT, RECORD, RULE, SQLITE
from invokit.approvals._sqlite_schema import SCHEMA_VERSION, open_schema
from invokit.approvals._standing import SessionGrant, StandingRule
from invokit.approvals._store import (
    already_stored,
    consume_refusal,
    interrupt_refusal,
    new_rule,
    next_allowed,
    resolve_refusal,
    withdraw_refusal,
)
from invokit.exceptions import ApprovalNotFound

__all__ = ["DEFAULT_FILE", "SCHEMA_VERSION", "SqliteApprovalStore"]

T = TypeVar("T")

DEFAULT_FILE = "approvals.sqlite3"


def _cut(text: str | None) -> str | None:
    """``text`` up to its first NUL: what SQLite's ``json_extract`` returns for it."""
    return None if text is None else text.partition("\x00")[0]


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
        try:
            open_schema(self._conn, clock)
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
            f"SELECT {RECORD} FROM approvals WHERE id = ?", (approval_id,)
        ).fetchone()
        if row is None:
            raise ApprovalNotFound(approval_id, "there is no approval with this id")
        return core.record(row, self._clock())

    def _change(
        self,
        conn: sqlite3.Connection,
        approval_id: str,
        now: float,
        assign: str,
        guard: str,
        *values: Any,
    ) -> tuple[bool, ApprovalRecord]:
        """``UPDATE ... SET assign WHERE id AND guard`` (``values`` fill ``assign``, ``now``
        the guard): whether this call changed the row, and the record afterwards."""
        changed = conn.execute(
            f"UPDATE approvals SET {assign} WHERE id = ? AND {guard}",
            (*values, approval_id, *SQLITE.now(guard, now)),
        ).rowcount
        return changed == 1, self._record(conn, approval_id)

    # -- the store --------------------------------------------------------------------------

    async def put(self, request: ApprovalRequest) -> None:
        await self._insert(request, None)

    async def put_leased(self, request: ApprovalRequest, until: float) -> None:
        await self._insert(request, until)

    async def _insert(self, request: ApprovalRequest, lease_until: float | None) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO approvals (id, tool, session_id, status, request, created_at, "
                    "expires_at, lease_until) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
                    (
                        request.id,
                        request.tool,
                        request.session_id,
                        core.request_text(request),
                        request.created_at,
                        request.expires_at,
                        lease_until,
                    ),
                )
            except sqlite3.IntegrityError:
                raise already_stored("approval", request.id) from None

        await self._run(insert)

    async def get(self, approval_id: str) -> ApprovalRecord:
        return await self._run(lambda conn: self._record(conn, approval_id))

    async def resolve(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        status = core.decided_status(decision)
        text = core.decision_text(decision, credentials=True)

        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            now = self._clock()
            changed, record = self._change(
                conn,
                approval_id,
                now,
                "status = ?, decision = ?, resolved_at = ?",
                SQLITE.resolvable,
                status,
                text,
                now,
            )
            if not changed:
                raise resolve_refusal(record)
            return record

        return await self._run(update)

    async def consume(self, approval_id: str) -> ApprovalRecord:
        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            # The whole guard is in the WHERE clause: SQLite serializes writers, so exactly
            # one UPDATE sees status 'approved' and changes the row.
            now = self._clock()
            changed, record = self._change(
                conn,
                approval_id,
                now,
                "status = 'consumed', consumed_at = ?",
                SQLITE.consumable,
                now,
            )
            if not changed:
                raise consume_refusal(record)
            return record

        return await self._run(update)

    async def withdraw(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        text = core.decision_text(decision, credentials=False)

        def update(conn: sqlite3.Connection) -> ApprovalRecord:
            # One conditional UPDATE: a consume racing this withdrawal changes the row first
            # (and the call runs) or finds it denied (and nothing runs); never both.
            now = self._clock()
            changed, record = self._change(
                conn,
                approval_id,
                now,
                "status = 'denied', decision = ?, resolved_at = ?",
                SQLITE.withdrawable,
                text,
                now,
            )
            if not changed and record.status == "consumed":
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
            return self._change(conn, approval_id, now, "lease_until = ?", SQLITE.waiting, until)[1]

        return await self._run(update)

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        def update(conn: sqlite3.Connection) -> list[ApprovalRecord]:
            due = conn.execute(
                "SELECT id, lease_until FROM approvals INDEXED BY approvals_lease "
                f"WHERE {SQLITE.lapsed}",
                SQLITE.now(SQLITE.lapsed, self._clock()),
            ).fetchall()
            changed: list[ApprovalRecord] = []
            for approval_id, until in due:
                # Conditional on the same lease: of the processes sweeping, one records it.
                if conn.execute(
                    "UPDATE approvals SET status = 'denied', decision = ?, resolved_at = ? "
                    "WHERE id = ? AND status = 'pending' AND lease_until = ?",
                    (core.lapse_text(until), until, approval_id, until),
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
                raise already_stored("interrupt", interrupt_id) from None

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
            if row is None or changed != 1:
                raise interrupt_refusal(
                    interrupt_id, taken=None if row is None else row[1] is not None
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
            rows = conn.execute(
                f"SELECT request FROM approvals WHERE {SQLITE.waiting} ORDER BY created_at, id",
                SQLITE.now(SQLITE.waiting, self._clock()),
            ).fetchall()
            return core.requests(rows)

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
            return core.first_bound(rows, spec_fingerprint, arguments_hash, session_id, project)

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
        self,
        session_id: str,
        tool: str,
        spec_fingerprint: str,
        *,
        project: str | None = None,
        by: str | None = None,
        at: float | None = None,
        approval_id: str | None = None,
    ) -> None:
        key = (session_id, tool, spec_fingerprint, project)
        given = SessionGrant(
            session_id=session_id,
            tool=tool,
            spec_fingerprint=spec_fingerprint,
            project=project,
            at=self._clock() if at is None else at,
            by=by,
            approval_id=approval_id,
        )

        def insert(conn: sqlite3.Connection) -> None:
            # One statement: a grant already there (``project IS ?`` also matches NULL) is kept,
            # with its giver.
            conn.execute(
                f"INSERT INTO session_grants ({GRANT}) SELECT ?, ?, ?, ?, ?, ?, ? "
                "WHERE NOT EXISTS (SELECT 1 FROM session_grants "
                "WHERE session_id = ? AND tool = ? AND spec_fingerprint = ? AND project IS ?)",
                (*core.grant_row(given), *key),
            )

        await self._run(insert)

    async def has_session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> bool:
        found = await self.session_grant(session_id, tool, spec_fingerprint, project=project)
        return found is not None

    async def session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> SessionGrant | None:
        def select(conn: sqlite3.Connection) -> SessionGrant | None:
            row = conn.execute(
                f"SELECT {GRANT} FROM session_grants WHERE session_id = ? AND tool = ? "
                "AND spec_fingerprint = ? AND project IS ? ORDER BY granted_at, rowid LIMIT 1",
                (session_id, tool, spec_fingerprint, project),
            ).fetchone()
            return None if row is None else core.grant(row)

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
        record = new_rule(
            rule, project=project, server=server, fingerprint=fingerprint, by=by, now=self._clock()
        )
        key = core.rule_key(record)

        def insert(conn: sqlite3.Connection) -> StandingRule:
            conn.execute(
                f"INSERT OR IGNORE INTO standing_rules ({RULE}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.id, *key, record.created_at, by),
            )
            row = conn.execute(
                f"SELECT {RULE} FROM standing_rules "
                "WHERE rule = ? AND project = ? AND server = ? AND fingerprint = ?",
                key,
            ).fetchone()
            return core.standing(row)

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
                    f"SELECT {RULE} FROM standing_rules WHERE {where}", params
                ).fetchall()
                if not found:
                    where = "rule = ?" if project is None else "rule = ? AND project = ?"
                    params = (rule,) if project is None else (rule, project)
                    found = conn.execute(
                        f"SELECT {RULE} FROM standing_rules WHERE {where} "
                        "ORDER BY created_at, rowid",
                        params,
                    ).fetchall()
                conn.execute(f"DELETE FROM standing_rules WHERE {where}", params)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return [core.standing(row) for row in found]

        return await self._run(delete)

    async def always_rules(self, project: str | None = None) -> list[StandingRule]:
        def select(conn: sqlite3.Connection) -> list[StandingRule]:
            if project is None:
                rows = conn.execute(
                    f"SELECT {RULE} FROM standing_rules ORDER BY created_at, rowid"
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {RULE} FROM standing_rules WHERE project = ? "
                    "ORDER BY created_at, rowid",
                    (project,),
                ).fetchall()
            return [core.standing(row) for row in rows]

        return await self._run(select)

    async def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SqliteApprovalStore({str(self.path)!r})"
