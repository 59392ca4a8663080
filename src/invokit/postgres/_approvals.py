"""Approvals in PostgreSQL: shared by every worker and replica on one database.

Every state change is one conditional statement (``UPDATE ... WHERE status = ... RETURNING``)
or one transaction whose row count says who won. A decision (``resolve``, ``withdraw``) is
written with its ``approval_resolved`` audit record and a ``NOTIFY`` in the same transaction:
a waiter in any process is woken when it commits, and the record exists exactly when the
decision does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Callable
from typing import Any

from invokit.approvals import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    SessionGrant,
    StandingRule,
)
from invokit.approvals.internal import (
    already_stored,
    consume_refusal,
    interrupt_refusal,
    new_rule,
    next_allowed,
    resolve_refusal,
    withdraw_refusal,
)
from invokit.approvals.internal import sqlcore as core
from invokit.exceptions import ApprovalNotFound
from invokit.execution import Event
from invokit.postgres._audit import insert_events
from invokit.postgres._pool import AsyncDatabase
from invokit.postgres._text import loaded, stored

CHANNEL = "invokit_approvals"
"""The ``LISTEN``/``NOTIFY`` channel a decision is announced on (the payload is its id)."""

_RECONNECT_PAUSE = 0.1
"""Seconds at least between a lost listening connection and the next one."""


def decision_event(
    request: ApprovalRequest, decision: ApprovalDecision, at: float, *, consumed: bool = False
) -> Event:
    """The ``approval_resolved`` record the store writes with a decision when its caller
    did not hand one over: the executor's form, the channel the decision's own (else ``api``)
    and the request's project as the root."""
    from invokit.execution.internal import channel_of, resolved_data

    return Event(
        type="approval_resolved",
        call_id=request.call.id,
        tool=request.tool,
        time=at,
        session_id=request.session_id,
        data=resolved_data(
            request,
            decision,
            channel=channel_of(decision, "api"),
            root=request.project,
            consumed=consumed,
        ),
    )


class PostgresApprovalStore:
    """An :class:`~invokit.approvals.ApprovalStore` in a PostgreSQL database.

    The pool opens on first use, in the running event loop (asyncio), and creates or migrates
    the tables (see :mod:`invokit.postgres`). ``wait_decided`` listens on one connection of its
    own per store, whatever the number of waiters.

    Args:
        url: ``postgresql://user@host/db``; a password only in the URL or in libpq's
            environment (``PGPASSWORD``), never shown (reprs and errors mask it).
        clock: the time source (``time.time``); tests pass their own.
        min_size: pool connections kept open.
        max_size: pool connections at most.
        timeout: seconds to wait for the server or a free connection.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self._db = AsyncDatabase(url, min_size=min_size, max_size=max_size, timeout=timeout)
        self._clock = clock
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._listener: Any = None
        self._listening: asyncio.Task[None] | None = None
        self._listen_lock: asyncio.Lock | None = None
        self._listen_loop: asyncio.AbstractEventLoop | None = None
        self._lost_at = -math.inf
        self._heard = 0
        self._watchers: set[asyncio.Event] = set()

    @property
    def url(self) -> str:
        """The database URL with any password masked."""
        return self._db.shown

    # -- plumbing ---------------------------------------------------------------------------

    def _record(self, row: tuple[Any, ...]) -> ApprovalRecord:
        return core.record(row, self._clock())

    async def _decided(
        self, conn: Any, row: tuple[Any, ...], audit: Event | None, at: float
    ) -> ApprovalRecord:
        """In the winner's transaction: announce the decision and write its audit record."""
        record = self._record(row)
        approval_id = record.request.id
        await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, approval_id))
        if audit is None and record.decision is not None:
            audit = decision_event(record.request, record.decision, at)
        if audit is not None:
            await insert_events(conn, [audit])
        return record

    # -- the store --------------------------------------------------------------------------

    async def put(self, request: ApprovalRequest) -> None:
        await self._insert(request, None)

    async def put_leased(self, request: ApprovalRequest, until: float) -> None:
        await self._insert(request, until)

    async def _insert(self, request: ApprovalRequest, lease_until: float | None) -> None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO invokit_approvals (id, tool, call_id, session_id, project, "
                "spec_fingerprint, arguments_hash, status, request, created_at, expires_at, "
                "lease_until) VALUES (%s, %s, %s, %s, %s, %s, %s, 'pending', %s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (
                    stored(request.id),
                    stored(request.tool),
                    stored(request.call.id),
                    stored(request.session_id),
                    stored(request.project),
                    stored(request.spec_fingerprint),
                    stored(request.arguments_hash),
                    core.request_text(request),
                    request.created_at,
                    request.expires_at,
                    lease_until,
                ),
            )
            if cursor.rowcount != 1:
                raise already_stored("approval", request.id)
            # A new question is announced too: every inbox on the fleet lists it at once.
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, stored(request.id)))

    async def get(self, approval_id: str) -> ApprovalRecord:
        async with self._db.connection() as conn:
            return await self._get(conn, approval_id)

    async def _get(self, conn: Any, approval_id: str) -> ApprovalRecord:
        cursor = await conn.execute(
            f"SELECT {core.RECORD} FROM invokit_approvals WHERE id = %s", (stored(approval_id),)
        )
        row = await cursor.fetchone()
        if row is None:
            raise ApprovalNotFound(approval_id, "there is no approval with this id")
        return self._record(row)

    async def resolve(
        self, approval_id: str, decision: ApprovalDecision, *, audit: Event | None = None
    ) -> ApprovalRecord:
        """Pending becomes approved or denied; anything else raises. The ``approval_resolved``
        record (``audit``, else one the store makes) is written in the same transaction."""
        status = core.decided_status(decision)
        decided = core.decision_text(decision, credentials=True)
        now = self._clock()
        async with self._db.connection() as conn:
            async with conn.transaction():
                cursor = await conn.execute(
                    "UPDATE invokit_approvals SET status = %s, decision = %s, resolved_at = %s "
                    f"WHERE id = %s AND {core.POSTGRES.resolvable} RETURNING {core.RECORD}",
                    (
                        status,
                        decided,
                        now,
                        stored(approval_id),
                        *core.POSTGRES.now(core.POSTGRES.resolvable, now),
                    ),
                )
                row = await cursor.fetchone()
                if row is not None:
                    return await self._decided(conn, row, audit, now)
            raise resolve_refusal(await self._get(conn, approval_id))

    async def consume(self, approval_id: str, *, audit: Event | None = None) -> ApprovalRecord:
        """Approved and unexpired becomes consumed; exactly one caller wins. ``audit`` (a retry
        using a decision made elsewhere) is written in the same transaction."""
        now = self._clock()
        async with self._db.connection() as conn:
            async with conn.transaction():
                cursor = await conn.execute(
                    "UPDATE invokit_approvals SET status = 'consumed', consumed_at = %s "
                    f"WHERE id = %s AND {core.POSTGRES.consumable} RETURNING {core.RECORD}",
                    (now, stored(approval_id), *core.POSTGRES.now(core.POSTGRES.consumable, now)),
                )
                row = await cursor.fetchone()
                if row is not None:
                    if audit is not None:
                        await insert_events(conn, [audit])
                    return self._record(row)
            raise consume_refusal(await self._get(conn, approval_id))

    async def withdraw(
        self, approval_id: str, decision: ApprovalDecision, *, audit: Event | None = None
    ) -> ApprovalRecord:
        """Pending or approved (unused) becomes denied, with its audit record, atomically; a
        denied record stays; :class:`ApprovalAlreadyUsed` when the call already ran."""
        decided = core.decision_text(decision, credentials=False)
        now = self._clock()
        async with self._db.connection() as conn:
            async with conn.transaction():
                cursor = await conn.execute(
                    # A question whose lease ran out is withdrawn already: that "no" stays.
                    "UPDATE invokit_approvals SET status = 'denied', decision = %s, "
                    f"resolved_at = %s WHERE id = %s AND {core.POSTGRES.withdrawable} "
                    f"RETURNING {core.RECORD}",
                    (
                        decided,
                        now,
                        stored(approval_id),
                        *core.POSTGRES.now(core.POSTGRES.withdrawable, now),
                    ),
                )
                row = await cursor.fetchone()
                if row is not None:
                    return await self._decided(conn, row, audit, now)
            record = await self._get(conn, approval_id)
        if record.status == "consumed":
            raise withdraw_refusal(record)
        return record

    async def wait_decided(self, approval_id: str, timeout: float) -> ApprovalRecord:  # noqa: ASYNC109
        """The record once it is no longer pending, or as it is after ``timeout`` seconds (or
        at its expiry, whichever is first). Woken by the ``NOTIFY`` of the decision from any
        process; the record is read again after listening starts, so a decision made just
        before is never missed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        event = asyncio.Event()
        self._waiters.setdefault(approval_id, set()).add(event)
        try:
            while True:
                event.clear()
                await self._listen()
                record = await self.get(approval_id)
                if record.status != "pending":
                    return record
                left = min(deadline - loop.time(), record.request.expires_at - self._clock())
                if left <= 0:
                    return record
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), left)
        finally:
            waiting = self._waiters.get(approval_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiters[approval_id]

    async def wait_changed(self, heard: int | None, timeout: float) -> int:  # noqa: ASYNC109
        """How many questions asked, decided or withdrawn (in any process) this store has
        heard of, once that is more than ``heard``, or after ``timeout`` seconds. ``None``
        starts listening and answers at once. The inbox's live update: read the count, list,
        then wait past it, and no change between the list and the wait is missed."""
        await self._listen()
        if heard is None or heard != self._heard:
            return self._heard
        event = asyncio.Event()
        self._watchers.add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), max(0.0, timeout))
        finally:
            self._watchers.discard(event)
        return self._heard

    def _heard_of_a_change(self) -> None:
        self._heard += 1
        for event in self._watchers:
            event.set()

    def _listening_here(self) -> bool:
        task = self._listening
        return (
            task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop()
        )

    async def _listen(self) -> None:
        """Start the one listening connection of this store (in this event loop), if it is not
        running."""
        if self._listening_here():
            return
        loop = asyncio.get_running_loop()
        if self._listen_lock is None or self._listen_loop is not loop:
            # First use, or a new event loop (one ``anyio.run`` per CLI command): the old
            # listener went with its loop.
            self._listen_lock, self._listen_loop = asyncio.Lock(), loop
        async with self._listen_lock:
            if self._listening_here():
                return
            # A listener that keeps being lost is not reconnected in a tight loop.
            pause = self._lost_at + _RECONNECT_PAUSE - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
            conn = await self._db.connect()
            await conn.execute(f"LISTEN {CHANNEL}")
            self._listener = conn
            self._listening = asyncio.get_running_loop().create_task(
                self._dispatch(conn), name="invokit-approvals-listen"
            )

    async def _dispatch(self, conn: Any) -> None:
        try:
            async for note in conn.notifies():
                for event in self._waiters.get(note.payload, ()):
                    event.set()
                self._heard_of_a_change()
        except Exception:  # the connection went away: every waiter reads again, reconnects
            pass
        finally:
            self._listener = None
            self._lost_at = asyncio.get_running_loop().time()
            self._heard_of_a_change()  # what was missed meanwhile: watchers list again
            for waiting in list(self._waiters.values()):
                for event in waiting:
                    event.set()
            with contextlib.suppress(Exception):
                await conn.close()

    async def renew_lease(self, approval_id: str, until: float | None) -> ApprovalRecord:
        """Hold (until ``until``) or release (``None``) the lease of a pending approval whose
        lease has not run out; the record as it is afterwards."""
        now = self._clock()
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"UPDATE invokit_approvals SET lease_until = %s WHERE id = %s "
                f"AND {core.POSTGRES.waiting} RETURNING {core.RECORD}",
                (until, stored(approval_id), *core.POSTGRES.now(core.POSTGRES.waiting, now)),
            )
            row = await cursor.fetchone()
            if row is not None:
                return self._record(row)
            return await self._get(conn, approval_id)

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        """Record every pending approval whose lease ran out as withdrawn, each with its
        ``approval_resolved`` audit record and a ``NOTIFY``, in one transaction per approval;
        the update is conditional on the same lease, so of the replicas sweeping, one records
        each."""
        now = self._clock()
        changed: list[ApprovalRecord] = []
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT id, lease_until FROM invokit_approvals WHERE {core.POSTGRES.lapsed} "
                "ORDER BY lease_until",
                core.POSTGRES.now(core.POSTGRES.lapsed, now),
            )
            for approval_id, until in await cursor.fetchall():
                decision = core.lapse_text(until)
                async with conn.transaction():
                    cursor = await conn.execute(
                        "UPDATE invokit_approvals SET status = 'denied', decision = %s, "
                        "resolved_at = %s WHERE id = %s AND status = 'pending' "
                        f"AND lease_until = %s RETURNING {core.RECORD}",
                        (decision, until, approval_id, until),
                    )
                    row = await cursor.fetchone()
                    if row is not None:
                        changed.append(await self._decided(conn, row, None, until))
        return changed

    async def put_interrupt(
        self, interrupt_id: str, data: dict[str, Any], expires_at: float
    ) -> None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO invokit_interrupts (id, data, created_at, expires_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (stored(interrupt_id), json.dumps(data), self._clock(), expires_at),
            )
            if cursor.rowcount != 1:
                raise already_stored("interrupt", interrupt_id)

    async def take_interrupt(self, interrupt_id: str) -> dict[str, Any]:
        now = self._clock()
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "UPDATE invokit_interrupts SET taken_at = %s "
                "WHERE id = %s AND taken_at IS NULL AND expires_at > %s RETURNING data",
                (now, stored(interrupt_id), now),
            )
            row = await cursor.fetchone()
            if row is not None:
                data: dict[str, Any] = json.loads(row[0])
                return data
            cursor = await conn.execute(
                "SELECT taken_at FROM invokit_interrupts WHERE id = %s", (stored(interrupt_id),)
            )
            found = await cursor.fetchone()
        raise interrupt_refusal(interrupt_id, taken=None if found is None else found[0] is not None)

    async def list_pending(self) -> list[ApprovalRequest]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT request FROM invokit_approvals WHERE {core.POSTGRES.waiting} "
                "ORDER BY created_at, id",
                core.POSTGRES.now(core.POSTGRES.waiting, self._clock()),
            )
            rows = await cursor.fetchall()
        return core.requests(rows)

    async def find_approved(
        self,
        tool: str,
        spec_fingerprint: str,
        arguments_hash: str,
        session_id: str | None,
        *,
        project: str | None = None,
    ) -> ApprovalRequest | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "SELECT request FROM invokit_approvals WHERE status = 'approved' "
                "AND tool = %s AND arguments_hash = %s AND spec_fingerprint = %s "
                "AND session_id IS NOT DISTINCT FROM %s AND project IS NOT DISTINCT FROM %s "
                "AND expires_at > %s ORDER BY created_at, id",
                (
                    stored(tool),
                    stored(arguments_hash),
                    stored(spec_fingerprint),
                    stored(session_id),
                    stored(project),
                    self._clock(),
                ),
            )
            rows = await cursor.fetchall()
        return core.first_bound(rows, spec_fingerprint, arguments_hash, session_id, project)

    async def find_by_call(
        self, call_id: str, *, session_id: str | None, project: str | None
    ) -> ApprovalRecord | None:
        """The newest approval recorded for ``call_id`` in this session and project, in any
        status (``None`` when there is none)."""
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {core.RECORD} FROM invokit_approvals WHERE call_id = %s "
                "AND session_id IS NOT DISTINCT FROM %s AND project IS NOT DISTINCT FROM %s "
                "ORDER BY created_at DESC, seq DESC LIMIT 1",
                (stored(call_id), stored(session_id), stored(project)),
            )
            row = await cursor.fetchone()
        return None if row is None else self._record(row)

    async def count_call(
        self, key: str, *, limit: int, window: float | None, now: float
    ) -> float | None:
        """Record one call under ``key`` if fewer than ``limit`` are recorded (in the last
        ``window`` seconds; ever when ``None``): ``None`` when recorded, else when the next
        call will be allowed (``math.inf``: never). A transaction-scoped advisory lock on the
        key makes the count and the insert one step across every process."""
        key = stored(key)
        async with self._db.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
            if window is not None:
                # Calls that left the window are not needed again: the table stays small.
                await conn.execute(
                    "DELETE FROM invokit_quota_calls WHERE key = %s AND at <= %s",
                    (key, now - window),
                )
            cursor = await conn.execute(
                "SELECT at FROM invokit_quota_calls WHERE key = %s ORDER BY at", (key,)
            )
            times = [float(row[0]) for row in await cursor.fetchall()]
            if len(times) < limit:
                await conn.execute(
                    "INSERT INTO invokit_quota_calls (key, at) VALUES (%s, %s)", (key, now)
                )
                return None
            return next_allowed(times, limit, window)

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
        given = SessionGrant(
            session_id=session_id,
            tool=tool,
            spec_fingerprint=spec_fingerprint,
            project=project,
            at=self._clock() if at is None else at,
            by=by,
            approval_id=approval_id,
        )
        async with self._db.connection() as conn:
            # A grant already there is kept, with its giver.
            await conn.execute(
                f"INSERT INTO invokit_session_grants ({core.GRANT}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                core.grant_row(given, stored),
            )

    async def has_session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> bool:
        found = await self.session_grant(session_id, tool, spec_fingerprint, project=project)
        return found is not None

    async def session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> SessionGrant | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {core.GRANT} FROM invokit_session_grants WHERE session_id = %s "
                "AND tool = %s AND spec_fingerprint = %s AND project IS NOT DISTINCT FROM %s",
                (stored(session_id), stored(tool), stored(spec_fingerprint), stored(project)),
            )
            row = await cursor.fetchone()
        return None if row is None else core.grant(tuple(row), loaded)

    async def revoke_session(self, session_id: str) -> None:
        """Forget every grant of ``session_id``."""
        async with self._db.connection() as conn:
            await conn.execute(
                "DELETE FROM invokit_session_grants WHERE session_id = %s", (stored(session_id),)
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
        scope = tuple(stored(text) for text in core.rule_key(record))
        async with self._db.connection() as conn:
            await conn.execute(
                f"INSERT INTO invokit_standing_rules ({core.RULE}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (record.id, *scope, record.created_at, stored(by)),
            )
            cursor = await conn.execute(
                f"SELECT {core.RULE} FROM invokit_standing_rules WHERE rule = %s AND project = %s "
                "AND server = %s AND fingerprint = %s",
                scope,
            )
            row = await cursor.fetchone()
        return core.standing(row, loaded)

    async def remove_always_rule(
        self, rule: str, *, project: str | None = None
    ) -> list[StandingRule]:
        """Drop the standing rule with this id, or else the rules with this text (in
        ``project`` only, when given); one transaction."""
        async with self._db.connection() as conn, conn.transaction():
            cursor = await conn.execute(
                f"DELETE FROM invokit_standing_rules WHERE id = %s RETURNING {core.RULE}, seq",
                (stored(rule),),
            )
            rows = await cursor.fetchall()
            if not rows:
                cursor = await conn.execute(
                    "DELETE FROM invokit_standing_rules WHERE rule = %s "
                    f"AND (%s::text IS NULL OR project = %s) RETURNING {core.RULE}, seq",
                    (stored(rule), stored(project), stored(project)),
                )
                rows = await cursor.fetchall()
        rows.sort(key=lambda row: (row[5], row[7]))
        return [core.standing(row[:7], loaded) for row in rows]

    async def always_rules(self, project: str | None = None) -> list[StandingRule]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT {core.RULE} FROM invokit_standing_rules "
                "WHERE %s::text IS NULL OR project = %s ORDER BY created_at, seq",
                (stored(project), stored(project)),
            )
            rows = await cursor.fetchall()
        return [core.standing(row, loaded) for row in rows]

    async def close(self) -> None:
        """Stop listening and close the pool; a later call opens them again."""
        task, self._listening = self._listening, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(Exception):
                await listener.close()
        await self._db.close()

    def __repr__(self) -> str:
        return f"PostgresApprovalStore({self._db.shown!r})"
