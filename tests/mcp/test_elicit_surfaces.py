"""The elicitation question for a call that changes an execution surface says what runs it."""

from __future__ import annotations

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.approvals import ApprovalRequest
from invokit.mcp._elicit import approval_question
from invokit.permissions import Decision


def test_the_question_names_what_runs_the_surface() -> None:
    """A protected request's question carries the warning, escapes removed; others do not."""
    spec = ToolSpec(name="fs.write")
    call = ToolCall(id="c", name="fs.write", arguments={"path": ".envrc"})
    runs = "direnv runs it\x1b[2J in the person's shell"
    asked = Decision(verdict="ask", reason="surface", protected=runs)
    request = ApprovalRequest.create(call=call, spec=spec, arguments={}, decision=asked)
    question = approval_question(request)
    assert "WARNING, an execution surface: direnv runs it" in question
    assert "\x1b" not in question
    plain = ApprovalRequest.create(call=call, spec=spec, arguments={}, decision=Decision.ask("x"))
    assert "WARNING" not in approval_question(plain)
