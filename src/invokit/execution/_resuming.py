"""Resuming a call: applying a person's answer to its approval, and running what was approved.

An approval satisfies an ``ask``, never a ``deny``: the approved call is decided again
(``_deciding.decide_step``, without the store: the approval answers the ask) before it runs.
Also the resume of an authorization or a host-run call, and recording those interrupts.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError, ApprovalExpired
from invokit.execution._answers import emit_resolved
from invokit.execution._asked import denied_by
from invokit.execution._deciding import decide_step, validate_and_decide
from invokit.execution._normalize import value_to_result
from invokit.execution._outcomes import (
    ApprovalRequired,
    AuthorizationRequired,
    Completed,
    ExternalCall,
    Failed,
    Interrupted,
    Outcome,
    interrupt_from_dict,
)
from invokit.execution._records import completed_data
from invokit.execution._scopes import remember_scope
from invokit.tools import ToolContext
from invokit.tools.internal import ProgressCallback

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest, ApprovalScope
    from invokit.execution._doors import Answering, Asking, Holding
    from invokit.execution._outcomes import Interrupt
    from invokit.permissions import Person


async def decide_request(
    ex: Asking,
    approval_id: str,
    answer: ApprovalDecision | None,
    *,
    ctx: ToolContext | None,
    start: float,
    on_progress: ProgressCallback | None = None,
) -> Outcome:
    """Apply ``answer`` (``None``: it was decided elsewhere) to the request, then run the call
    if it is approved and the policy in force still lets it run.

    A "no" from any channel is final: on a request approved elsewhere and not yet used it
    withdraws the approval. A "yes" never overrides a "no", and a "yes" with edited arguments on
    a request already approved with other arguments runs nothing (``approval_conflict``).
    """
    record = await ex.approvals.get(approval_id)
    request = record.request
    call = request.call
    if ctx is not None:
        call = ctx.call or call  # the same execution goes on: report it as that call
        return await _decide_request(ex, record, answer, ctx, start, on_progress, call)
    # A resume: a new execution of the call, traced as its own span linked to the asking one.
    traced = _start_resumed(ex, call, request)
    try:
        return await _decide_request(ex, record, answer, ctx, start, on_progress, call)
    except BaseException as exc:
        for sink in traced:
            sink.abandon(call, time.time(), type(exc).__name__)
        raise


async def _decide_request(
    ex: Asking,
    record: ApprovalRecord,
    answer: ApprovalDecision | None,
    ctx: ToolContext | None,
    start: float,
    on_progress: ProgressCallback | None,
    call: ToolCall,
) -> Outcome:
    request = record.request
    approval_id = request.id
    if request.project != ex.project:
        # An approval belongs to the project whose executor asked; nothing is recorded here.
        return ex._failed(
            call,
            start,
            "approval_mismatch",
            f"The approval request {approval_id} was asked in project {request.project!r}, "
            f"not in this one ({ex.project!r}); nothing ran and nothing was recorded. Resume "
            "it where it was asked, or call the tool again here.",
        )
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
    if answer is not None:
        why = not_permitted(request, answer)
        if why is not None:
            return ex._failed(
                call,
                start,
                "approval_not_permitted",
                f"This answer to approval request {approval_id} was not taken: {why}. Nothing "
                "ran; the question stays open for someone who may answer it.",
            )
        refused = await apply_answer(ex, record, answer, start, call)
        if isinstance(refused, Failed):
            return refused
        record = refused
    decision = record.decision
    if record.status == "pending" or decision is None:
        return ex._interrupted(ApprovalRequired(request=request))
    if not decision.approved:
        return ex._failed(call, start, "approval_denied", denied_by(request, decision))
    why = not_permitted(request, decision)
    if why is not None:  # a "yes" recorded by a channel that did not check who gave it
        return ex._failed(
            call,
            start,
            "approval_not_permitted",
            f"The approval of request {approval_id} does not count: {why}. Nothing ran.",
        )
    prepared = ex._lookup(request.tool)
    if prepared is None or prepared.spec.fingerprint != request.spec_fingerprint:
        return ex._failed(
            call,
            start,
            "approval_mismatch",
            f"The tool {request.tool!r} changed or disappeared since the approval was asked; "
            "nothing ran. Call it again.",
        )
    if ctx is None or decision.credentials:
        ctx = ToolContext(
            call,
            resources=ex.resources,
            credentials=decision.credentials,
            on_progress=ex._progress(call, on_progress),
        )
    # The policy in force decides again: an approval satisfies an ask, never a deny.
    if decision.arguments is not None:
        decided = await validate_and_decide(
            ex, prepared, call, decision.arguments, ctx, start, "The edited arguments", store=False
        )
    else:
        decided = await decide_step(ex, prepared, call, request.arguments, ctx, start, store=False)
    if isinstance(decided, Failed):
        # The approval is used up: it must never run later, with these or other arguments.
        with contextlib.suppress(ApprovalError):
            await ex.approvals.consume(approval_id)
        return decided
    try:
        consumed = await ex.approvals.consume(approval_id)
    except ApprovalAlreadyUsed:
        raise
    except ApprovalError as exc:
        return ex._failed(
            call, start, "approval_expired", f"The approval cannot be used: {exc.detail}"
        )
    args = decided.args
    approved = replace(consumed.request, arguments=args)
    # A wider scope covers what runs (a person's edit, with its own requests), never the
    # arguments the person rejected by editing them.
    ran = replace(
        request, arguments=args, arguments_hash=canonical_hash(args), requests=decided.requests
    )
    await remember_scope(ex, prepared, ran, decision.scope)
    return await ex._run(
        prepared, call, args, ctx, start, approved=approved, decision=decided.decision
    )


async def apply_answer(
    ex: Answering,
    record: ApprovalRecord,
    answer: ApprovalDecision,
    start: float,
    call: ToolCall | None = None,
) -> ApprovalRecord | Failed:
    """Record ``answer`` on a pending request, or reconcile it with a decision made elsewhere:
    a "no" withdraws an unused "yes"; a "yes" does not change a "no"; a "yes" for other
    arguments than the ones approved runs nothing."""
    request = record.request
    call = call or request.call  # the execution going on, when there is one
    approval_id = request.id
    if record.status == "pending":
        try:
            resolved = await ex.approvals.resolve(approval_id, answer)
        except ApprovalExpired:
            return ex._failed(
                call, start, "approval_expired", f"The approval request {approval_id} expired."
            )
        except ApprovalAlreadyUsed:  # decided elsewhere meanwhile: reconcile with that
            record = await ex.approvals.get(approval_id)
        else:
            emit_resolved(ex, call, request, answer)
            return resolved
    if record.status == "consumed":
        raise ApprovalAlreadyUsed(
            approval_id, "it was used already; an approval runs its call once"
        )
    if record.status != "approved":
        return record  # denied (or expired): a "yes" does not change that
    if not answer.approved:
        record = await ex.approvals.withdraw(approval_id, answer)
        emit_resolved(ex, call, request, answer)
        return record
    if answer.arguments is not None and canonical_hash(answer.arguments) != canonical_hash(
        record.arguments
    ):
        return ex._failed(
            call,
            start,
            "approval_conflict",
            f"The approval request {approval_id} was already approved elsewhere "
            + (
                "with other edited arguments"
                if record.arguments is not request.arguments
                else "for its original arguments"
            )
            + "; nothing ran. Resume it without arguments to run what was approved, or deny "
            "it and call the tool again with the arguments you want.",
        )
    return record


async def resume_other(
    ex: Asking,
    interrupt_id: str,
    credentials: Mapping[str, Any] | None,
    result: Any,
    on_progress: ProgressCallback | None,
) -> Outcome:
    """Resume an ``AuthorizationRequired`` or ``ExternalCall`` from the executor's own record
    of it (taken once, atomically), never from the caller's copy."""
    start = perf_counter()
    if interrupt_id.startswith("auth_") and credentials is None:
        # Misuse, not a decision: the interrupt stays open for a resume with credentials.
        raise ValueError(f"resume the authorization interrupt {interrupt_id} with credentials=...")
    ex._interrupts.pop(interrupt_id, None)
    interrupt = interrupt_from_dict(await ex.approvals.take_interrupt(interrupt_id))
    call = interrupt.call
    _start_resumed(ex, call, None)  # a new execution of the call: its own span
    if isinstance(interrupt, ExternalCall):
        outcome = value_to_result(call, result, perf_counter() - start)
        if "completed" in ex._sinks_for:
            ex._emit("completed", call, completed_data(outcome, interrupt.arguments, None, None))
        return Completed(outcome)
    assert isinstance(interrupt, AuthorizationRequired)
    prepared = ex._lookup(call.name)
    if prepared is None:
        return ex._failed(call, start, "not_found", ex._not_found(call))
    ctx = ToolContext(
        call,
        resources=ex.resources,
        credentials=credentials,
        on_progress=ex._progress(call, on_progress),
    )
    # Policy is checked again: it may have changed while the call waited.
    return await ex._guarded(prepared, call, interrupt.arguments, ctx, start, approved=None)


async def hold(ex: Holding, outcome: Interrupted) -> Outcome:
    """Record an authorization or external-call interrupt in the store before it is handed
    out, so it can be resumed once, in this process or another, with what invokit recorded."""
    interrupt = outcome.interrupt
    try:
        await ex.approvals.put_interrupt(
            interrupt.id, interrupt.to_dict(), time.time() + ex.limits.approval_ttl
        )
    except Exception as exc:  # not recorded, not resumable: refuse rather than hand it out
        ex._interrupts.pop(interrupt.id, None)
        return ex._failed(
            interrupt.call,
            perf_counter(),
            "interrupt_unavailable",
            f"The {interrupt.kind} interrupt could not be recorded ({type(exc).__name__}); "
            "nothing can resume it. Call again.",
        )
    return outcome


def _start_resumed(ex: Asking, call: ToolCall, request: ApprovalRequest | None) -> list[Any]:
    """Start the resumed call's span in each tracing sink, linked to the asking span (the
    request's, for an approval)."""
    otel = sys.modules.get("invokit.execution._otel_context")
    if otel is None or not ex.sinks:
        return []
    asked = request.trace if request is not None else None
    started: list[Any] = otel.start_resumed(ex.sinks, call, time.time(), asked)
    return started


def interrupt_id(interrupt: str | Interrupt | Mapping[str, Any]) -> str:
    """The id of the interrupt to resume, and nothing else of what the caller holds: the call,
    its arguments and what it waits for come from the executor's own record (a dict can be
    forged). Raises ``ValueError`` for a mapping without one."""
    if isinstance(interrupt, Mapping):
        found = interrupt.get("id")
        if found is None and isinstance(interrupt.get("request"), Mapping):
            found = interrupt["request"].get("id")
        if not isinstance(found, str):
            raise ValueError("an interrupt to resume needs its 'id'")
        approval_id = found
    else:
        approval_id = interrupt if isinstance(interrupt, str) else interrupt.id
    if type(approval_id) is not str and isinstance(approval_id, str):
        approval_id = str.__str__(approval_id)  # a str subclass is the text it holds
    return approval_id


def not_permitted(request: ApprovalRequest, decision: ApprovalDecision) -> str | None:
    """Why this decision's person may not give it (the request's approvers, four eyes), or
    ``None``. Every "yes" passes here before it runs anything, whatever channel recorded it."""
    from invokit.permissions.internal import refusal

    asker = request.call.metadata.get("invokit.principal")
    return refusal(
        request.deciders,
        decision.person,
        asker if isinstance(asker, Mapping) else None,
        approving=decision.approved,
    )


def answer_of(
    approve: bool | None,
    *,
    scope: ApprovalScope,
    reason: str | None,
    arguments: Mapping[str, Any] | None,
    by: str | None,
    credentials: Mapping[str, Any] | None,
    person: Person | None = None,
) -> ApprovalDecision | None:
    """The answer ``resume`` was given, or ``None`` when it was decided elsewhere."""
    from invokit.approvals import ApprovalDecision

    if approve is None:
        return None
    return ApprovalDecision(
        approved=approve,
        scope=scope,
        reason=reason,
        arguments=dict(arguments) if arguments is not None else None,
        by=by,
        credentials=dict(credentials) if credentials is not None else None,
        person=person,
    )
