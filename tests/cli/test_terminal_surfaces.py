"""The terminal approver and execution surfaces: the warning is shown, and neither "session"
nor "always" is offered or accepted."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from invokit import Executor, Policy, ToolCall
from invokit.approvals import SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.cli._keyboard import LineReader
from invokit.cli._terminal import TerminalApprover
from invokit.execution import Completed

pytestmark = pytest.mark.anyio


class Answers(LineReader):
    """Answers typed in advance, then the end of input."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        super().__init__(lambda: self.answers.pop(0) if self.answers else "")


async def test_an_execution_surface_is_asked_once_only_with_its_warning(tmp_path: Path) -> None:
    """The question names what runs the file; "s" and "a" are refused, "y" approves this
    write only, and the next write to it is asked about again."""
    root = tmp_path / "root"
    root.mkdir()
    surfaces = [".vscode/settings.json"]
    out = StringIO()
    console = Console(file=out, width=160, force_terminal=False)
    approver = TerminalApprover(console, reader=Answers("s\n", "a\n", "y\n", "n no\n"))
    executor = Executor(
        filesystem(root, allow_surfaces=surfaces),
        policy=Policy(allow=["*"], default="allow", root=root, allow_surfaces=surfaces),
        approvals=SqliteApprovalStore(tmp_path / "approvals.sqlite3"),
        approver=approver,
    )
    approver.registry = executor.registry
    arguments = {"path": ".vscode/settings.json", "content": "{}", "create_parents": True}
    done = await executor.execute(
        ToolCall(id="c1", name="fs.write", arguments=arguments, session_id="s1")
    )
    assert isinstance(done, Completed) and not done.result.is_error
    shown = " ".join(out.getvalue().split())
    assert "runs it VS Code" in shown
    assert "y/n:" in shown and "s session" not in shown and "a always" not in shown
    again = await executor.execute(
        ToolCall(id="c2", name="fs.write", arguments=arguments, session_id="s1")
    )
    assert again.result.is_error  # asked again, and denied this time
    await executor.aclose()
