"""The decision step of the pipeline: read the snapshot, decide (``_decision.py``), report.

``execute``'s guarded path, an identical retry, ``resume`` (with or without edited arguments),
a hook's rewrite and a resumed authorization all pass through :func:`decide_step`, so a deny
rule always wins and the policy in force is the one asked. Only the executor's shortest path (a
plain tool under a policy whose answer never depends on the call) skips it, because that
verdict was already given once per tool in ``prepare`` (``Prepared.settled``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.exceptions import ArgumentsError, ToolError
from invokit.execution._decision import Snapshot, Verdict, decide
from invokit.execution._outcomes import Failed
from invokit.execution._prepared import Prepared
from invokit.execution._records import decision_data, denied_message
from invokit.execution._snapshot import read_call, read_store
from invokit.permissions import PermissionRequest
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.execution._doors import Deciding, Standing
    from invokit.permissions import Decision


@dataclass(frozen=True, slots=True)
class Decided:
    """A call that may go on: allowed, or to be asked about."""

    args: dict[str, Any]
    requests: tuple[PermissionRequest, ...]
    decision: Decision
    verdict: Verdict
    snapshot: Snapshot
    """What the decision read: the approvals part acts on its record of this call's earlier
    question (``Snapshot.earlier``, when ``Snapshot.read``) instead of reading it again."""


async def verdict_of(
    ex: Standing,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    *,
    store: bool,
) -> tuple[Snapshot, Verdict] | ToolError:
    """The snapshot and the verdict, reporting nothing; ``store``: for an ask, read what the
    store knows too (an approval being resumed answers the ask itself: it does not)."""
    snapshot = await read_call(ex, prepared, call, args, ctx)
    if isinstance(snapshot, ToolError):
        return snapshot
    verdict = decide(call, prepared, args, snapshot)
    if store and verdict.action == "ask":
        snapshot = await read_store(ex, prepared, call, args, snapshot, verdict.decision)
        verdict = decide(call, prepared, args, snapshot)
    return snapshot, verdict


async def decide_step(
    ex: Deciding,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    *,
    store: bool = True,
) -> Decided | Failed:
    """The verdict on validated ``args``, reported; a refusal is a ``Failed`` outcome."""
    found = await verdict_of(ex, prepared, call, args, ctx, store=store)
    if isinstance(found, ToolError):
        return ex._failed(call, start, found.kind, found.message, data=found.data)
    snapshot, verdict = found
    decision = verdict.decision
    if "decided" in ex._sinks_for:
        ex._emit("decided", call, decision_data(decision))
    if verdict.action == "deny":
        if verdict.by == "no":  # a person's "no" to this very call: no grant overrides it
            return ex._failed(call, start, verdict.kind, verdict.reason)
        return ex._failed(
            call, start, "denied", denied_message(call.name, decision), data={"rule": decision.rule}
        )
    return Decided(args, snapshot.requests, decision, verdict, snapshot)


async def validate_and_decide(
    ex: Deciding,
    prepared: Prepared,
    call: ToolCall,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    start: float,
    source: str,
    *,
    store: bool = True,
) -> Decided | Failed:
    """For arguments that changed after the first decision (a hook's rewrite, a person's
    edit): validated, then :func:`decide_step`; ``source`` names them in an error."""
    try:
        args = prepared.validator(arguments)
    except ArgumentsError as exc:
        return ex._failed(call, start, "invalid_arguments", f"{source} are invalid: {exc}")
    return await decide_step(ex, prepared, call, args, ctx, start, store=store)
