"""Answers the executor records itself: withdrawing an approval, and the audit record of an
answer when it is made."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from invokit._calls import ToolCall
from invokit.exceptions import ApprovalError

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest
    from invokit.execution._doors import Answering


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
