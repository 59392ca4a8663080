"""What the adapters share: refusing an answer given for another request, and finding the
approval a person's answer is for when it was approved elsewhere meanwhile."""

from __future__ import annotations

from collections.abc import Mapping

from invokit._calls import ToolCall, ToolResult
from invokit._canonical import canonical_hash
from invokit.approvals import ApprovalRequest
from invokit.execution import Executor
from invokit.execution.internal import earlier, withdraw


async def approved_elsewhere(
    executor: Executor, call_id: str, session_id: str | None, call: ToolCall | None = None
) -> ApprovalRequest | None:
    """The approval of the call ``call_id`` that someone approved elsewhere (the CLI, another
    channel) and that has not run yet, else ``None``.

    A framework brings its person's answer only when it runs the call again, and executing it
    would run such an approval before the answer is read: a "no" must win over a "yes" that has
    not run. With ``call``, only an approval asked for exactly its tool and arguments (as
    sent) counts.
    """
    record = await earlier(executor, call_id, session_id)
    if record is None or record.status != "approved":
        return None
    request = record.request
    if call is not None:
        asked = request.call.arguments
        if (
            request.tool != call.name
            or not isinstance(asked, Mapping)
            or not isinstance(call.arguments, Mapping)
            or canonical_hash(dict(asked)) != canonical_hash(dict(call.arguments))
        ):
            return None
    return request


async def answer_for_another_request(
    executor: Executor, call: ToolCall, request: ApprovalRequest, started: float
) -> ToolResult | None:
    """An error result when a person's answer cannot be for ``request``, else ``None``.

    A framework resumes a call by running it again with the answer. When the approval the
    person saw is no longer pending (it expired, or was withdrawn), the executor asks anew and
    ``request`` is one made during this very run (after ``started``): nobody has seen it, so
    the answer must not decide it. It is withdrawn (not a person's "no": the call may ask
    again) and nothing runs.
    """
    if request.created_at < started:
        return None
    await withdraw(executor, request, "the answer given was for an earlier request")
    return ToolResult.failure(
        call,
        "approval_expired",
        "The approval this answer was for is no longer pending (it expired or was withdrawn); "
        "nothing ran. Make the call again to ask anew.",
    )
