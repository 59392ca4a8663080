"""Approvals in the executor: asking, standing grants, resuming, and remembering scopes.

Functions of the :class:`~invokit.execution.Executor` they serve (``ex``), kept apart from the
hot path: every one of them runs only for calls the policy asks about or that were interrupted.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._ids import new_id
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError, ApprovalExpired
from invokit.execution._deciding import decide, validate_and_decide
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
from invokit.execution._prepared import Prepared
from invokit.execution._records import completed_data
from invokit.execution._standing import remember_scope
from invokit.execution._standing import standing_grant as standing_grant
from invokit.permissions import PermissionRequest, request_to_dict
from invokit.tools import ToolContext
from invokit.tools.internal import ProgressCallback

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest
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
    """Record an approval request; ask the inline approver if there is one (bounded by the
    request's lifetime), else interrupt. A call asked about before under the same id (a
    framework runs it again on resume) gets its earlier approval back (:func:`rejoin`)."""
    from invokit.approvals import ApprovalRequest

    again = await rejoin(ex, prepared, call, args, ctx, start)
    if again is not None:
        return again
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
        protected=decision.protected,
        session_id=call.session_id,
        project=ex.project,
        created_at=now,
        expires_at=now + ex.limits.approval_ttl,
        trace=_asking_trace(ex, call),
    )
    try:
        await ex.approvals.put(request)
    except Exception as exc:  # no store, no approval: refuse rather than run
        return ex._failed(
            call, start, "approval_unavailable", f"Approval could not be recorded: {exc!r}"
        )
    await _hold(request)
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
                **({"protected": decision.protected} if decision.protected else {}),
            },
        )
    if ex.approver is None:
        return ex._interrupted(ApprovalRequired(request=request))
    answer = await ask_approver(ex, request, start)
    if isinstance(answer, Failed):
        return answer
    return await decide_request(ex, request.id, answer, ctx=ctx, start=start)


async def _hold(request: ApprovalRequest) -> None:
    """The question lives only as long as its caller: when a server waits for it on behalf of
    a connected client (a lease in this context), the lease is taken now."""
    from invokit.approvals.internal import current_lease

    lease = current_lease()
    if lease is not None:
        await lease.hold(request.id)


async def earlier(ex: Executor, call_id: str, session_id: str | None) -> ApprovalRecord | None:
    """The newest approval this executor's project recorded for the call ``call_id`` of
    ``session_id`` (any status), from the store, so it holds across processes; ``None`` when
    there is none or the store cannot say."""
    if type(call_id) is not str:
        return None
    try:
        return await ex.approvals.find_by_call(call_id, session_id=session_id, project=ex.project)
    except Exception:  # a store that cannot look up (or a legacy one): ask anew
        return None


def same_call(record: ApprovalRecord, prepared: Prepared, args: dict[str, Any]) -> bool:
    """Whether ``record`` asked about exactly this call: the tool version and arguments."""
    request = record.request
    return (
        request.tool == prepared.spec.name
        and request.spec_fingerprint == prepared.spec.fingerprint
        and request.arguments_hash == canonical_hash(args)
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


async def rejoin(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
) -> Outcome | None:
    """The call asked about before under this id, session and project, with these arguments:
    still pending, the same :class:`ApprovalRequired` (the same approval id); approved
    meanwhile, it runs (consuming the approval, once); denied by a person, the denial. Other
    arguments under the same id withdraw the earlier approval. ``None``: ask anew."""
    record = await earlier(ex, call.id, call.session_id)
    if record is None:
        return None
    request = record.request
    if not same_call(record, prepared, args):
        if record.status in ("pending", "approved"):
            await withdraw(ex, request, "the call was made again with other arguments")
        return None
    if record.status == "pending":
        await _hold(request)
        if ex.approver is None:
            return ex._interrupted(ApprovalRequired(request=request))
        answer = await ask_approver(ex, request, start)
        if isinstance(answer, Failed):
            return answer
        return await decide_request(ex, request.id, answer, ctx=ctx, start=start)
    if record.status == "approved":
        emit_resolved(ex, call, request, record.decision, consumed=True)
        try:
            return await decide_request(ex, request.id, None, ctx=ctx, start=start)
        except ApprovalAlreadyUsed:  # another retry ran it meanwhile: this one asks anew
            return None
    if final_no(record):
        assert record.decision is not None
        return ex._failed(call, start, "approval_denied", denied_by(request, record.decision))
    return None  # used, expired or withdrawn: ask again


async def denied_before(
    ex: Executor, prepared: Prepared, call: ToolCall, args: dict[str, Any], start: float
) -> Failed | None:
    """The denial, when a person said "no" to this very call (same id, session, project, tool
    version and arguments) within its lifetime: asked again, it stays denied, whatever
    standing grant came meanwhile."""
    record = await earlier(ex, call.id, call.session_id)
    if record is None or not final_no(record) or not same_call(record, prepared, args):
        return None
    assert record.decision is not None
    return ex._failed(call, start, "approval_denied", denied_by(record.request, record.decision))


async def ran_without(ex: Executor, call: ToolCall, used: ApprovalRequest | None = None) -> None:
    """The call runs without the approval it asked for earlier (the policy came to allow it,
    or a standing grant covers it): that approval, still pending or approved and unused, is
    withdrawn, so a later resume of it cannot run the call a second time. ``used``: the
    approval this run uses, left alone. A store that can tell in-process that the call never
    asked (``never_asked``, the memory store) costs no lookup."""
    never_asked = getattr(ex.approvals, "never_asked", None)
    if never_asked is not None and type(call.id) is str and never_asked(call.id):
        return
    record = await earlier(ex, call.id, call.session_id)
    if record is None or record.status not in ("pending", "approved"):
        return
    if used is not None and record.request.id == used.id:
        return
    await withdraw(ex, record.request, "the call ran without it")


async def ask_approver(
    ex: Executor, request: ApprovalRequest, start: float
) -> ApprovalDecision | Failed:
    """The inline approver's answer. ``True``/``False`` stand for approve once / deny. An
    approver that fails, answers nonsense or does not answer within the request's lifetime
    never approves: the request is recorded as denied by the executor and the call fails. A
    cancellation while it waits (the caller went away) denies the request too, under a shield,
    so no later approval can run it; then the cancellation goes on."""
    import anyio

    from invokit.approvals import ApprovalDecision

    assert ex.approver is not None
    failure: str | None = None
    answer: object = None
    try:
        with anyio.move_on_after(max(request.expires_at - time.time(), 0.0)) as waited:
            try:
                answer = await ex.approver(request)
            except Exception as exc:
                failure = f"{type(exc).__name__}: {exc}"
    except BaseException:
        with anyio.CancelScope(shield=True):
            await withdraw(ex, request, "the caller went away")
        raise
    if waited.cancelled_caught:
        await withdraw(ex, request, "no answer within the approval's lifetime")
        return ex._failed(
            request.call,
            start,
            "approval_expired",
            f"Nobody answered the approval request {request.id} within "
            f"{ex.limits.approval_ttl:g} s; nothing ran. Call again to ask again.",
        )
    if isinstance(answer, bool):
        return ApprovalDecision(approved=answer, by="approver", channel="approver")
    if failure is None and not isinstance(answer, ApprovalDecision):
        failure = f"it returned {type(answer).__name__}, not an ApprovalDecision or a bool"
    if failure is not None:
        await withdraw(ex, request, f"the approver failed ({failure})")
        return ex._failed(
            request.call,
            start,
            "approval_failed",
            f"The approver failed while asking about this call of {request.tool!r} "
            f"({failure}); nobody approved it and nothing ran.",
        )
    assert isinstance(answer, ApprovalDecision)
    if answer.channel is None:  # audit: an inline approver decided ("terminal" says so itself)
        answer = replace(answer, channel="approver")
    return answer


async def withdraw(ex: Executor, request: ApprovalRequest, why: str) -> None:
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


async def decide_request(
    ex: Executor,
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
    ex: Executor,
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
        refused = await apply_answer(ex, record, answer, start, call)
        if isinstance(refused, Failed):
            return refused
        record = refused
    decision = record.decision
    if record.status == "pending" or decision is None:
        return ex._interrupted(ApprovalRequired(request=request))
    if not decision.approved:
        return ex._failed(call, start, "approval_denied", denied_by(request, decision))
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
            ex, prepared, call, decision.arguments, ctx, start, "The edited arguments"
        )
    else:
        decided = await decide(ex, prepared, call, request.arguments, ctx, start)
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
    ex: Executor,
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


def denied_by(request: ApprovalRequest, decision: ApprovalDecision) -> str:
    """What the model reads when the request was denied, by a person or withdrawn."""
    why = decision.reason or "no reason given"
    if decision.by == "executor":
        return f"The approval request for this call of {request.tool!r} was withdrawn ({why}); nothing ran."
    return f"A person denied this call of {request.tool!r}: {why}"


async def resume_other(
    ex: Executor,
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


async def hold(ex: Executor, outcome: Interrupted) -> Outcome:
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


# -- tracing --------------------------------------------------------------------------------


def _asking_trace(ex: Executor, call: ToolCall) -> dict[str, str] | None:
    """The trace context of the asking call's span, when a tracing sink traces it."""
    otel = sys.modules.get("invokit.execution._otel")
    return None if otel is None else otel.asking_context(ex.sinks, call)


def _start_resumed(ex: Executor, call: ToolCall, request: ApprovalRequest | None) -> list[Any]:
    """Start the resumed call's span in each tracing sink, linked to the asking span (the
    request's, for an approval)."""
    otel = sys.modules.get("invokit.execution._otel")
    if otel is None or not ex.sinks:
        return []
    asked = request.trace if request is not None else None
    started: list[Any] = otel.start_resumed(ex.sinks, call, time.time(), asked)
    return started


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
