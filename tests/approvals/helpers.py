"""Helpers for the approval tests: a hand-moved clock and a ready-made request."""

from __future__ import annotations

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.approvals import ApprovalRequest
from invokit.permissions import Decision, FileWrite

SPEC = ToolSpec(name="fs.write", description="Write a file.")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_request(
    clock: Clock, *, path: str = "src/a.py", ttl: float = 3600.0, session: str | None = "s1"
) -> ApprovalRequest:
    """An approval request for writing ``path``, created at the clock's time."""
    call = ToolCall(id="c1", name="fs.write", arguments={"path": path}, session_id=session)
    return ApprovalRequest.create(
        call=call,
        spec=SPEC,
        arguments={"path": path, "text": "x"},
        requests=[FileWrite(path=path)],
        decision=Decision.ask("writes need approval"),
        ttl=ttl,
        now=clock(),
    )
