"""Approvals in the executor: asking, rejoining a question asked before, using an approval
given elsewhere (resuming is in ``_resuming.py``; the names other packages import from here are
re-exported).

Nothing here decides whether a call may run: ``_decision.py`` does, and these functions act on
its verdict (and, on a resume, on the answer a person gave).

Each takes the approvals part's door (``ex``: :class:`~invokit.execution._doors.Asking`, or
the narrower :class:`~invokit.execution._doors.Answering`), kept apart from the hot path: every
one of them runs only for calls the policy asks about or that were interrupted.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._ids import new_id
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError
from invokit.execution._answers import earlier as earlier
from invokit.execution._answers import emit_resolved as emit_resolved
from invokit.execution._answers import withdraw as withdraw
from invokit.execution._asked import denied_by as denied_by
from invokit.execution._asked import final_no as final_no
from invokit.execution._asked import same_call as same_call
from invokit.execution._outcomes import (
    ApprovalRequired,
    Failed,
    Outcome,
)
from invokit.execution._prepared import Prepared
from invokit.execution._resuming import apply_answer as apply_answer
from invokit.execution._resuming import decide_request as decide_request
from invokit.execution._resuming import hold as hold
from invokit.execution._resuming import not_permitted as not_permitted
from invokit.execution._resuming import resume_other as resume_other
from invokit.execution._scopes import remember_scope
from invokit.permissions import request_to_dict
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest, ApprovalStore
    from invokit.execution._decision import Snapshot, Verdict
    from invokit.execution._doors import Answering, Asking


async def ask(
    ex: Asking,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    verdict: Verdict,
    ctx: ToolContext,
    start: float,
    known: Snapshot | None,
) -> Outcome:
    """Record an approval request asking exactly the verdict's :class:`Question` (its reason,
    rule, protected class and permission requests: the decision alone says what a person is
    asked); ask the inline approver if there is one (bounded by the request's lifetime), else
    interrupt. A call asked about before under the same id (a framework runs it again on
    resume) gets its earlier approval back (:func:`rejoin`). ``known``: what the decision
    read (its record of this call's earlier question is used, not read again); ``None`` when
    that may no longer hold (an approval the verdict named could not be used), and the
    record is read anew."""
    from invokit.approvals import ApprovalRequest

    question = verdict.question
    assert question is not None  # every verdict that is acted on by asking carries one
    record = await earlier_of(ex, call, known)
    again = await rejoin(ex, prepared, call, args, ctx, start, record)
    if again is not None:
        return again
    requests = question.requests
    now = time.time()
    request = ApprovalRequest(
        id=new_id("apr_", 16),
        call=call,
        tool=prepared.spec.name,
        spec_fingerprint=prepared.spec.fingerprint,
        arguments=args,
        arguments_hash=canonical_hash(args),
        requests=requests,
        reason=question.reason,
        rule=question.rule,
        protected=question.protected,
        session_id=call.session_id,
        project=ex.project,
        created_at=now,
        expires_at=now + ex.limits.approval_ttl,
        trace=_asking_trace(ex, call),
        deciders=ex._policy.deciders(question.rule),
    )
    try:
        await _record(ex.approvals, request)
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
                "reason": question.reason,
                "rule": question.rule,
                **({"protected": question.protected} if question.protected else {}),
            },
        )
    if ex.approver is None:
        return ex._interrupted(ApprovalRequired(request=request))
    answer = await ask_approver(ex, request, start)
    if isinstance(answer, Failed):
        return answer
    return await decide_request(ex, request.id, answer, ctx=ctx, start=start)


async def _record(store: ApprovalStore, request: ApprovalRequest) -> None:
    """Store the question. It lives only as long as its caller: when a server waits for it on
    behalf of a connected client (a lease in this context), it is stored already leased."""
    from invokit.approvals.internal import current_lease

    lease = current_lease()
    if lease is None:
        await store.put(request)
    else:
        await lease.put(store, request)


async def _hold(request: ApprovalRequest) -> None:
    """A question asked before, waited on again (a call rejoined): when a server waits for
    it on behalf of a connected client (a lease in this context), the lease is taken now."""
    from invokit.approvals.internal import current_lease

    lease = current_lease()
    if lease is not None:
        await lease.hold(request.id)


async def rejoin(
    ex: Asking,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    record: ApprovalRecord | None,
) -> Outcome | None:
    """The call asked about before under this id, session and project (``record``, its
    newest approval), with these arguments: still pending, the same :class:`ApprovalRequired`
    (the same approval id); approved meanwhile, it runs (consuming the approval, once); denied
    by a person, the denial. Other arguments under the same id withdraw the earlier approval.
    ``None``: ask anew."""
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
        try:
            return await decide_request(ex, request.id, answer, ctx=ctx, start=start)
        except ApprovalAlreadyUsed:  # another execution of this call used it: it ran there
            return ex._failed(
                call,
                start,
                "approval_used",
                f"Approval request {request.id} was used by another execution of this same "
                f"call (id {call.id!r}), which ran it; it did not run again here.",
            )
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


async def ran_without(
    ex: Answering,
    call: ToolCall,
    used: ApprovalRequest | None = None,
    known: Snapshot | None = None,
) -> None:
    """The call runs without the approval it asked for earlier (the policy came to allow it,
    or a standing grant covers it): that approval, still pending or approved and unused, is
    withdrawn, so a later resume of it cannot run the call a second time. ``used``: the
    approval this run uses, left alone. ``known``: what the decision read; where it read the
    store, its record of this call's question is the one acted on. A store that can tell
    in-process that the call never asked (``never_asked``, the memory store) costs no
    lookup."""
    if known is None or not known.read:
        never_asked = getattr(ex.approvals, "never_asked", None)
        if never_asked is not None and type(call.id) is str and never_asked(call.id):
            return
    record = await earlier_of(ex, call, known)
    if record is None or record.status not in ("pending", "approved"):
        return
    if used is not None and record.request.id == used.id:
        return
    await withdraw(ex, record.request, "the call ran without it")


async def earlier_of(
    ex: Answering, call: ToolCall, known: Snapshot | None
) -> ApprovalRecord | None:
    """This call's newest approval: the one the decision read into ``known``, else read now
    (:func:`~invokit.execution._answers.earlier`) where the decision did not read the store."""
    if known is not None and known.read:
        return known.earlier
    return await earlier(ex, call.id, call.session_id)


async def use_approval(
    ex: Asking, prepared: Prepared, call: ToolCall, request: ApprovalRequest
) -> ApprovalRequest | None:
    """Use up an approval a person gave elsewhere for exactly this call (the verdict's
    ``approval``), report it and record its wider scope; ``None`` when it cannot be used
    (used meanwhile, expired): the call is then asked about."""
    try:
        record = await ex.approvals.consume(request.id)
    except ApprovalError:
        return None
    emit_resolved(ex, call, record.request, record.decision, consumed=True)
    if record.decision is not None:
        await remember_scope(ex, prepared, record.request, record.decision.scope)
    return record.request


async def ask_approver(
    ex: Asking, request: ApprovalRequest, start: float
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


def _asking_trace(ex: Asking, call: ToolCall) -> dict[str, str] | None:
    """The trace context of the asking call's span, when a tracing sink traces it."""
    otel = sys.modules.get("invokit.execution._otel_context")
    return None if otel is None else otel.asking_context(ex.sinks, call)
