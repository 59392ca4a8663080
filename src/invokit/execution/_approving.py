"""Approvals in the executor: asking, standing grants, resuming, and remembering scopes.

Functions of the :class:`~invokit.execution.Executor` they serve (``ex``), kept apart from the
hot path: every one of them runs only for calls the policy asks about or that were interrupted.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Mapping
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._ids import new_id
from invokit._spec import ToolSpec
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
from invokit.permissions._requests import PermissionRequest, request_to_dict
from invokit.tools._context import ProgressCallback, ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision


async def refresh_standing_rules(ex: Executor) -> bool:
    """Load "approve always" rules recorded in the store (maybe by another process);
    True when they changed, so decisions must be made again."""
    rules = tuple(await ex.approvals.always_rules())
    if rules == ex._always:
        return False
    ex._always = rules
    ex._policy = ex.policy.with_rules(extra_allow=rules) if rules else ex.policy
    ex._prepared.clear()
    return True


async def standing_grant(
    ex: Executor, prepared: Prepared, call: ToolCall, args: dict[str, Any], decision: Decision
) -> ApprovalRequest | bool | None:
    """An approval that already covers this call: a session grant, an "always" rule, or a
    request a person approved elsewhere for exactly this call (consumed now)."""
    spec = prepared.spec
    try:
        if await refresh_standing_rules(
            ex,
        ):
            fresh = ex._lookup(call.name)
            if fresh is not None:
                again = fresh.policy.decide(
                    args, tuple(fresh.tool.permissions(args, ToolContext(call)))
                )
                if again.verdict == "allow":
                    return True
        if call.session_id is not None and await ex.approvals.has_session_grant(
            call.session_id, spec.name, spec.fingerprint
        ):
            return True
        request = await ex.approvals.find_approved(
            spec.name, spec.fingerprint, canonical_hash(args), call.session_id
        )
        if request is None:
            return None
        pending = await ex.approvals.get(request.id)
        edited = pending.decision.arguments if pending.decision is not None else None
        if edited is not None and canonical_hash(edited) != canonical_hash(args):
            # The person approved other arguments: only resume() may run those.
            return None
        record = await ex.approvals.consume(request.id)
        emit_resolved(ex, call, record.request, record.decision, consumed=True)
        if record.decision is not None:
            await remember_scope(ex, prepared, record.request, record.decision.scope)
        return record.request
    except ApprovalError:
        return None


async def remember_scope(
    ex: Executor, prepared: Prepared, request: ApprovalRequest, scope: str
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
    ex: Executor, prepared: Prepared, request: ApprovalRequest, scope: str
) -> None:
    session_id = request.call.session_id
    if scope == "session" and session_id is not None:
        await ex.approvals.grant_session(session_id, prepared.spec.name, prepared.spec.fingerprint)
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
        for rule in rules:
            await ex.approvals.add_always_rule(rule)
        await refresh_standing_rules(
            ex,
        )


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
        if answer.channel is None:  # audit: an inline approver decided ("terminal" says so)
            answer = replace(answer, channel="approver")
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


def standing_rules_for(spec: ToolSpec, request: ApprovalRequest) -> list[str] | None:
    """The "approve always" rules for exactly what a person approved, or ``None`` when no rule
    can say it exactly (words or paths with surrounding spaces, a rule that does not read back
    or does not cover the call)."""
    from invokit.exceptions import PolicyError
    from invokit.permissions import Policy, ShellExec, rule_for

    for item in request.requests:
        words = item.argv if isinstance(item, ShellExec) else (item.target(),)
        if any(not word or word != word.strip() for word in words):
            return None
    rules = [rule_for(spec.name, r) for r in request.requests] or [rule_for(spec.name)]
    try:
        standing = Policy(default="deny", extra_allow=rules)
    except PolicyError:
        return None
    if standing.decide(spec, request.arguments, request.requests).verdict != "allow":
        return None
    return rules
