"""The decision: one function that says whether a call with these arguments may run.

preflight (``tool.permissions``) → policy → the tool's own argument-dependent approval check.
``execute``'s guarded path, an identical retry, ``resume`` (with or without edited arguments),
a hook's rewrite and a resumed authorization all pass through :func:`decide`, so a deny rule
always wins and the policy in force is the one asked. Only the executor's shortest path (a plain
tool under a policy whose answer never depends on the call) skips it, because that answer was
already given once per tool in ``prepare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.exceptions import ArgumentsError, ToolError, ToolFailed
from invokit.execution._outcomes import Failed
from invokit.execution._prepared import Prepared
from invokit.execution._records import decision_data, denied_message
from invokit.permissions import PermissionRequest
from invokit.registry import RenamedTool
from invokit.tools import Tool, ToolContext
from invokit.tools.internal import BoundCheck

if TYPE_CHECKING:
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision

_ASKING: dict[str, ToolSpec] = {}
"""A tool's spec marked ``needs_approval``, by fingerprint: how the policy treats a call the
tool's own check wants approved (asked, unless a deny or a standing rule decides)."""


@dataclass(frozen=True, slots=True)
class Decided:
    """A call that may go on: allowed, or to be asked about."""

    args: dict[str, Any]
    requests: tuple[PermissionRequest, ...]
    decision: Decision


async def decide(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
) -> Decided | Failed:
    """Preflight, policy and the tool's approval check for validated ``args``; a refusal is a
    ``Failed`` outcome (reported), anything else says allow or ask."""
    judged = await judge(ex, prepared, call, args, ctx)
    if isinstance(judged, ToolError):
        return ex._failed(call, start, judged.kind, judged.message, data=judged.data)
    requests, decision = judged
    if "decided" in ex._sinks_for:
        ex._emit("decided", call, decision_data(decision))
    if decision.verdict == "deny":
        return ex._failed(
            call, start, "denied", denied_message(call.name, decision), data={"rule": decision.rule}
        )
    return Decided(args, requests, decision)


async def judge(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
) -> tuple[tuple[PermissionRequest, ...], Decision] | ToolError:
    """The decision itself, reporting nothing: the permission requests and the verdict, or the
    refusal (a :class:`ToolError`) of a preflight or approval check that refused or broke.
    :func:`decide` reports it; ``Executor.check`` returns it."""
    tool = prepared.tool
    try:
        requests = tuple(tool.permissions(args, ctx))
    except ToolError as exc:  # the tool refused in preflight (AccessDenied ...): its own words
        return exc
    except Exception as exc:  # a broken preflight refuses the call; nothing ran
        return ToolFailed(
            f"The permission check of {call.name!r} failed ({type(exc).__name__}); nothing ran.",
            kind="denied",
        )
    decision = prepared.policy.decide(args, requests)
    if decision.verdict == "allow":
        check = _check_of(tool)
        if check is not None:
            try:
                needed = await check(args, ctx)
            except ToolError as exc:
                return exc
            except Exception as exc:
                return ToolFailed(
                    f"The approval check (needs_approval) of {call.name!r} failed "
                    f"({type(exc).__name__}: {exc}); nothing ran.",
                    kind="denied",
                )
            if needed:
                decision = _asking(ex, prepared.spec).decide(args, requests)
    return requests, decision


async def validate_and_decide(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    start: float,
    source: str,
) -> Decided | Failed:
    """For arguments that changed after the first decision (a hook's rewrite, a person's
    edit): validated, then :func:`decide`; ``source`` names them in an error."""
    try:
        args = prepared.validator(arguments)
    except ArgumentsError as exc:
        return ex._failed(call, start, "invalid_arguments", f"{source} are invalid: {exc}")
    return await decide(ex, prepared, call, args, ctx, start)


def _check_of(tool: Tool) -> BoundCheck | None:
    while isinstance(tool, RenamedTool):  # prefixed, renamed, aliased: the real tool's check
        tool = tool.inner
    return tool.approval_check


def _asking(ex: Executor, spec: ToolSpec) -> Any:
    """The policy in force compiled for ``spec`` marked ``needs_approval``."""
    fingerprint = spec.fingerprint
    asking = _ASKING.get(fingerprint)
    if asking is None:
        if len(_ASKING) >= 1024:
            _ASKING.clear()
        asking = _ASKING[fingerprint] = spec.with_annotations(needs_approval=True)
    return ex._policy.compile(asking)
