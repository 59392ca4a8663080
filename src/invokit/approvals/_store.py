"""The approval store protocol, and the rules every store applies the same way."""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

from invokit.approvals._models import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
)
from invokit.approvals._standing import SessionGrant, StandingRule, check_scope
from invokit.exceptions import (
    ApprovalAlreadyUsed,
    ApprovalError,
    ApprovalExpired,
    ApprovalNotFound,
    PolicyError,
)
from invokit.permissions.internal import RuleSyntaxError, parse_rule


@runtime_checkable
class ApprovalStore(Protocol):
    """Where approvals wait for a person and are used up, at most once each."""

    async def put(self, request: ApprovalRequest) -> None:
        """Store a new pending approval; an id that is already there is an error."""
        ...

    async def get(self, approval_id: str) -> ApprovalRecord:
        """The record; :class:`ApprovalNotFound` if there is none."""
        ...

    async def resolve(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        """Pending becomes approved or denied; anything else raises."""
        ...

    async def consume(self, approval_id: str) -> ApprovalRecord:
        """Atomically turn an approved, unexpired approval into consumed; one caller wins."""
        ...

    async def withdraw(self, approval_id: str, decision: ApprovalDecision) -> ApprovalRecord:
        """A "no" that wins over a "yes" not yet used: pending or approved (not consumed)
        becomes denied with ``decision``, atomically; a denied record stays as it is.
        :class:`ApprovalAlreadyUsed` when the call already ran (consumed)."""
        ...

    async def wait_decided(self, approval_id: str, timeout: float) -> ApprovalRecord:  # noqa: ASYNC109
        """The record once it is no longer pending (decided, withdrawn, used or expired), or
        as it is after ``timeout`` seconds: a decision made in any process that shares the
        store wakes the waiter. :class:`ApprovalNotFound` for an unknown id."""
        ...

    async def put_interrupt(
        self, interrupt_id: str, data: dict[str, Any], expires_at: float
    ) -> None:
        """Keep an interrupt (``AuthorizationRequired``, ``ExternalCall``) as the executor made
        it (its ``to_dict``), so it is resumed from this record, once, in any process."""
        ...

    async def take_interrupt(self, interrupt_id: str) -> dict[str, Any]:
        """The stored interrupt, marked used atomically: one caller wins.
        :class:`ApprovalNotFound`, :class:`ApprovalAlreadyUsed` or :class:`ApprovalExpired`."""
        ...

    async def count_call(
        self, key: str, *, limit: int, window: float | None, now: float
    ) -> float | None:
        """Atomically record one call under ``key`` if fewer than ``limit`` calls are recorded
        for it (within the last ``window`` seconds; ever when ``None``). ``None`` when it was
        recorded, else the epoch time the next call will be allowed (``math.inf``: never).
        The key carries the quota's scope (tool or tag, session or turn, project)."""
        ...

    async def list_pending(self) -> list[ApprovalRequest]:
        """Pending, unexpired requests, oldest first."""
        ...

    async def find_approved(
        self,
        tool: str,
        spec_fingerprint: str,
        arguments_hash: str,
        session_id: str | None,
        *,
        project: str | None = None,
    ) -> ApprovalRequest | None:
        """An approved, unused, unexpired request bound to exactly this call in ``project``: a
        person approved it elsewhere (``invokit approvals approve``) and the model called
        again. A request of another project (or with none, unless ``project`` is ``None``)
        never matches."""
        ...

    async def find_by_call(
        self, call_id: str, *, session_id: str | None, project: str | None
    ) -> ApprovalRecord | None:
        """The newest approval recorded for the call with this id in ``session_id`` and
        ``project`` (``None`` matches only ``None``), whatever its status: how a call that a
        framework runs again finds the approval it is already waiting for."""
        ...

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
        """Approve this tool version for the rest of ``session_id``, in ``project`` only;
        ``by``, ``at`` (the store's clock when ``None``) and ``approval_id`` say who gave it,
        when and by answering which approval. A grant already recorded keeps its giver."""
        ...

    async def session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> SessionGrant | None:
        """The grant of ``session_id`` that covers this tool version in ``project`` (matched as
        :meth:`has_session_grant` does), with who gave it and when; ``None`` when there is none."""
        ...

    async def has_session_grant(
        self, session_id: str, tool: str, spec_fingerprint: str, *, project: str | None = None
    ) -> bool:
        """Whether a grant of ``session_id`` covers this tool version in ``project`` (a grant
        recorded without a project covers only ``project=None``)."""
        ...

    async def revoke_session(self, session_id: str) -> None:
        """Forget every grant of ``session_id``."""
        ...

    async def add_always_rule(
        self,
        rule: str,
        *,
        project: str,
        server: str | None = None,
        fingerprint: str | None = None,
        by: str | None = None,
    ) -> StandingRule:
        """Record a standing "approve always" rule (a policy rule string) for ``project`` and,
        for a remote tool, its ``server`` and pinned ``fingerprint``; the same rule with the same
        scope is recorded once (the existing record is returned)."""
        ...

    async def remove_always_rule(
        self, rule: str, *, project: str | None = None
    ) -> list[StandingRule]:
        """Drop the standing rule with this id, or else the rules with this text (in ``project``
        only, when given); the records removed."""
        ...

    async def always_rules(self, project: str | None = None) -> list[StandingRule]:
        """The standing rules of ``project`` (every rule, legacy ones included, when ``None``),
        in the order they were added."""
        ...

    async def close(self) -> None: ...


def effective_status(stored: ApprovalStatus, expires_at: float, now: float) -> ApprovalStatus:
    """What a record is now: pending or approved past its time has expired."""
    if stored in ("pending", "approved") and now >= expires_at:
        return "expired"
    return stored


def resolve_refusal(record: ApprovalRecord) -> ApprovalError:
    """The error for resolving a record that is not pending."""
    approval_id = record.request.id
    if record.status == "expired":
        return ApprovalExpired(approval_id, "it expired unresolved and counts as denied")
    decision = record.decision
    if record.status == "denied" and decision is not None and decision.by == "executor":
        # Taken back by the executor (its caller went away, nobody answered in time): say why.
        return ApprovalAlreadyUsed(approval_id, f"withdrawn: {decision.reason or 'no reason'}")
    return ApprovalAlreadyUsed(approval_id, f"it is already {record.status}")


def consume_refusal(record: ApprovalRecord) -> ApprovalError:
    """The error for consuming a record that is not approved and fresh."""
    approval_id = record.request.id
    status = record.status
    if status == "expired":
        return ApprovalExpired(approval_id, "it expired before it was used")
    if status == "consumed":
        return ApprovalAlreadyUsed(approval_id, "it was used already; an approval is single-use")
    if status == "denied":
        decision = record.decision
        if decision is not None and decision.by == "executor":
            return ApprovalError(approval_id, f"withdrawn: {decision.reason or 'no reason'}")
        return ApprovalError(approval_id, "it was denied")
    return ApprovalError(approval_id, "it is still waiting for a decision")


def withdraw_refusal(record: ApprovalRecord) -> ApprovalError:
    """The error for withdrawing an approval whose call already ran."""
    return ApprovalAlreadyUsed(
        record.request.id, "its call already ran (the approval was used); a no came too late"
    )


def next_allowed(times: list[float], limit: int, window: float | None) -> float:
    """When the next call is allowed, given the ``times`` (ascending) of the calls recorded in
    the window: when enough of the oldest have left it, or never without a window."""
    if window is None or limit <= 0:
        return math.inf
    return times[len(times) - limit] + window


def already_stored(what: str, key: str) -> ValueError:
    """The error for storing an approval or interrupt (``what``) whose id is taken."""
    return ValueError(f"{what} {key} is already stored")


def interrupt_refusal(interrupt_id: str, *, taken: bool | None) -> ApprovalError:
    """The error for taking an interrupt that is not there to take: never stored
    (``taken`` is ``None``), taken already, or else expired."""
    if taken is None:
        return interrupt_missing(interrupt_id)
    return interrupt_used(interrupt_id) if taken else interrupt_expired(interrupt_id)


def interrupt_used(interrupt_id: str) -> ApprovalError:
    return ApprovalAlreadyUsed(interrupt_id, "it was resumed already; an interrupt resumes once")


def interrupt_expired(interrupt_id: str) -> ApprovalError:
    return ApprovalExpired(interrupt_id, "it expired before it was resumed; call the tool again")


def interrupt_missing(interrupt_id: str) -> ApprovalError:
    return ApprovalNotFound(interrupt_id, "no interrupt with this id was recorded by invokit")


def check_rule(rule: str) -> str:
    """Refuse a standing rule that the policy could not parse."""
    try:
        return parse_rule(rule, "allow").text
    except RuleSyntaxError as exc:
        raise PolicyError(str(exc), source="approve always") from None


def new_rule(
    rule: str,
    *,
    project: str,
    server: str | None,
    fingerprint: str | None,
    by: str | None,
    now: float,
) -> StandingRule:
    """A standing rule to record, its text and scope checked first: what every store's
    ``add_always_rule`` records unless the same rule and scope is there already."""
    text = check_rule(rule)
    check_scope(project, server, fingerprint)
    return StandingRule.new(
        text, project=project, server=server, fingerprint=fingerprint, created_at=now, by=by
    )


async def call_record(
    store: ApprovalStore, call_id: str, *, session_id: str | None, project: str | None
) -> ApprovalRecord | None:
    """The newest approval ``store`` recorded for the call ``call_id`` of ``session_id`` in
    ``project`` (any status), so it holds across processes; ``None`` when there is none or the
    store cannot say. The one read of "this call's earlier question": the executor's decision
    reads it into its snapshot, and its approvals part reads it where no snapshot did."""
    if type(call_id) is not str:
        return None
    try:
        return await store.find_by_call(call_id, session_id=session_id, project=project)
    except Exception:  # a store that cannot look up (or a legacy one): ask anew
        return None
