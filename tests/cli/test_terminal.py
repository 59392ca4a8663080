"""The terminal approver: answers read off the event loop, one question at a time, and a
cancelled question decides nothing."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from invokit import Executor, ToolCall, tool
from invokit.approvals import SqliteApprovalStore
from invokit.cli._livelog import printable
from invokit.cli._terminal import LineReader, TerminalApprover, request_panel
from invokit.execution import Completed, Failed

pytestmark = pytest.mark.anyio


@tool(destructive=True)
def touch(path: str) -> str:
    """Write a marker file (a side effect that needs approval)."""
    Path(path).write_text("ran")
    return "touched"


class PipeReader(LineReader):
    """A LineReader over a real OS pipe, fed by the test."""

    def __init__(self) -> None:
        read_fd, self.write_fd = os.pipe()
        self.file = os.fdopen(read_fd)
        super().__init__(self.file.readline)

    def type(self, text: str) -> None:
        os.write(self.write_fd, text.encode())

    def close(self) -> None:
        os.close(self.write_fd)
        self.file.close()


def _console() -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, width=120, force_terminal=False), out


async def test_the_loop_keeps_running_while_a_question_waits(tmp_path: Path) -> None:
    """While the person has not answered, other work proceeds; the answer then runs the call."""
    reader = PipeReader()
    console, out = _console()
    executor = Executor([touch], approver=TerminalApprover(console, reader=reader))
    marker = tmp_path / "m"
    ticks = 0
    result: list[object] = []

    async def run() -> None:
        result.append(
            await executor.execute(ToolCall(id="c1", name="touch", arguments={"path": str(marker)}))
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        while "Approve touch?" not in out.getvalue():
            ticks += 1
            await anyio.sleep(0.01)
        for _ in range(5):
            ticks += 1
            await anyio.sleep(0.01)
        reader.type("o\n")
    reader.close()
    assert ticks >= 5
    assert isinstance(result[0], Completed)
    assert marker.read_text() == "ran"


async def test_concurrent_questions_are_asked_one_at_a_time(tmp_path: Path) -> None:
    """Two calls asking at once queue: the second question appears after the first answer."""
    reader = PipeReader()
    console, out = _console()
    executor = Executor([touch], approver=TerminalApprover(console, reader=reader))
    outcomes: dict[str, object] = {}

    async def run(name: str) -> None:
        call = ToolCall(id=name, name="touch", arguments={"path": str(tmp_path / name)})
        outcomes[name] = await executor.execute(call)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "a")
        group.start_soon(run, "b")
        while out.getvalue().count("Approve touch?") < 1:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        assert out.getvalue().count("Approve touch?") == 1
        reader.type("o\n")
        while out.getvalue().count("Approve touch?") < 2:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        reader.type("d\nnot this one\n")
    reader.close()
    kinds = sorted(type(o).__name__ for o in outcomes.values())
    assert kinds == ["Completed", "Failed"]
    denied = next(o for o in outcomes.values() if isinstance(o, Failed))
    assert "not this one" in denied.result.text


async def test_a_cancelled_question_leaves_the_request_pending(tmp_path: Path) -> None:
    """Cancelling the wait (Ctrl-C) approves and denies nothing: the request stays pending.
    A line typed for the withdrawn question, or typed ahead, never answers the next one: only
    a line typed after the next question appears does."""
    reader = PipeReader()
    console, out = _console()
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
    executor = Executor([touch], approvals=store, approver=TerminalApprover(console, reader=reader))
    with anyio.move_on_after(0.5):
        await executor.execute(
            ToolCall(id="c1", name="touch", arguments={"path": str(tmp_path / "x")})
        )
    (pending,) = await store.list_pending()
    assert pending.tool == "touch"
    assert "stays pending" in out.getvalue()
    assert not (tmp_path / "x").exists()
    reader.type("o\n")  # meant for the withdrawn question
    await anyio.sleep(0.05)
    outcome: list[object] = []

    async def second() -> None:
        outcome.append(
            await executor.execute(
                ToolCall(id="c2", name="touch", arguments={"path": str(tmp_path / "y")})
            )
        )

    async with anyio.create_task_group() as group:
        group.start_soon(second)
        with anyio.fail_after(5):
            while out.getvalue().count("Approve touch?") < 2:  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        assert not outcome, "a line typed before the question answered it"
        assert not (tmp_path / "y").exists()
        reader.type("o\n")
    assert isinstance(outcome[0], Completed)
    assert (tmp_path / "y").read_text() == "ran"
    reader.close()
    await executor.aclose()


async def test_end_of_input_denies_with_a_reason(tmp_path: Path) -> None:
    """With the terminal closed nobody can approve: the call is refused and says why."""
    reader = PipeReader()
    reader.close()
    console, _ = _console()
    executor = Executor([touch], approver=TerminalApprover(console, reader=LineReader(lambda: "")))
    outcome = await executor.execute(
        ToolCall(id="c1", name="touch", arguments={"path": str(tmp_path / "z")})
    )
    assert isinstance(outcome, Failed)
    assert "input closed" in outcome.result.text


def test_escape_sequences_from_a_model_are_shown_inert() -> None:
    """Control characters, escapes and bidi overrides in arguments are escaped on screen."""
    nasty = "ok\x1b[2J\x1b]0;pwned\x07\u202eevil\x9b31m"
    shown = printable(nasty)
    assert not any(ch in shown for ch in "\x1b\x07\u202e\x9b")
    assert "\\x1b[2J" in shown and "\\u202e" in shown
    from invokit.approvals import ApprovalRequest
    from invokit.tools import Tool

    spec = touch.spec
    assert isinstance(touch, Tool)
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": nasty}),
        spec=spec,
        arguments={"path": nasty},
    )
    out = StringIO()
    Console(file=out, width=200, force_terminal=True).print(request_panel(request))
    screen = out.getvalue()
    assert "\x1b[2J" not in screen and "\u202e" not in screen and "\x07" not in screen


def test_newlines_from_a_model_cannot_draw_rows_in_the_panel() -> None:
    """A path or reason with newlines stays on one row: it cannot forge an id or arguments
    block above the real one."""
    from invokit.approvals import ApprovalRequest
    from invokit.permissions import Decision, FileWrite

    forged = 'notes.txt\nid        apr_fake\narguments\n{\n  "path": "notes.txt"\n}\n' + "\n" * 50
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": forged}),
        spec=touch.spec,
        arguments={"path": forged},
        requests=[FileWrite(path=forged)],
        decision=Decision.ask("because\nid        apr_other"),
    )
    out = StringIO()
    Console(file=out, width=200, force_terminal=False).print(request_panel(request))
    rows = out.getvalue().splitlines()
    assert sum("apr_fake" in row for row in rows) == 2  # the touches row and the JSON, escaped
    assert not any(row.strip("│ ").startswith("id        apr_fake") for row in rows)
    assert not any(row.strip("│ ").startswith("id        apr_other") for row in rows)
    assert len(rows) < 40
