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
:func:`leased` around the waiting call: the executor records the request through it
(:meth:`Lease.put`), so the question is born leased, in one step of the store
(:meth:`LeasedStore.put_leased`), without the server or the executor handing each other more
than that.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

import anyio

from invokit.approvals._models import ApprovalDecision, ApprovalRecord, ApprovalRequest

if TYPE_CHECKING:
    from invokit.approvals._store import ApprovalStore

logger = logging.getLogger("invokit.approvals")

DEFAULT_LEASE = 10.0
"""Seconds a waiting call's lease lasts unless renewed; it is renewed every third of that."""


@runtime_checkable
class LeasedStore(Protocol):
    """The lease methods of an approval store (the memory, SQLite and PostgreSQL stores)."""

    async def put_leased(self, request: ApprovalRequest, until: float) -> None:
        """Store a new pending approval born with its lease (held until the epoch time
        ``until``), in one step: a process that dies right after leaves a lease that runs
        out, never a question without one. An id that is already there is an error."""
        ...

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


def shown_time(at: float) -> str:
    """An epoch time as a person reads it in a reason: ``2026-11-28 18:40:12 UTC``."""
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def lapse_decision(lease_until: float) -> ApprovalDecision:
    """The withdrawal an approval whose lease ran out at ``lease_until`` counts as: the same
    in every process, whether it was read as lapsed or recorded by :meth:`withdraw_lapsed`."""
    return ApprovalDecision(
        approved=False,
        reason=f"its caller went away at {shown_time(lease_until)} (the server waiting for it "
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


Lost = Callable[[ApprovalRecord | None], None]
"""Told that the wait should end: with the approval withdrawn meanwhile, or ``None`` when the
caller went away (:meth:`Lease.abandon`) while the call waited for a question."""


class LeaseKeeper:
    """The leases of every call waiting in this process, renewed in one loop (:meth:`run`),
    which also records the questions of any process whose lease ran out.

    Args:
        store: the approval store (a :class:`LeasedStore`; with another store no lease is
            held, and only a caller that goes away ends a wait).
        ttl: seconds a lease lasts after each renewal (renewed every third of that); ``0``
            holds none.
        on_withdrawn: told of each question this process recorded as withdrawn because its
            lease ran out (the audit log and the live log say so).
    """

    def __init__(
        self,
        store: object,
        ttl: float = DEFAULT_LEASE,
        on_withdrawn: Callable[[ApprovalRecord], None] | None = None,
    ) -> None:
        self.store = store if isinstance(store, LeasedStore) and ttl > 0 else None
        self.ttl = ttl
        self.on_withdrawn = on_withdrawn
        self.running = False
        self._active: dict[Lease, None] = {}
        self._nudged = anyio.Event()

    def nudge(self) -> None:
        """Look at the leases now rather than at the next renewal."""
        self._nudged.set()

    async def run(self) -> None:
        """Renew every ``ttl / 3`` seconds (and when nudged), and record the lapsed questions
        of every process as often, until cancelled.

        The two are separate loops: withdrawing many lapsed questions (one transaction and
        audit record each, on a loaded database) must not hold back the renewals, or this
        process's own leases would run out behind it.
        """
        self.running = True
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._sweeping)
                while True:
                    with anyio.move_on_after(self._every):
                        await self._nudged.wait()
                    self._nudged = anyio.Event()
                    for lease in list(self._active):
                        await lease.renew()
        finally:
            self.running = False

    @property
    def _every(self) -> float:
        return self.ttl / 3 if self.store is not None else math.inf

    async def _sweeping(self) -> None:
        while True:
            await anyio.sleep(self._every)
            await self.sweep()

    async def sweep(self) -> None:
        """Record the questions whose lease ran out (in any process) as withdrawn."""
        if self.store is None:
            return
        try:
            records = await self.store.withdraw_lapsed()
        except Exception as exc:  # a store hiccup: the next round tries again
            logger.warning("cannot withdraw the approvals whose lease ran out: %r", exc)
            return
        for record in records:
            if self.on_withdrawn is not None:
                self.on_withdrawn(record)


class Lease:
    """The lease of one waiting call: every approval it asks for, held in the store for
    :attr:`LeaseKeeper.ttl` seconds at a time while the keeper renews it.

    Args:
        keeper: the process's :class:`LeaseKeeper`.
        on_lost: called once, when the wait for a question should end: a held approval was
            withdrawn meanwhile (its lease ran out, or another process withdrew it), or the
            caller went away while the call waited for one.
    """

    def __init__(self, keeper: LeaseKeeper, on_lost: Lost) -> None:
        self.keeper = keeper
        self._on_lost = on_lost
        self.held: dict[str, None] = {}  # insertion-ordered set of approval ids
        self.abandoned = False
        self.ended = False

    def _end(self, record: ApprovalRecord | None) -> None:
        if not self.ended:
            self.ended = True
            self._on_lost(record)

    def abandon(self) -> None:
        """The caller went away (its connection closed): a wait for a question ends (once the
        keeper found it still pending, at once), and so does any wait that starts later. A call
        that waits for nobody runs on."""
        self.abandoned = True
        if self.held:
            if self.keeper.store is None or not self.keeper.running:
                self._end(None)
            else:
                self.keeper.nudge()

    async def put(self, store: ApprovalStore, request: ApprovalRequest) -> None:
        """Record ``request`` in ``store`` (the executor's; the keeper's when leases are held)
        born with its lease, in one step, when a keeper renews it: a process that dies right
        after leaves a lease that runs out. Raises what the store's ``put`` raises."""
        keeper = self.keeper
        if keeper.store is None or not keeper.running or keeper.store is not cast(object, store):
            # Nobody would renew it: no lease rather than one that runs out.
            await store.put(request)
        else:
            keeper._active[self] = None
            await keeper.store.put_leased(request, time.time() + keeper.ttl)
        self.held[request.id] = None
        if self.abandoned:
            self._end(None)

    async def hold(self, approval_id: str) -> None:
        """Take the lease of a request recorded earlier that this call waits on again (a call
        rejoined, a stateless retry), when a keeper renews it (best effort: a store that fails
        leaves it without one, as before leases)."""
        self.held[approval_id] = None
        if self.abandoned:
            self._end(None)
            return
        keeper = self.keeper
        if keeper.store is None or not keeper.running:
            return  # nobody would renew it: no lease rather than one that runs out
        keeper._active[self] = None
        try:
            await keeper.store.renew_lease(approval_id, time.time() + keeper.ttl)
        except Exception as exc:
            logger.warning("cannot take the lease of approval %s: %r", approval_id, exc)

    async def renew(self) -> None:
        """Move every held lease forward; forget approvals that are decided; end the wait when
        one was withdrawn meanwhile, or the caller went away while one waits."""
        store = self.keeper.store
        assert store is not None
        for approval_id in list(self.held):
            try:
                record = await store.renew_lease(approval_id, time.time() + self.keeper.ttl)
            except Exception as exc:  # a store hiccup: the next renewal tries again
                logger.warning("cannot renew the lease of approval %s: %r", approval_id, exc)
                continue
            if record.status == "pending":
                if self.abandoned:
                    self._end(None)
                continue
            self.held.pop(approval_id, None)
            if withdrawn(record):
                self._end(record)

    async def release(self) -> None:
        """Nobody waits any more, and nothing went wrong: the approvals still pending stay,
        without a lease (the model was told to call again once a person approves)."""
        self.keeper._active.pop(self, None)
        store = self.keeper.store
        held, self.held = list(self.held), {}
        if store is None or not held:
            return
        for approval_id in held:
            try:
                await store.renew_lease(approval_id, None)
            except Exception as exc:
                logger.warning("cannot release the lease of approval %s: %r", approval_id, exc)

    def leave(self) -> None:
        """The call is over (its questions withdrawn, or left to run out): stop renewing."""
        self.keeper._active.pop(self, None)


_current: ContextVar[Lease | None] = ContextVar("invokit_approval_lease", default=None)


def current_lease() -> Lease | None:
    """The lease of the call waiting in this context, if a server holds one."""
    return _current.get()


@contextmanager
def leased(keeper: LeaseKeeper, on_lost: Lost) -> Iterator[Lease]:
    """A :class:`Lease` for the call run inside (found by :func:`current_lease`). The caller
    releases it (:meth:`Lease.release`) when the call ended normally; otherwise its questions
    are withdrawn, or lapse."""
    lease = Lease(keeper, on_lost)
    token = _current.set(lease)
    try:
        yield lease
    finally:
        _current.reset(token)
        lease.leave()
