"""What the LangChain and ADK adapters share: refusing an answer given for another request."""

from __future__ import annotations

from invokit._calls import ToolCall, ToolResult
from invokit.approvals import ApprovalRequest
from invokit.execution import Executor
from invokit.execution._approving import withdraw


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
