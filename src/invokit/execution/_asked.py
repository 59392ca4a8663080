"""A call's earlier question, read: whether an approval record asked about exactly this call,
whether it holds a person's "no" that still answers it, and what the model reads of a denial.

Plain functions of a record, and no part of the executor's: the decision reads them into its
verdict (``_decision.decide``) and the approvals part acts on the same record with them
(``_approving.rejoin``, ``_resuming``), so neither reaches into the other for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invokit._canonical import canonical_hash
from invokit.execution._prepared import Prepared

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest


def same_call(record: ApprovalRecord, plan: Prepared, arguments: dict[str, Any]) -> bool:
    """Whether ``record`` asked about exactly this call: the tool version and arguments."""
    request = record.request
    return (
        request.tool == plan.spec.name
        and request.spec_fingerprint == plan.spec.fingerprint
        and request.arguments_hash == canonical_hash(arguments)
    )


def final_no(record: ApprovalRecord) -> bool:
    """Whether ``record`` holds a person's "no" that still answers its call: denied by
    someone (a withdrawal by the executor is not an answer: the call may ask again) within
    the request's lifetime."""
    decision = record.decision
    return (
        record.status == "denied"
        and decision is not None
        and decision.by != "executor"
        and not record.request.expired()
    )


def denied_by(request: ApprovalRequest, decision: ApprovalDecision) -> str:
    """What the model reads when the request was denied, by a person or withdrawn."""
    why = decision.reason or "no reason given"
    if decision.by == "executor":
        return f"The approval request for this call of {request.tool!r} was withdrawn ({why}); nothing ran."
    return f"A person denied this call of {request.tool!r}: {why}"
