"""Steps 6 to 9 of the pipeline, once a call is decided: hooks, invoke (under the tool's
deadline), normalize (the one place an exception becomes a result) and the output limit."""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter, time
from typing import TYPE_CHECKING, Any

from invokit._calls import TextPart, ToolCall, ToolResult
from invokit._ids import new_id
from invokit.exceptions import AuthRequired, ChildInterrupted
from invokit.execution._children import CONTINUATION
from invokit.execution._hooks import run_before_hooks
from invokit.execution._invoke import run_in_scope
from invokit.execution._limits import apply_output_limit
from invokit.execution._normalize import error_to_result, value_to_result
from invokit.execution._outcomes import (
    AuthorizationRequired,
    ExternalCall,
    Interrupted,
    Outcome,
    completed,
)
from invokit.execution._prepared import Prepared
from invokit.execution._quotas import check_quotas
from invokit.execution._records import outcome_data, started_data
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._authority import Authority
    from invokit.execution._doors import Running
    from invokit.permissions import Decision


async def run(
    ex: Running,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext | None,
    start: float,
    *,
    approved: ApprovalRequest | None,
    decision: Decision | None,
    rewritten: bool = False,
    authority: Authority | None = None,
) -> Outcome:
    """Steps 6 to 9 for a decided call: hooks, invoke, normalize, limit. ``ctx`` is ``None``
    when none was built yet (the shortest path, a call resumed after its approval); one is made
    when a hook or the tool needs it. ``rewritten``: the hooks ran already (their rewrite was
    decided again)."""
    if not prepared.plain:  # hooks, quotas, an external tool: none, for most (prepare)
        before = await before_invoke(ex, prepared, call, args, ctx, start, approved, rewritten)
        if not isinstance(before, ToolContext | None):
            return before
        ctx = before
    record = ex._on_started  # the hot path hands sinks records itself
    if record is not None:
        record(("started", call, time(), started_data))
    tool = prepared.tool
    direct = prepared.direct
    if ctx is None and direct is None:
        ctx = ToolContext(call, resources=ex.resources)
    try:  # 7. invoke, under the tool's deadline
        if ctx is not None:  # ctx.permits answers from the policy that decided the call
            ctx.bind_policy(
                prepared.policy, args, decision.verdict if decision is not None else "ask"
            )
            ctx.output_limit = prepared.limit
        if not tool._ready:
            await tool.ensure_setup()
            ex._set_up[id(tool)] = tool  # torn down by aclose, listed or not
        if direct is not None:  # a plain @tool: its own function, no context needed
            convert = prepared.convert
            coro = direct(**(convert(args) if convert is not None else args))
        else:
            assert ctx is not None
            coro = tool.invoke(args, ctx)
        dog = ex._deadlines.arm(coro, prepared.timeout)
        if dog is None:
            value, late = await run_in_scope(coro, prepared.timeout)
        else:
            try:
                value = await coro
            except BaseException as exc:
                value, late = None, dog.ended(coro, exc)
            else:
                late = dog.ended(coro)
        # 9. normalize: what the tool returned or raised becomes a result, timed as it is made
        if late:
            result = timeout_result(call, prepared, ctx)
            _set_duration(result, perf_counter() - start)
        else:
            result = value_to_result(call, value, perf_counter() - start)
    except BaseException as exc:
        absorbed = absorb(ex, call, args, ctx, exc)
        if isinstance(absorbed, Interrupted):
            if isinstance(exc, ChildInterrupted):
                return absorbed  # the child's approval is in the store already
            return await ex._hold(absorbed)  # the tool needs credentials
        result = absorbed
        _set_duration(result, perf_counter() - start)
    fresh = True
    if ex._after:
        result, fresh = await after_hooks(ex, call, result)
    return finish(ex, prepared, call, args, result, start, decision, approved, fresh, authority)


async def before_invoke(
    ex: Running,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext | None,
    start: float,
    approved: ApprovalRequest | None,
    rewritten: bool,
) -> ToolContext | Outcome | None:
    """What runs before the invoke step for a tool that is not ``plain``: step 6, the hooks
    (unless they ran already: ``rewritten``), then its quotas; an external tool is handed out.
    Returns the context to invoke with, or the call's outcome when it ends here."""
    if ex._before and not rewritten:  # 6. hooks
        if ctx is None:
            ctx = ToolContext(call, resources=ex.resources)
        outcome = await run_before_hooks(ex, prepared, call, args, ctx, start, approved)
        if outcome is not None:
            return outcome
    if prepared.quotas and not continuing(call):  # counted after the decision and approval,
        # just before it runs; a paused tool that goes on was counted when it was called
        refused = await check_quotas(ex, prepared, call, args, start)
        if refused is not None:
            return refused
    if prepared.tool.external:  # the host runs it: hand the call out
        interrupt = ExternalCall(id=new_id("ext_", 12), call=call, arguments=args)
        return await ex._hold(ex._interrupted(interrupt))
    return ctx


def continuing(call: ToolCall) -> bool:
    """Whether ``call`` is a paused tool going on after its child's approval (its first run
    was decided and counted)."""
    continuation = CONTINUATION.get()
    return continuation is not None and continuation.call_id == call.id


async def after_hooks(ex: Running, call: ToolCall, result: ToolResult) -> tuple[ToolResult, bool]:
    """The ``after_call`` hooks, in order; each may replace the result. Returns the result and
    whether it is still the one built in this call (``fresh``)."""
    fresh = True
    for hook in ex._after:
        try:
            replaced = await hook.after_call(call, result)
        except Exception as exc:
            replaced = ToolResult.failure(
                call, "hook_failed", f"An after_call hook failed: {exc!r}"
            )
        if replaced is not None:
            result, fresh = replaced, False
    return result, fresh


def finish(
    ex: Running,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    result: ToolResult,
    start: float,
    decision: Decision | None,
    approved: ApprovalRequest | None,
    fresh: bool,
    authority: Authority | None = None,
) -> Outcome:
    """Step 8: the output limit; then the approval id on ``result``, its duration, and the
    ``completed`` event. ``fresh``: ``result`` is the one normalizing made and timed in this
    call; it is timed again only when something replaced it since (the limit, an approval id,
    a hook). ``authority``: the session grant or "always" rule the call ran under, put on the
    ``completed`` record."""
    content = result.content
    if not (  # one text part within the limit (the common case): what the limit leaves
        len(content) == 1
        and type(part := content[0]) is TextPart
        and len(part.text) <= prepared.max_chars
    ):
        cut = apply_output_limit(result, prepared.limit, ex.artifacts)
        if cut is not result:  # a new result, held by no one else: timed in place
            result = cut
            _set_duration(result, perf_counter() - start)
    if approved is not None:
        metadata = {**result.metadata, "approval_id": approved.id}
        result = replace(result, metadata=metadata, duration=perf_counter() - start)
    elif not fresh:
        result = replace(result, duration=perf_counter() - start)
    record = ex._on_completed
    if record is not None:
        record(
            (
                "completed",
                call,
                time(),
                outcome_data,
                args,
                result.is_error,
                result.duration,
                result.truncated,
                result.error,
                decision,
                approved,
                authority,
            )
        )
    return completed(result)


_set_duration = ToolResult.__dict__["duration"].__set__


def absorb(
    ex: Running,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext | None,
    exc: BaseException,
) -> ToolResult | Interrupted:
    """What an exception out of a tool body becomes, in the one place that decides it: an
    error result the model reads, or an interrupt for ``AuthRequired``. A cancellation (any
    ``BaseException`` that is not an ``Exception``) is recorded and raised again: never
    swallowed."""
    if isinstance(exc, AuthRequired):
        return ex._interrupted(authorization(call, args, exc))
    if isinstance(exc, ChildInterrupted):  # a compose script paused on its child's approval
        if "interrupted" in ex._sinks_for:
            ex._emit("interrupted", call, {"kind": exc.interrupt.kind, "id": exc.interrupt.id})
        return Interrupted(exc.interrupt)
    if isinstance(exc, Exception):
        return error_to_result(call, exc)
    ex._cancelled(call, args, ctx)
    raise exc


def timeout_result(call: ToolCall, prepared: Prepared, ctx: ToolContext | None) -> ToolResult:
    """The error result of a call that ran past its deadline (its context is told)."""
    if ctx is not None:
        ctx.cancel()
    return ToolResult.failure(
        call,
        "timeout",
        f"Tool {call.name!r} did not finish within {prepared.timeout:g} s and was stopped. "
        "Try a smaller request.",
    )


def authorization(call: ToolCall, args: dict[str, Any], exc: AuthRequired) -> AuthorizationRequired:
    """The interrupt for a tool that raised ``AuthRequired``."""
    return AuthorizationRequired(
        id=new_id("auth_", 12),
        call=call,
        arguments=args,
        provider=exc.provider,
        scopes=exc.scopes,
        challenge=exc.challenge,
    )
