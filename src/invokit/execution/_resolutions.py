"""The audit record of one approval decision, the same whichever channel made it.

The executor (a person at the terminal, an elicitation form, an inline approver, ``resume``, a
withdrawal) and ``invokit approvals approve|deny`` in another process both write it, at the
moment the decision is made, so the audit log answers: who decided what, where, for which call,
in which project, on which server.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from typing import TYPE_CHECKING, Any

from invokit.permissions import McpInvoke

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest

_CHANNEL_OF_BY = {
    "terminal": "terminal",
    "elicitation": "elicitation",
    "approver": "approver",
    "executor": "executor",
}


@cache
def this_server() -> str:
    """This process as the audit log names it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def channel_of(answer: ApprovalDecision, default: str = "api") -> str:
    """Where ``answer`` was made: its own ``channel``, else what its ``by`` says, else
    ``default`` (the way the executor received it)."""
    if answer.channel is not None:
        return answer.channel
    return _CHANNEL_OF_BY.get(answer.by or "", default)


def verdict_of(answer: ApprovalDecision) -> str:
    """``approve``, ``deny`` (a person or a decider said no), or ``withdrawn``: the executor
    took the question back (the caller went away, nobody answered in time, the approver
    failed); the reason says which."""
    if answer.approved:
        return "approve"
    return "withdrawn" if channel_of(answer) == "executor" else "deny"


def resolved_data(
    request: ApprovalRequest,
    answer: ApprovalDecision,
    *,
    channel: str,
    root: str | None,
    consumed: bool = False,
) -> dict[str, Any]:
    """The ``data`` of an ``approval_resolved`` event."""
    remote = next((r.server for r in request.requests if isinstance(r, McpInvoke)), None)
    return {
        "id": request.id,
        "tool": request.tool,
        "verdict": verdict_of(answer),
        "approved": answer.approved,
        "scope": answer.scope,
        "by": answer.by,
        "channel": channel,
        "reason": answer.reason,
        "edited_arguments": answer.arguments,
        "consumed_by_retry": consumed,
        "root": root,
        "server": this_server(),
        "mcp_server": remote,
        # Who decided, as approvers are matched: only when the decision names a person.
        **({"person": answer.person.to_dict()} if answer.person is not None else {}),
    }
