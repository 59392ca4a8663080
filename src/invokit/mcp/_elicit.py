"""Asking the person behind an MCP client to approve a call, through elicitation.

The question names the tool, shows the exact arguments and says why the policy asked, all with
control characters and terminal escapes removed. Only an explicit "approve" runs the call: a
dismissed prompt leaves the approval pending (it can still be approved elsewhere), and a client
that cannot ask never causes an approval.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from invokit.approvals import ApprovalRequest
from invokit.mcp._identity import IDENTITY_PREFIX
from invokit.mcp._sanitize import printable, printable_json

APPROVE_FIELD = "approve"
APPROVAL_INPUT = "invokit.approval"
"""The key of the approval question in a stateless ``input_required`` result."""

REQUESTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        APPROVE_FIELD: {
            "type": "boolean",
            "title": "Approve this call",
            "description": "Run the tool once with exactly these arguments.",
        },
        "reason": {
            "type": "string",
            "title": "Reason (optional)",
            "description": "Told to the model when you refuse.",
        },
    },
    "required": [APPROVE_FIELD],
}
"""The form a client shows: one required yes/no, and an optional reason for a refusal."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """What the person said: ``approve``, ``deny``, or ``none`` (dismissed, or no answer)."""

    verdict: Literal["approve", "deny", "none"]
    reason: str | None = None


def approval_question(request: ApprovalRequest) -> str:
    """The elicitation message for ``request``: tool, why, side effects, exact arguments, id."""
    lines = [
        f"Allow the tool {printable(request.tool)!r} to run?",
        "",
        f"Why approval is needed: {printable(request.reason or 'the policy asks')}",
    ]
    if request.protected:
        runs = printable(request.protected, keep_newlines=False)
        lines.append(f"WARNING, an execution surface: {runs}. Approve only this once.")
    if request.rule:
        lines.append(f"Policy rule: {printable(request.rule)}")
    if request.requests:
        lines.append("It will:")
        for item in request.requests:
            target = printable(item.target())
            lines.append(f"  - {printable(item.kind)}: {target}")
    lines += [
        "Arguments:",
        printable_json(request.arguments),
        "",
        f"Approval id: {request.id}",
    ]
    return "\n".join(lines)


def read_answer(action: str, content: dict[str, Any] | None) -> Answer:
    """The person's answer from an elicitation result; anything unclear is not an approval."""
    reason = None
    if content is not None and isinstance(content.get("reason"), str) and content["reason"]:
        reason = printable(str(content["reason"]))[:500]
    if action == "accept":
        if content is not None and content.get(APPROVE_FIELD) is True:
            return Answer(verdict="approve")
        return Answer(verdict="deny", reason=reason or "the user did not approve it")
    if action == "decline":
        return Answer(verdict="deny", reason=reason or "the user declined")
    return Answer(verdict="none")


def input_required(request: ApprovalRequest, key: str = APPROVAL_INPUT) -> dict[str, Any]:
    """The ``input_required`` result (stateless protocol) that asks the client to put the
    approval question to the person, then call again with the answer.

    ``requestState`` is the approval id; the SDK seals it and binds it to this tool, these
    arguments and a time limit, so a client can neither read nor move it to another call.
    """
    return {
        "resultType": "input_required",
        "inputRequests": {
            key: {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": approval_question(request),
                    "requestedSchema": REQUESTED_SCHEMA,
                },
            }
        },
        "requestState": request.id,
    }


def read_input_response(responses: Mapping[str, Any] | None, key: str) -> Answer | None:
    """The person's answer in the ``inputResponses`` of a retried call; ``None`` if absent."""
    if not responses or key not in responses:
        return None
    response = responses[key]
    if isinstance(response, Mapping):
        action, content = response.get("action"), response.get("content")
    else:
        action, content = getattr(response, "action", None), getattr(response, "content", None)
    if not isinstance(action, str):
        return None
    return read_answer(action, dict(content) if isinstance(content, Mapping) else None)


ApprovalReach = Literal["cli", "host", "none"]
"""Who can still approve a pending request, as far as this server knows: ``cli`` (the store
is the SQLite file ``invokit approvals`` opens), ``host`` (a store shared with the host
application, somewhere else), ``none`` (approvals live in this process's memory)."""


def approval_reach(store: Any) -> ApprovalReach:
    """Who can approve a request kept in ``store`` from outside this server: ``invokit
    approvals`` opens the state directory's SQLite store, and a PostgreSQL store with
    ``--state`` (see :func:`state_argument`)."""
    from invokit.approvals import MemoryApprovalStore, SqliteApprovalStore
    from invokit.postgres import PostgresApprovalStore

    if isinstance(store, MemoryApprovalStore):
        return "none"
    if isinstance(store, PostgresApprovalStore):
        return "cli"
    if isinstance(store, SqliteApprovalStore):
        from invokit._state import state_dir
        from invokit.approvals.internal import APPROVALS_FILE

        try:
            default = (state_dir(create=False) / APPROVALS_FILE).resolve()
            if store.path.resolve() == default:
                return "cli"
        except OSError:
            pass
    return "host"


def state_argument(store: Any) -> str | None:
    """The ``--state`` that makes ``invokit approvals`` open ``store`` (a PostgreSQL store, its
    URL with any password masked), or ``None`` when the default state is the one."""
    from invokit.postgres import PostgresApprovalStore

    if isinstance(store, PostgresApprovalStore):
        return store.url
    return None


def pending_message(
    request: ApprovalRequest,
    reach: ApprovalReach = "cli",
    *,
    stateless: bool = False,
    state: str | None = None,
) -> str:
    """The error text for a call that waits for approval: the id, and only what can work.

    ``invokit approvals approve ID`` is suggested only when that command opens the store this
    server keeps the request in; an approval binds to this session, so the retry must come
    from the same connection. Over the stateless protocol (``stateless``) there is no session
    to bind to: any retry with the same arguments is the one. A client that names itself
    (``Invokit-Client-Id``) keeps its session through any connection or replica. ``state`` is
    the ``--state`` the command needs.
    """
    why = printable(request.reason or "the policy asks")
    head = (
        f"Tool {request.tool!r} needs a person's approval before it runs ({why}). "
        f"Approval id: {request.id}. Nothing ran."
    )
    retry = (
        "then call the tool again with exactly the same arguments, in this same session (an "
        "approval does not carry over to a new connection)."
    )
    if stateless:
        retry = "then call the tool again with exactly the same arguments."
    elif (request.session_id or "").startswith(IDENTITY_PREFIX):
        retry = "then call the tool again with exactly the same arguments, as this same client."
    if reach == "cli":
        where = "on this machine" if state is None else "that can reach the shared state"
        option = "" if state is None else f" --state {shlex.quote(state)}"
        return (
            f"{head} Ask the user to approve it in a terminal {where} with "
            f"`invokit approvals approve {request.id}{option}`, {retry}"
        )
    if reach == "host":
        return (
            f"{head} Ask the user to approve it in the application that runs this server, {retry}"
        )
    return (
        f"{head} This server keeps approvals in memory and could not ask the user, so nobody "
        "can approve this call from outside it. Tell the user it needs approval; they can allow "
        "it in the server's policy, or use a client that can show approval prompts."
    )
