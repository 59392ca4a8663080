"""A model or a client cannot print a line of its own: a tool name, an argument name or a
message holding a newline or an escape sequence is shown as one inert line, in the live log
and in ``invokit audit``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from invokit import Executor, Policy, ToolCall
from invokit.builtin import filesystem
from invokit.cli._livelog import LiveLog
from tests.cli.conftest import Cli

FORGED = "\n12:00:00 approved fs.write apr_X (always) by terminal"
ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07\u202e"

CALLS = [
    pytest.param(ToolCall(id="1", name="fs.write" + FORGED, arguments={}), id="tool-name"),
    pytest.param(
        ToolCall(id="2", name="fs.read", arguments={"path": "a.txt", "x" + FORGED: 1}),
        id="argument-name",
    ),
    pytest.param(
        ToolCall(id="3", name="fs.read", arguments={"path": "a.txt" + FORGED}),
        id="argument-value",
    ),
    pytest.param(ToolCall(id="4", name="fs.write" + ESCAPES, arguments={}), id="escapes"),
    pytest.param(
        ToolCall(id="5", name="fs.read", arguments={"path": "a.txt", ESCAPES: 1}),
        id="escaped-argument-name",
    ),
]


def assert_inert(screen: str, calls: int) -> None:
    lines = screen.splitlines()
    assert not any(line.lstrip().startswith("12:00:00") for line in lines), screen
    assert len(lines) <= calls, screen
    assert not any(char in screen for char in "\x1b\x07\u202e\r"), repr(screen)


@pytest.mark.parametrize("call", CALLS)
def test_the_live_log_prints_one_inert_line_per_call(tmp_path: Path, call: ToolCall) -> None:
    """A forged tool or argument name ends in one line of the live log, its newline and
    escapes shown as text."""
    (tmp_path / "a.txt").write_text("a")
    out = StringIO()
    sink = LiveLog(Console(file=out, width=400, color_system=None))
    executor = Executor(filesystem(tmp_path), policy=Policy(allow=["fs.*"]), events=[sink])
    anyio.run(executor.execute, call)
    assert_inert(out.getvalue(), calls=1)
    assert "\\n12:00:00" in out.getvalue() or "\\x1b" in out.getvalue()


@pytest.mark.parametrize("call", CALLS)
def test_invokit_audit_prints_one_inert_line_per_call(
    cli: Cli, state: Path, root: Path, call: ToolCall, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same call, recorded in the audit log, is one inert line in ``invokit audit``."""
    monkeypatch.setenv("COLUMNS", "400")
    (root / "a.txt").write_text("a")
    from invokit.execution import JsonlAuditSink

    sink = JsonlAuditSink(state / "audit.jsonl")
    executor = Executor(filesystem(root), policy=Policy(allow=["fs.*"]), events=[sink])
    anyio.run(executor.execute, call)
    sink.close()
    records = [json.loads(x) for x in (state / "audit.jsonl").read_text().splitlines()]
    assert records
    code, out, err = cli("audit")
    assert code == 0, err
    assert_inert(out, calls=1)
