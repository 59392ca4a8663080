"""Leases: a question lives only as long as the call waiting for it.

A server that waits for a person on behalf of a connected client holds a *lease* on each
approval the call asked for: a time in the store (``lease_until``) that it moves forward every
few seconds while the client is connected. Every process that shares the store sees it, so
when the waiting ends without a word (the client was killed, its connection dropped, the
replica holding the call died) the lease runs out and the question counts as withdrawn, in
every process, within one lease: it can no longer be approved by any channel, and the record
says why (:func:`lapse_decision`). An approval without a lease (nobody waits for it: the model
was told "approval required" and will call again) never lapses; it expires as before.

The call's :class:`Lease` is found through a context variable (:func:`current_lease`), set by
:func:`leased` around the waiting call: the executor takes the lease right after it records the
request, without the server or the executor handing each other more than that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

import anyio

from invokit.approvals._models import ApprovalDecision, ApprovalRecord

logger = logging.getLogger("invokit.approvals")

DEFAULT_LEASE = 10.0
"""Seconds a waiting call's lease lasts unless renewed; it is renewed every third of that."""


@runtime_checkable
class LeasedStore(Protocol):
    """The lease methods of an approval store (the memory, SQLite and PostgreSQL stores)."""

    async def renew_lease(self, approval_id: str, until: float | None) -> ApprovalRecord:
        """Hold the lease of a pending approval until the epoch time ``until`` (``None``:
        release it; the approval then waits without a lease, until it expires). The record as
        it is afterwards: pending when the lease was held or released; anything else (decided,
        withdrawn, expired, or its lease already ran out) is left as it is."""
        ...

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        """Record as withdrawn (denied by the executor, :func:`lapse_decision`) every pending
        approval whose lease ran out; the records this call changed (each is changed by one
        caller only, across processes)."""
        ...


def _shown(at: float) -> str:
    return datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def lapse_decision(lease_until: float) -> ApprovalDecision:
    """The withdrawal an approval whose lease ran out at ``lease_until`` counts as: the same
    in every process, whether it was read as lapsed or recorded by :meth:`withdraw_lapsed`."""
    return ApprovalDecision(
        approved=False,
        reason=f"its caller went away at {_shown(lease_until)} (the server waiting for it "
        "stopped renewing its lease); nothing ran",
        by="executor",
        channel="executor",
    )


def lapsed(record: ApprovalRecord, lease_until: float | None, now: float) -> ApprovalRecord:
    """``record`` as it stands at ``now``: a pending approval whose lease ran out is
    withdrawn."""
    if record.status != "pending" or lease_until is None or now < lease_until:
        return record
    return ApprovalRecord(
        request=record.request,
        status="denied",
        decision=lapse_decision(lease_until),
        resolved_at=lease_until,
    )


def withdrawn(record: ApprovalRecord) -> bool:
    """Whether ``record`` was taken back by the executor (not answered by a person)."""
    decision = record.decision
    return record.status == "denied" and decision is not None and decision.by == "executor"


class Lease:
    """The lease of one waiting call: every approval it asks for, held in ``store`` for
    ``ttl`` seconds at a time and renewed by :func:`leased` while the call waits.

    Args:
        store: the approval store (a :class:`LeasedStore`; another store holds no lease).
        ttl: seconds the lease lasts after each renewal.
        on_lost: called once when a held approval was withdrawn meanwhile (its lease ran out
            here, or another process withdrew it): the wait for it should end.
    """

    def __init__(
        self, store: object, ttl: float, on_lost: Callable[[ApprovalRecord], None]
    ) -> None:
        self.store = store if isinstance(store, LeasedStore) else None
        self.ttl = ttl
        self.on_lost = on_lost
        self.held: dict[str, None] = {}  # insertion-ordered set of approval ids
        self.lost: ApprovalRecord | None = None

    async def hold(self, approval_id: str) -> None:
        """Take the lease of a request just recorded (best effort: a store that fails leaves
        it without one, as before leases)."""
        if self.store is None:
            return
        self.held[approval_id] = None
        try:
            await self.store.renew_lease(approval_id, time.time() + self.ttl)
        except Exception as exc:
            logger.warning("cannot take the lease of approval %s: %r", approval_id, exc)

    async def renew(self) -> None:
        """Move every held lease forward; forget approvals that are decided; report one that
        was withdrawn meanwhile (:attr:`on_lost`)."""
        assert self.store is not None
        for approval_id in list(self.held):
            try:
                record = await self.store.renew_lease(approval_id, time.time() + self.ttl)
            except Exception as exc:  # a store hiccup: the next renewal tries again
                logger.warning("cannot renew the lease of approval %s: %r", approval_id, exc)
                continue
            if record.status == "pending":
                continue
            self.held.pop(approval_id, None)
            if withdrawn(record) and self.lost is None:
                self.lost = record
                self.on_lost(record)

    async def release(self) -> None:
        """Nobody waits any more, and nothing went wrong: the approvals still pending stay,
        without a lease (the model was told to call again once a person approves)."""
        if self.store is None:
            return
        for approval_id in list(self.held):
            try:
                await self.store.renew_lease(approval_id, None)
            except Exception as exc:
                logger.warning("cannot release the lease of approval %s: %r", approval_id, exc)
        self.held.clear()


_current: ContextVar[Lease | None] = ContextVar("invokit_approval_lease", default=None)


def current_lease() -> Lease | None:
    """The lease of the call waiting in this context, if a server holds one."""
    return _current.get()


@asynccontextmanager
async def leased(
    store: object, ttl: float, on_lost: Callable[[ApprovalRecord], None]
) -> AsyncIterator[Lease]:
    """Hold a :class:`Lease` for the call run inside: approvals it asks for are leased and
    renewed every ``ttl / 3`` seconds. Left normally, the leases still held are released; left
    by an exception or a cancellation, they are not (the caller withdraws its questions, or,
    if it cannot, they lapse)."""
    lease = Lease(store, ttl, on_lost)
    if lease.store is None or ttl <= 0:
        yield lease
        return
    token = _current.set(lease)
    try:
        async with anyio.create_task_group() as group:

            async def renewals() -> None:
                while True:
                    await anyio.sleep(ttl / 3)
                    await lease.renew()

            group.start_soon(renewals)
            try:
                yield lease
            finally:
                group.cancel_scope.cancel()
        await lease.release()
    finally:
        _current.reset(token)
