"""Fuzzing what reaches the terminal: whatever a model, a client or a server writes into a
tool name, an argument, a reason or a message, the live log (and so `invokit audit`) shows
one line per step and the approval panel one row per field, with no raw control byte."""

from __future__ import annotations

import re
import unicodedata
from io import StringIO
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from invokit import ToolCall, tool
from invokit.approvals import ApprovalRequest
from invokit.cli._livelog import Narrator
from invokit.cli._terminal import request_panel
from invokit.permissions import Decision, FileWrite

STAMPED = re.compile(r"\d\d:\d\d:\d\d \S")
HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
anything = st.text(alphabet=st.characters(codec=None), max_size=40)
hostile = st.one_of(
    anything,
    st.sampled_from(["\n12:00:00 approved fs.write apr_X (always)", "\x1b[2J\x1b[H", "\u202e"]),
)


def hidden_in(text: str, *, allowed: str = "") -> list[str]:
    return [c for c in text if c not in allowed and unicodedata.category(c) in HIDDEN]


@tool(destructive=True)
def touch(path: str) -> str:
    """Touch a file."""
    return path


def records(name: str, key: str, value: str, reason: str) -> list[dict[str, Any]]:
    """The events of one call, as the audit log keeps them, written by a hostile model."""
    base = {"call_id": "c1", "tool": name, "time": 1.0}
    return [
        {**base, "type": "validated", "data": {"arguments": {key: value}}},
        {**base, "type": "decided", "data": {"verdict": "ask", "reason": reason}},
        {**base, "type": "approval_requested", "data": {"id": reason}},
        {
            **base,
            "type": "approval_resolved",
            "data": {"id": "apr_1", "approved": True, "scope": value, "by": key, "channel": reason},
        },
        {**base, "type": "approval_resolved", "data": {"verdict": "withdrawn", "reason": reason}},
        {**base, "type": "completed", "data": {"is_error": True, "kind": key, "message": reason}},
        {**base, "type": "failed", "data": {"kind": value, "message": reason, "arguments": {}}},
        {**base, "type": "interrupted", "data": {"kind": "approval", "id": reason}},
    ]


@settings(max_examples=300)
@given(name=hostile, key=hostile, value=hostile, reason=hostile)
def test_every_live_log_line_is_one_inert_line(
    name: str, key: str, value: str, reason: str
) -> None:
    """Each step of a call is one line, stamped, with no hidden character, in plain text and
    as the ANSI the live log writes (whose only escapes are its own colours). The one place
    two lines travel together is a held "asks" line released with the step that followed it;
    a line break a model wrote would make a line that does not start with the stamp."""
    narrator = Narrator()
    for record in records(name, key, value, reason):
        line = narrator.line(record)
        if line is None:
            continue
        assert not hidden_in(line.plain, allowed="\n"), repr(line.plain)
        shown = line.plain.split("\n")
        assert all(STAMPED.match(each) for each in shown), repr(line.plain)
        assert len(shown) == 1 or (len(shown) == 2 and shown[0][9:].startswith("asks ")), shown
        out = StringIO()
        Console(file=out, width=10_000, color_system=None).print(line)
        assert out.getvalue().count("\n") == len(shown), repr(out.getvalue())


@settings(max_examples=150, deadline=None)
@given(name=hostile, value=hostile, reason=hostile)
def test_the_approval_panel_has_no_raw_control_byte(name: str, value: str, reason: str) -> None:
    """The panel for a call whose tool name, path argument and reason a model wrote holds no
    hidden character but its own line breaks, and its fixed rows are one row each."""
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": value}),
        spec=touch.spec,
        arguments={"path": value},
        requests=[FileWrite(path=value or "x")],
        decision=Decision.ask(reason),
    )
    request = _renamed(request, name)
    out = StringIO()
    Console(file=out, width=400, color_system=None).print(request_panel(request))
    screen = out.getvalue()
    assert not hidden_in(screen, allowed="\n"), repr(screen)
    firsts = [line.strip("│ ").split(" ", 1)[0] for line in screen.splitlines()]
    for label in ("id", "tool", "why", "touches", "always", "arguments"):
        assert firsts.count(label) == 1, screen


def _renamed(request: ApprovalRequest, name: str) -> ApprovalRequest:
    from dataclasses import replace

    return replace(request, tool=name)
