"""Approvals kept in memory: the default store, for one process."""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio

from invokit.approvals._lease import lapsed
from invokit.approvals._models import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
)
from invokit.approvals._standing import SessionGrant, StandingRule, matches
from invokit.approvals._store import (
    already_stored,
    consume_refusal,
    effective_status,
    interrupt_refusal,
    new_rule,
    next_allowed,
    resolve_refusal,
    withdraw_refusal,
)
from invokit.exceptions import ApprovalNotFound


class MemoryApprovalStore:
    """An :class:`ApprovalStore` in a dict; approvals vanish with the process.

    Args:
        clock: the time source (``time.time``); tests pass their own.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        # One lock makes each check-and-set atomic, across tasks and across threads.
        self._lock = threading.Lock()
        self._records: dict[str, ApprovalRecord] = {}
        self._sessions: dict[tuple[str, str, str, str | None], SessionGrant] = {}
        self._rules: list[StandingRule] = []
        self._interrupts: dict[str, tuple[dict[str, Any], float, bool]] = {}
        # (call id, session, project) -> the newest approval asked for that call
        self._by_call: dict[tuple[str, str | None, str | None], str] = {}
        self._call_ids: set[str] = set()
        self._calls: dict[str, list[float]] = {}
        self._decided: dict[str, list[anyio.Event]] = {}
        # approval id -> when the lease of the call waiting for it runs out (only while pending)
        self._leases: dict[str, float] = {}

    def _wake(self, approval_id: str) -> None:
        """Wake the waiters of ``approval_id`` (called with the lock held)."""
        for event in self._decided.pop(approval_id, ()):
            event.set()

    def _current(self, approval_id: str) -> ApprovalRecord:
        record = self._records.get(approval_id)
        if record is None:
            raise ApprovalNotFound(approval_id, "there is no approval with this id")
        record = self._lapse(record)
        status = effective_status(record.status, record.request.expires_at, self._clock())
        if status != record.status:
            return ApprovalRecord(
                request=record.request,
                status=status,
                decision=record.decision,
                resolved_at=record.resolved_at,
                consumed_at=record.consumed_at,
            )
        return record

    def _lapse(self, record: ApprovalRecord) -> ApprovalRecord:
        """``record`` as withdrawn if its lease ran out (read only: :meth:`withdraw_lapsed`
        records it, once)."""
        return lapsed(record, self._leases.get(record.request.id), self._clock())

    async def renew_lease(self, approval_id: str, until: float | None) -> ApprovalRecord:
        with self._lock:
            record = self._current(approval_id)
            if record.status == "pending":
                if until is None:
                    self._leases.pop(approval_id, None)
                else:
                    self._leases[approval_id] = until
            return record

    async def withdraw_lapsed(self) -> list[ApprovalRecord]:
        with self._lock:
            now = self._clock()
            changed: list[ApprovalRecord] = []
            for approval_id, until in list(self._leases.items()):
                record = lapsed(self._records[approval_id], until, now)
                if record.status == "denied":
                    del self._leases[approval_id]
                    self._records[approval_id] = record
                    self._wake(approval_id)
                    changed.append(record)
            return changed

    async def put(self, request: ApprovalRequest) -> None:
        self._insert(request, None)

    async def put_leased(self, request: ApprovalRequest, until: float) -> None:
        self._insert(request, until)

    def _insert(self, request: ApprovalRequest, lease_until: float | None) -> None:
        with self._lock:
            if request.id in self._records:
                raise already_stored("approval", request.id)
            self._records[request.id] = ApprovalRecord(request=request, status="pending")
            if lease_until is not None:
                self._leases[request.id] = lease_until
            key = (request.call.id, request.session_id, request.project)
            self._call_ids.add(request.call.id)
            newest = self._by_call.get(key)
            if newest is None or self._records[newest].request.created_at <= request.created_at:
                self._by_call[key] = request.id

    async def get(self, approval_id: str) -> ApprovalRecord:
        with self._lock:
            return self._current(approval_id)

    async def resolve(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        with self._lock:
            record = self._current(approval_id)
            if record.status != "pending":
                raise resolve_refusal(record)
            status: ApprovalStatus = "approved" if decision.approved else "denied"
            record = ApprovalRecord(
                request=record.request, status=status, decision=decision, resolved_at=self._clock()
            )
            self._records[approval_id] = record
            self._leases.pop(approval_id, None)
            self._wake(approval_id)
            return record

    async def consume(self, approval_id: str) -> ApprovalRecord:
        with self._lock:
            record = self._current(approval_id)
            if record.status != "approved":
                raise consume_refusal(record)
            record = ApprovalRecord(
                request=record.request,
                status="consumed",
                decision=record.decision,
                resolved_at=record.resolved_at,
                consumed_at=self._clock(),
            )
            self._records[approval_id] = record
            return record

    async def withdraw(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        with self._lock:
            record = self._records.get(approval_id)
            if record is None:
                raise ApprovalNotFound(approval_id, "there is no approval with this id")
            if self._lapse(record) is not record:
                return self._current(approval_id)  # its lease ran out: that first "no" stays
            if record.status == "consumed":
                raise withdraw_refusal(record)
            if record.status == "denied":
                return self._current(approval_id)
            record = ApprovalRecord(
                request=record.request,
                status="denied",
                decision=decision,
                resolved_at=self._clock(),
            )
            self._records[approval_id] = record
            self._leases.pop(approval_id, None)
            self._wake(approval_id)
            return record

    async def wait_decided(self, approval_id: str, timeout: float) -> ApprovalRecord:  # noqa: ASYNC109
        """The record once it is no longer pending, or as it is after ``timeout`` seconds
        (or at its expiry); a ``resolve`` or ``withdraw`` sets the waiter's event."""
        deadline = anyio.current_time() + max(0.0, timeout)
        while True:
            with self._lock:
                record = self._current(approval_id)
                if record.status != "pending":
                    return record
                event = anyio.Event()
                self._decided.setdefault(approval_id, []).append(event)
                lease = self._leases.get(approval_id, math.inf)
            left = min(deadline - anyio.current_time(), record.request.expires_at - self._clock())
            if left <= 0:
                return record
            # A lease running out wakes nobody: look again when it is due.
            with anyio.move_on_after(min(left, max(lease - self._clock(), 0.0))):
                await event.wait()
            with self._lock:
                waiting = self._decided.get(approval_id)
                if waiting is not None and event in waiting:
                    waiting.remove(event)
                    if not waiting:
                        del self._decided[approval_id]

    async def put_interrupt(
        self, interrupt_id: str, data: dict[str, Any], expires_at: float
    ) -> None:
        with self._lock:
            if interrupt_id in self._interrupts:
                raise already_stored("interrupt", interrupt_id)
            self._interrupts[interrupt_id] = (copy.deepcopy(data), expires_at, False)

    async def take_interrupt(self, interrupt_id: str) -> dict[str, Any]:
        with self._lock:
            found = self._interrupts.get(interrupt_id)
            if found is None or found[2] or self._clock() >= found[1]:
                raise interrupt_refusal(interrupt_id, taken=None if found is None else found[2])
            data, expires_at, _ = found
            self._interrupts[interrupt_id] = (data, expires_at, True)
            return copy.deepcopy(data)

    async def count_call(
        self, key: str, *, limit: int, window: float | None, now: float
    ) -> float | None:
        with self._lock:
            times = self._calls.setdefault(key, [])
            if window is not None:
                times[:] = [t for t in times if t > now - window]
            if len(times) >= limit:
                return next_allowed(times, limit, window)
            times.append(now)
            return None

    async def list_pending(self) -> list[ApprovalRequest]:
        with self._lock:
            now = self._clock()
            pending = [
                r.request
                for r in self._records.values()
                if effective_status(r.status, r.request.expires_at, now) == "pending"
                and self._leases.get(r.request.id, math.inf) > now
            ]
        return sorted(pending, key=lambda request: request.created_at)

    async def find_approved(
        self,
        tool: str,
        spec_fingerprint: str,
        arguments_hash: str,
        session_id: str | None,
        *,
        project: str | None = None,
    ) -> ApprovalRequest | None:
        with self._lock:
            now = self._clock()
            for record in self._records.values():
                request = record.request
                if (
                    record.status == "approved"
                    and request.tool == tool
                    and effective_status(record.status, request.expires_at, now) == "approved"
                    and request.binds(spec_fingerprint, arguments_hash, session_id, project)
                ):
                    return request
        return None

    def never_asked(self, call_id: str) -> bool:
        """Whether no approval was ever recorded for ``call_id`` (in any session or project):
        answered in-process, without awaiting, so the executor's allowed path skips the
        lookup :meth:`find_by_call` would make."""
        return call_id not in self._call_ids

    async def find_by_call(
        self, call_id: str, *, session_id: str | None, project: str | None
    ) -> ApprovalRecord | None:
        with self._lock:
            approval_id = self._by_call.get((call_id, session_id, project))
            return None if approval_id is None else self._current(approval_id)

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
        grant = SessionGrant(
            session_id=session_id,
            tool=tool,
            spec_fingerprint=spec_fingerprint,
            project=project,
            at=self._clock() if at is None else at,
            by=by,
            approval_id=approval_id,
        )
        with self._lock:
            # The first grant is the one calls ran under: granting again keeps its giver.
            self._sessions.setdefault((session_id, tool, spec_fingerprint, project), grant)

    async def has_session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> bool:
        return (
            await self.session_grant(session_id, tool, spec_fingerprint, project=project)
            is not None
        )

    async def session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> SessionGrant | None:
        with self._lock:
            return self._sessions.get((session_id, tool, spec_fingerprint, project))

    async def revoke_session(self, session_id: str) -> None:
        """Forget every grant of ``session_id``."""
        with self._lock:
            self._sessions = {
                key: grant for key, grant in self._sessions.items() if key[0] != session_id
            }

    async def add_always_rule(
        self,
        rule: str,
        *,
        project: str,
        server: str | None = None,
        fingerprint: str | None = None,
        by: str | None = None,
    ) -> StandingRule:
        new = new_rule(
            rule, project=project, server=server, fingerprint=fingerprint, by=by, now=self._clock()
        )
        with self._lock:
            for record in self._rules:
                if record.rule == new.rule and record.scope() == new.scope():
                    return record
            self._rules.append(new)
            return new

    async def remove_always_rule(
        self, rule: str, *, project: str | None = None
    ) -> list[StandingRule]:
        """Drop the standing rule with this id, or else the rules with this text."""
        with self._lock:
            gone = [r for r in self._rules if r.id == rule] or [
                r for r in self._rules if matches(r, rule, project)
            ]
            self._rules = [r for r in self._rules if r not in gone]
            return gone

    async def always_rules(self, project: str | None = None) -> list[StandingRule]:
        with self._lock:
            return [r for r in self._rules if project is None or r.project == project]

    async def close(self) -> None:
        """Nothing to release; the records stay readable until the store is dropped."""
