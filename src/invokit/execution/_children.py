"""Calls a tool makes through the executor (a compose script's children), and continuing the
tool after a child that waited for a person was resumed.

A child call carries its parent in ``ToolCall.metadata[PARENT]``. When the child needs an
approval, the parent tool stores what it needs to go on (``put_interrupt`` under
:func:`state_id`) and raises :class:`~invokit.exceptions.ChildInterrupted`. ``Executor.resume``
runs the child as for any approval, then takes that state, once, and runs the parent tool again
with :data:`CONTINUATION` set: the tool continues where it stopped instead of starting over.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.exceptions import ApprovalExpired, ApprovalNotFound
from invokit.execution._outcomes import ApprovalRequired, Interrupted, Outcome

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._doors import Continuing, InProject

PARENT = "invokit.parent"
"""The metadata key of a child call: ``{"id": parent call id, "tool": parent tool name}``."""


def state_id(approval_id: str) -> str:
    """Where the parent's state is kept, beside its child's approval."""
    return f"{approval_id}.parent"


@dataclass(frozen=True, kw_only=True, slots=True)
class Continuation:
    """What a parent tool continues from: its stored state and its child's outcome."""

    call_id: str
    """The parent call this continuation belongs to."""
    state: dict[str, Any]
    """What the parent stored when it paused (``put_interrupt`` data)."""
    child: Outcome
    """The outcome of the child call that was resumed."""


CONTINUATION: ContextVar[Continuation | None] = ContextVar("invokit_continuation", default=None)


def parent_of(call: ToolCall) -> Mapping[str, Any] | None:
    """The parent record of a child call, if ``call`` is one."""
    parent = call.metadata.get(PARENT) if call.metadata else None
    return parent if isinstance(parent, Mapping) else None


async def waiting_child(ex: InProject, call: ToolCall) -> ApprovalRequest | None:
    """The newest approval still waiting for a call that ``call`` made (a compose script
    paused on it), in ``call``'s session and this executor's project; ``None`` when none is.
    A framework that runs a call again once a person said yes resumes this one instead: run
    again, the script would repeat the calls it made before the pause."""
    found = [
        request
        for request in await ex.approvals.list_pending()
        if request.session_id == call.session_id
        and request.project == ex.project
        and (parent_of(request.call) or {}).get("id") == call.id
    ]
    return max(found, key=lambda request: request.created_at, default=None)


async def continue_parent(
    ex: Continuing, approval_id: str, request: ApprovalRequest, child: Outcome
) -> Outcome:
    """After the child call of ``request`` was resumed: run its parent tool on from its stored
    state (taken once; a second taker gets ``ApprovalAlreadyUsed``) and return the parent's
    outcome. A child still waiting, or one refused as of another project, is handed out as it
    is (the parent stays paused for its own project)."""
    if request.project != ex.project:
        return child
    if (
        isinstance(child, Interrupted)
        and isinstance(child.interrupt, ApprovalRequired)
        and child.interrupt.id == approval_id
    ):
        return child  # nothing decided yet: the parent stays paused
    start = perf_counter()
    try:
        state = await ex.approvals.take_interrupt(state_id(approval_id))
    except ApprovalNotFound:
        # No state was stored beside the approval (the process was killed between the two
        # writes): the call ran; its own outcome is all there is to hand out.
        return child
    except ApprovalExpired:
        parent = parent_of(request.call) or {}
        call = ToolCall(
            id=str(parent.get("id", request.call.id)),
            name=str(parent.get("tool", request.call.name)),
            session_id=request.call.session_id,
        )
        return ex._failed(
            call,
            start,
            "approval_expired",
            f"The script paused on approval {approval_id} waited too long and expired; "
            "nothing more of it ran. Run it again.",
        )
    call = ToolCall.from_dict(state["call"])
    prepared = ex._lookup(call.name)
    if prepared is None:
        return ex._failed(call, start, "not_found", ex._not_found(call))
    token = CONTINUATION.set(Continuation(call_id=call.id, state=state, child=child))
    try:
        # The parent was decided when it was first called; each child is decided on its own.
        return await ex._run(
            prepared, call, dict(state["arguments"]), None, start, approved=None, decision=None
        )
    finally:
        CONTINUATION.reset(token)
