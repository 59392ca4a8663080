"""The invoke, limit and normalize steps: run the tool under its deadline, then cut and stamp
its result. The executor's shortest path inlines the common case of :func:`run`."""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall, ToolResult
from invokit._ids import new_id
from invokit.exceptions import AuthRequired
from invokit.execution._approving import hold
from invokit.execution._hooks import run_before_hooks
from invokit.execution._invoke import run_with_timeout
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
from invokit.execution._records import completed_data
from invokit.tools._context import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision


async def run(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext | None,
    start: float,
    *,
    approved: ApprovalRequest | None,
    decision: Decision | None,
    rewritten: bool = False,
) -> Outcome:
    """Hooks, then the tool, then limits. ``ctx`` is ``None`` when none was built yet (a call
    resumed after its approval); one is made when a hook or the tool needs it."""
    tool = prepared.tool
    if ex._before and not rewritten:
        if ctx is None:
            ctx = ToolContext(call, resources=ex.resources)
        outcome = await run_before_hooks(ex, prepared, call, args, ctx, start, approved)
        if outcome is not None:
            return outcome
    if tool.external:
        interrupt = ExternalCall(id=new_id("ext_", 12), call=call, arguments=args)
        return await hold(ex, ex._interrupted(interrupt))
    if "started" in ex._sinks_for:
        ex._emit("started", call, {})
    direct = prepared.direct
    if ctx is None and direct is None:
        ctx = ToolContext(call, resources=ex.resources)
    try:
        if ctx is not None:
            ctx.bind_policy(
                prepared.policy, args, decision.verdict if decision is not None else "ask"
            )
        if not tool._ready:
            await tool.ensure_setup()
        if direct is not None:
            convert = prepared.convert
            coro = direct(**(convert(args) if convert is not None else args))
        else:
            assert ctx is not None
            coro = tool.invoke(args, ctx)
        value, late = await run_with_timeout(coro, prepared.timeout)
        if late:
            if ctx is not None:
                ctx.cancel()
            result = timeout_result(call, prepared)
        else:
            result = value_to_result(call, value)
    except BaseException as exc:
        absorbed = absorb(ex, call, args, ctx, exc)
        if isinstance(absorbed, Interrupted):
            return await hold(ex, absorbed)
        result = absorbed
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
    return finish(ex, prepared, call, args, result, start, decision, approved, fresh=fresh)


def finish(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    result: ToolResult,
    start: float,
    decision: Decision | None,
    approved: ApprovalRequest | None,
    *,
    fresh: bool,
) -> Outcome:
    """The output limit, the approval id and the duration on ``result``; then the event."""
    result = apply_output_limit(result, prepared.limit, ex.artifacts)
    if approved is not None:
        result = replace(result, metadata={**result.metadata, "approval_id": approved.id})
        fresh = True
    if fresh:
        # A result built in this call that nobody else holds yet: stamp the duration in
        # place instead of copying a frozen dataclass on the hot path.
        object.__setattr__(result, "duration", perf_counter() - start)
    else:
        result = replace(result, duration=perf_counter() - start)
    if "completed" in ex._sinks_for:
        ex._emit("completed", call, completed_data(result, args, decision, approved))
    return completed(result)


def absorb(
    ex: Executor,
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
    if isinstance(exc, Exception):
        return error_to_result(call, exc)
    ex._cancelled(call, args, ctx)
    raise exc


def timeout_result(call: ToolCall, prepared: Prepared) -> ToolResult:
    """The error result of a call that ran past its deadline."""
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
