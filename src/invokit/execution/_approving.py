"""Approvals in the executor: asking, standing grants, resuming, and remembering scopes.

Functions of the :class:`~invokit.execution.Executor` they serve (``ex``), kept apart from the
hot path: every one of them runs only for calls the policy asks about or that were interrupted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._ids import new_id
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError, ApprovalExpired
from invokit.execution._normalize import value_to_result
from invokit.execution._outcomes import (
    ApprovalRequired,
    AuthorizationRequired,
    Completed,
    ExternalCall,
    Failed,
    Interrupt,
    Outcome,
)
from invokit.execution._prepared import Prepared
from invokit.execution._records import completed_data
from invokit.execution._standing import remember_scope
from invokit.execution._standing import standing_grant as standing_grant
from invokit.permissions._requests import PermissionRequest, request_to_dict
from invokit.tools._context import ProgressCallback, ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision


async def ask(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    requests: tuple[PermissionRequest, ...],
    decision: Decision,
    ctx: ToolContext,
    start: float,
) -> Outcome:
    from invokit.approvals import ApprovalRequest

    now = time.time()
    request = ApprovalRequest(
        id=new_id("apr_", 16),
        call=call,
        tool=prepared.spec.name,
        spec_fingerprint=prepared.spec.fingerprint,
        arguments=args,
        arguments_hash=canonical_hash(args),
        requests=requests,
        reason=decision.reason,
        rule=decision.rule,
        session_id=call.session_id,
        created_at=now,
        expires_at=now + ex.limits.approval_ttl,
    )
    try:
        await ex.approvals.put(request)
    except Exception as exc:  # no store, no approval: refuse rather than run
        return ex._failed(
            call, start, "approval_unavailable", f"Approval could not be recorded: {exc!r}"
        )
    if "approval_requested" in ex._sinks_for:
        ex._emit(
            "approval_requested",
            call,
            {
                "id": request.id,
                "arguments": args,
                "requests": [request_to_dict(r) for r in requests],
                "reason": decision.reason,
                "rule": decision.rule,
            },
        )
    if ex.approver is None:
        return ex._interrupted(ApprovalRequired(request=request))
    try:
        answer = await ex.approver(request)
    except Exception as exc:  # an approver that fails never approves
        from invokit.approvals import ApprovalDecision

        answer = ApprovalDecision(
            approved=False, reason=f"the approver failed: {exc!r}", by="executor"
        )
    return await decide_request(ex, request.id, answer, ctx=ctx, start=start)


async def decide_request(
    ex: Executor,
    approval_id: str,
    answer: ApprovalDecision | None,
    *,
    ctx: ToolContext | None,
    start: float,
    on_progress: ProgressCallback | None = None,
) -> Outcome:
    record = await ex.approvals.get(approval_id)
    request = record.request
    call = request.call
    if record.status == "expired":
        return ex._failed(
            call,
            start,
            "approval_expired",
            f"The approval request {approval_id} expired; nothing ran. Call again.",
        )
    if record.status == "consumed":
        raise ApprovalAlreadyUsed(
            approval_id, "it was used already; an approval runs its call once"
        )
    if answer is not None and record.status == "pending":
        try:
            record = await ex.approvals.resolve(approval_id, answer)
        except ApprovalExpired:
            return ex._failed(
                call, start, "approval_expired", f"The approval request {approval_id} expired."
            )
        emit_resolved(ex, call, request, answer)
    decision = record.decision
    if record.status == "pending" or decision is None:
        return ex._interrupted(ApprovalRequired(request=request))
    if not decision.approved:
        why = decision.reason or "no reason given"
        return ex._failed(
            call,
            start,
            "approval_denied",
            f"A person denied this call of {request.tool!r}: {why}",
        )
    prepared = ex._lookup(request.tool)
    if prepared is None or prepared.spec.fingerprint != request.spec_fingerprint:
        return ex._failed(
            call,
            start,
            "approval_mismatch",
            f"The tool {request.tool!r} changed or disappeared since the approval was asked; nothing ran. "
            "Call it again.",
        )
    args = request.arguments
    if ctx is None or decision.credentials:
        ctx = ToolContext(
            call,
            resources=ex.resources,
            credentials=decision.credentials,
            on_progress=ex._progress(call, on_progress),
        )
    if decision.arguments is not None:
        refused = check_edit(ex, prepared, call, decision.arguments, ctx, start)
        if isinstance(refused, Failed):
            # The approval is used up: it must not later run the original arguments.
            with contextlib.suppress(ApprovalError):
                await ex.approvals.consume(approval_id)
            return refused
        args = refused
    try:
        consumed = await ex.approvals.consume(approval_id)
    except ApprovalAlreadyUsed:
        raise
    except ApprovalError as exc:
        return ex._failed(
            call, start, "approval_expired", f"The approval cannot be used: {exc.detail}"
        )
    approved = replace(consumed.request, arguments=args)
    await remember_scope(ex, prepared, request, decision.scope)
    return await ex._run(prepared, call, args, ctx, start, approved=approved, decision=None)


def check_edit(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    edited: Mapping[str, Any],
    ctx: ToolContext,
    start: float,
) -> dict[str, Any] | Failed:
    """Edited arguments, validated and decided again (a deny rule still wins)."""
    checked = ex._recheck(prepared, call, edited, ctx, start, "The edited arguments")
    return checked if isinstance(checked, Failed) else checked[0]


async def resume_other(
    ex: Executor,
    interrupt: Interrupt,
    credentials: Mapping[str, Any] | None,
    result: Any,
    on_progress: ProgressCallback | None,
) -> Outcome:
    start = perf_counter()
    call = interrupt.call
    ex._interrupts.pop(interrupt.id, None)
    if isinstance(interrupt, ExternalCall):
        outcome = value_to_result(call, result)
        outcome = replace(outcome, duration=perf_counter() - start)
        if "completed" in ex._sinks_for:
            ex._emit("completed", call, completed_data(outcome, interrupt.arguments, None, None))
        return Completed(outcome)
    prepared = ex._lookup(call.name)
    if prepared is None:
        return ex._failed(call, start, "not_found", ex._not_found(call))
    if credentials is None:
        return ex._interrupted(interrupt)
    ctx = ToolContext(
        call,
        resources=ex.resources,
        credentials=credentials,
        on_progress=ex._progress(call, on_progress),
    )
    assert isinstance(interrupt, AuthorizationRequired)
    # Policy is checked again: it may have changed while the call waited.
    return await ex._guarded(prepared, call, interrupt.arguments, ctx, start, approved=None)


# -- batches and streams -------------------------------------------------------------


def emit_resolved(
    ex: Executor,
    call: ToolCall,
    request: ApprovalRequest,
    answer: ApprovalDecision | None,
    consumed: bool = False,
) -> None:
    if "approval_resolved" not in ex._sinks_for or answer is None:
        return
    ex._emit(
        "approval_resolved",
        call,
        {
            "id": request.id,
            "approved": answer.approved,
            "scope": answer.scope,
            "by": answer.by,
            "reason": answer.reason,
            "edited_arguments": answer.arguments,
            "consumed_by_retry": consumed,
        },
    )
