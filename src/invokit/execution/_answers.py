"""Answers the executor records itself: withdrawing an approval, and the audit record of an
answer when it is made; and the approvals part's own read of this call's earlier question."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from invokit._calls import ToolCall
from invokit.exceptions import ApprovalError

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest
    from invokit.execution._doors import Answering, InProject


async def earlier(ex: InProject, call_id: str, session_id: str | None) -> ApprovalRecord | None:
    """The newest approval this executor's project recorded for the call ``call_id`` of
    ``session_id`` (any status), from the store, so it holds across processes; ``None`` when
    there is none or the store cannot say. The approvals part reads it here only where the
    decision did not (``Snapshot.read``): a call the policy allowed, the settled path, a
    ``resume``'s caller asking what still waits."""
    from invokit.approvals.internal import call_record

    return await call_record(ex.approvals, call_id, session_id=session_id, project=ex.project)


async def withdraw(ex: Answering, request: ApprovalRequest, why: str) -> None:
    """Record ``request`` as denied by the executor (best effort: a store that fails leaves it
    pending, where it expires unapproved); report it."""
    from invokit.approvals import ApprovalDecision

    answer = ApprovalDecision(approved=False, reason=why, by="executor", channel="executor")
    try:
        await ex.approvals.withdraw(request.id, answer)
    except ApprovalError:
        return  # it ran already or is unknown: nothing to withdraw
    except Exception as exc:
        warnings.warn(
            f"approval {request.id} could not be withdrawn ({why}): {exc!r}",
            RuntimeWarning,
            stacklevel=2,
        )
        return
    emit_resolved(ex, request.call, request, answer)


def emit_resolved(
    ex: Answering,
    call: ToolCall,
    request: ApprovalRequest,
    answer: ApprovalDecision | None,
    consumed: bool = False,
    *,
    channel: str | None = None,
) -> None:
    """Record a decision in the audit log when it is made: the verdict, scope, who decided
    (``by``) and where (``channel``: the answer's own, else ``channel``, else ``api``), the
    project (root) and this server. ``consumed`` marks a decision made elsewhere (the CLI) that
    an identical retry is now using."""
    if "approval_resolved" not in ex._sinks_for or answer is None:
        return
    from invokit.execution._resolutions import channel_of, resolved_data

    root = getattr(ex, "project", None) or ex.policy.root
    data = resolved_data(
        request,
        answer,
        channel=channel_of(answer, channel or "api"),
        root=str(root) if root is not None else None,
        consumed=consumed,
    )
    ex._emit("approval_resolved", call, data)
