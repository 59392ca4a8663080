"""What the SQL approval stores (SQLite, PostgreSQL) share: their rows and their rules.

Both keep an approval as the same columns (:data:`RECORD`), a request and a decision as their
JSON text, and a standing rule as :data:`RULE`. Each state change is one conditional
``UPDATE`` whose ``WHERE`` clause is the rule of that change (:class:`Guards`): written once
here, in each store's placeholder, so the two cannot drift apart. A store keeps only its SQL
statements, its connection handling and how a waiter is woken (polling or ``LISTEN``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from invokit.approvals._lease import lapse_decision, lapsed
from invokit.approvals._models import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalStatus,
)
from invokit.approvals._standing import SessionGrant, StandingRule
from invokit.approvals._store import effective_status

RECORD = "status, request, decision, resolved_at, consumed_at, expires_at, lease_until"
"""The columns :func:`record` reads, in its order."""

RULE = "id, rule, project, server, fingerprint, created_at, by"
"""The columns :func:`standing` reads, in its order."""

GRANT = "session_id, tool, spec_fingerprint, project, granted_at, by, approval_id"
"""The columns of a session grant, in the order :func:`grant_row` gives and :func:`grant`
reads them."""


def _same(text: Any) -> Any:
    return text


def request_text(request: ApprovalRequest) -> str:
    """The ``request`` column of ``request``."""
    return json.dumps(request.to_dict())


def decision_text(decision: ApprovalDecision, *, credentials: bool) -> str:
    """The ``decision`` column: a person's answer keeps the credentials it hands the call
    (``resolve``); a withdrawal has none to keep."""
    return json.dumps(decision.to_dict(include_credentials=credentials))


def lapse_text(lease_until: float) -> str:
    """The ``decision`` column of a question whose lease ran out at ``lease_until``."""
    return json.dumps(lapse_decision(lease_until).to_dict())


def decided_status(decision: ApprovalDecision) -> ApprovalStatus:
    """The ``status`` a pending approval takes with ``decision``."""
    return "approved" if decision.approved else "denied"


def record(row: tuple[Any, ...], now: float) -> ApprovalRecord:
    """The record a row of :data:`RECORD` holds, as it stands at ``now`` (expired past its
    time, withdrawn when its lease ran out)."""
    status, request, decision, resolved_at, consumed_at, expires_at, lease_until = row
    found = ApprovalRecord(
        request=ApprovalRequest.from_dict(json.loads(request)),
        status=effective_status(status, expires_at, now),
        decision=None if decision is None else ApprovalDecision.from_dict(json.loads(decision)),
        resolved_at=resolved_at,
        consumed_at=consumed_at,
    )
    return lapsed(found, lease_until, now)


def requests(rows: Iterable[tuple[Any, ...]]) -> list[ApprovalRequest]:
    """The requests of rows whose first column is ``request``."""
    return [ApprovalRequest.from_dict(json.loads(row[0])) for row in rows]


def first_bound(
    rows: Iterable[tuple[Any, ...]],
    spec_fingerprint: str,
    arguments_hash: str,
    session_id: str | None,
    project: str | None,
) -> ApprovalRequest | None:
    """Of the candidate rows the SQL found (first column ``request``), the first request bound
    to exactly this call: the SQL narrows, the request itself decides."""
    for request in requests(rows):
        if request.binds(spec_fingerprint, arguments_hash, session_id, project):
            return request
    return None


def standing(row: tuple[Any, ...], text: Callable[[Any], Any] = _same) -> StandingRule:
    """The standing rule a row of :data:`RULE` holds; ``text`` reads each text column back
    (PostgreSQL's escaping); "no server" is kept as ``''``, since it is part of the key."""
    rule_id, rule, project, server, fingerprint, created_at, by = row
    return StandingRule(
        id=text(rule_id),
        rule=text(rule),
        project=text(project),
        server=text(server) or None,
        fingerprint=text(fingerprint) or None,
        created_at=created_at,
        by=text(by),
    )


def grant_row(grant: SessionGrant, text: Callable[[Any], Any] = _same) -> tuple[Any, ...]:
    """The values of :data:`GRANT` for ``grant``; ``text`` stores each text column (PostgreSQL's
    escaping)."""
    return (
        text(grant.session_id),
        text(grant.tool),
        text(grant.spec_fingerprint),
        text(grant.project),
        grant.at,
        text(grant.by),
        text(grant.approval_id),
    )


def grant(row: tuple[Any, ...], text: Callable[[Any], Any] = _same) -> SessionGrant:
    """The session grant a row of :data:`GRANT` holds (``by`` and ``approval_id`` are ``NULL``
    in a row recorded before stores kept them)."""
    session_id, tool, fingerprint, project, at, by, approval_id = row
    return SessionGrant(
        session_id=text(session_id),
        tool=text(tool),
        spec_fingerprint=text(fingerprint),
        project=text(project),
        at=at,
        by=text(by),
        approval_id=text(approval_id),
    )


def rule_key(rule: StandingRule) -> tuple[str, str | None, str, str]:
    """``(rule, project, server, fingerprint)`` as the columns of the unique key keep them."""
    return (rule.rule, rule.project, rule.server or "", rule.fingerprint or "")


_LIVE = "(lease_until IS NULL OR lease_until > {now})"
_LAPSED = "status = 'pending' AND lease_until IS NOT NULL AND lease_until <= {now}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Guards:
    """The ``WHERE`` conditions of each state change, for a dialect whose placeholder is
    ``mark`` (``?`` or ``%s``). Each condition's only parameters are the current time, as many
    as :meth:`now` gives, placed after the statement's own."""

    mark: str

    def _fill(self, condition: str) -> str:
        return condition.format(now=self.mark)

    @property
    def resolvable(self) -> str:
        """Pending, unexpired, its lease (if any) not run out: a person may still answer."""
        return self._fill("status = 'pending' AND expires_at > {now} AND " + _LIVE)

    @property
    def consumable(self) -> str:
        """Approved and unexpired: the call may run, once."""
        return self._fill("status = 'approved' AND expires_at > {now}")

    @property
    def withdrawable(self) -> str:
        """An unused "yes", or a question whose lease has not run out (one that ran out was
        withdrawn already, and that first "no" stays)."""
        return self._fill("(status = 'approved' OR (status = 'pending' AND " + _LIVE + "))")

    @property
    def waiting(self) -> str:
        """Still waiting for a person: listed, and its lease may be renewed (never one that
        ran out: once lapsed, the question stays withdrawn)."""
        return self.resolvable

    @property
    def lapsed(self) -> str:
        """Pending with a lease that ran out: to be recorded as withdrawn."""
        return self._fill(_LAPSED)

    def now(self, condition: str, now: float) -> tuple[float, ...]:
        """The parameters of ``condition``: ``now``, once for each placeholder in it."""
        return (now,) * condition.count(self.mark)


SQLITE = Guards(mark="?")
POSTGRES = Guards(mark="%s")
