"""Recording what a wider approval covers, when a person answers: a session grant, or the
"approve always" rules for exactly what ran.

The approvals part's (``_approving.use_approval``, ``_resuming``): how far each reaches, and
why, is in ``_standing.py``, whose rules and grants the decision reads back from the store.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from invokit._spec import ToolSpec
from invokit.exceptions import ApprovalError
from invokit.execution._authority import session_authority
from invokit.execution._prepared import Prepared

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._doors import InProject, Standing


async def remember_scope(
    ex: Standing, prepared: Prepared, request: ApprovalRequest, scope: str
) -> None:
    """Record what a wider approval covers: the tool version for the session, or standing
    rules for exactly what was approved ("always"). A failure to record leaves the approval
    a one-time one (with a warning); it never fails the call that was approved."""
    try:
        await record_scope(ex, prepared, request, scope)
    except Exception as exc:
        warnings.warn(
            f"approval {request.id}: its {scope!r} scope could not be recorded: {exc!r}",
            RuntimeWarning,
            stacklevel=2,
        )


async def record_scope(
    ex: Standing, prepared: Prepared, request: ApprovalRequest, scope: str
) -> None:
    """Record a ``session`` grant or the ``always`` rules of an approved request, in this
    executor's project (and, for a remote tool, bound to its server and pinned version).
    Nothing is recorded for a request that changes an execution surface (``protected``)."""
    if request.protected is not None:
        return  # approved once, whatever scope was given: each such change is asked about
    session_id = request.call.session_id
    if scope == "session" and session_id is not None:
        spec = prepared.spec
        by, at = await _decided(ex, request.id)
        # The store keeps who gave it, so a call on another replica can name them too.
        await ex.approvals.grant_session(
            session_id,
            spec.name,
            spec.fingerprint,
            project=ex.project,
            by=by,
            at=at,
            approval_id=request.id,
        )
        authority = session_authority(
            session_id,
            str(spec.name),
            spec.fingerprint,
            ex.project,
            by=by,
            at=at,
            approval_id=request.id,
        )
        ex._grants[authority.id] = authority
    elif scope == "always":
        rules = standing_rules_for(prepared.spec, request)
        if rules is None:
            # No rule says exactly what was approved: it stays a one-time approval.
            warnings.warn(
                f"approval {request.id}: no exact rule covers this call; approved once only",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        from invokit.permissions.internal import binding_of

        server, fingerprint = binding_of(prepared.spec)
        by = await _decided_by(ex, request.id)
        for rule in rules:
            await ex.approvals.add_always_rule(
                rule, project=ex.project, server=server, fingerprint=fingerprint, by=by
            )
        # Not loaded into ``ex._always`` here: every reader of this project's rules (the
        # decision's ``read_store``, ``explain``) loads them from the store first, so they
        # count from the next call on, in this process as in any other.


async def _decided_by(ex: InProject, approval_id: str) -> str | None:
    return (await _decided(ex, approval_id))[0]


async def _decided(ex: InProject, approval_id: str) -> tuple[str | None, float | None]:
    """Who decided the approval, and when (``None`` for what the store does not know)."""
    try:
        record = await ex.approvals.get(approval_id)
    except ApprovalError:
        return None, None
    by = record.decision.by if record.decision is not None else None
    return by, record.resolved_at


def standing_rules_for(spec: ToolSpec, request: ApprovalRequest) -> list[str] | None:
    """The "approve always" rules for exactly what a person approved (``request`` holds the
    arguments and requests that ran), or ``None`` when no rule can say it exactly; see
    :func:`invokit.approvals.always_rule_preview`."""
    from invokit.approvals import always_rule_preview

    return always_rule_preview(spec, request)
