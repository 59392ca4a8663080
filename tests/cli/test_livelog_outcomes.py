"""The live log says how each call really ended: never ``allowed`` for a call that did not run."""

from __future__ import annotations

import os
import re
from io import StringIO
from pathlib import Path

import anyio
from rich.console import Console

from invokit import Executor, Policy, ToolCall
from invokit.builtin import filesystem
from invokit.cli._livelog import LiveLog, Narrator
from invokit.execution import Event


def run_calls(root: Path, policy: Policy, *calls: ToolCall) -> list[str]:
    """The live log's lines for ``calls`` run one after another."""
    out = StringIO()
    executor = Executor(
        filesystem(root), policy=policy, events=[LiveLog(Console(file=out, width=300))]
    )

    async def run() -> None:
        for call in calls:
            await executor.execute(call)

    anyio.run(run)
    return out.getvalue().splitlines()


def test_an_allowed_call_is_one_line_with_its_outcome(tmp_path: Path) -> None:
    """A call the policy allows and that succeeds is one ``done`` line with its arguments."""
    (tmp_path / "a.txt").write_text("a")
    lines = run_calls(
        tmp_path,
        Policy(allow=["fs.*"]),
        ToolCall(id="1", name="fs.read", arguments={"path": "a.txt"}),
    )
    assert len(lines) == 1
    assert "done" in lines[0] and '{"path": "a.txt"}' in lines[0] and "allowed" in lines[0]


def test_a_path_refused_in_preflight_is_not_called_allowed(tmp_path: Path) -> None:
    """A path outside the root, refused before the tool runs, shows as refused, with its
    arguments and the tool's words, and the log never says allowed."""
    lines = run_calls(
        tmp_path,
        Policy(allow=["fs.*"]),
        ToolCall(id="1", name="fs.read", arguments={"path": "../../etc/passwd"}),
    )
    assert len(lines) == 1
    assert "refused" in lines[0] and "../../etc/passwd" in lines[0]
    assert "allowed" not in lines[0]


def test_a_guard_inside_the_tool_shows_as_refused(tmp_path: Path) -> None:
    """A call the policy allowed that the tool's own guard refuses while running (a link that
    leaves the root) ends in a refused line, not an allowed one."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.txt").write_text("secret")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside / "s.txt", root / "link.txt")
    lines = run_calls(
        root,
        Policy(allow=["fs.*"]),
        ToolCall(id="1", name="fs.read", arguments={"path": "link.txt"}),
    )
    assert lines and all("allowed" not in line for line in lines)
    assert any(("refused" in line or "error" in line) and "link.txt" in line for line in lines)


def test_denied_and_failed_calls_say_so_once(tmp_path: Path) -> None:
    """A denied call is one denied line with its rule; an unknown tool one failed line."""
    lines = run_calls(
        tmp_path,
        Policy(allow=["fs.*"], deny=["fs.read(secret*)"]),
        ToolCall(id="1", name="fs.read", arguments={"path": "secret.txt"}),
        ToolCall(id="2", name="fs.nope", arguments={}),
    )
    assert len(lines) == 2
    assert "denied" in lines[0] and "fs.read(secret*)" in lines[0]
    assert "failed" in lines[1] and "not_found" in lines[1]


def test_lines_are_written_as_rich_would_print_them(tmp_path: Path) -> None:
    """The live log writes each line itself, byte for byte what ``Console.print`` writes, on a
    colour terminal and on a plain file."""
    (tmp_path / "a.txt").write_text("a")
    for system in ("truecolor", "256", "standard", None):
        fast, slow = StringIO(), StringIO()
        consoles = [
            Console(file=out, force_terminal=system is not None, color_system=system, width=400)
            for out in (fast, slow)
        ]
        log = LiveLog(consoles[0])
        executor = Executor(
            filesystem(tmp_path),
            policy=Policy(allow=["fs.read"], deny=["fs.write"]),
            events=[log],
        )
        calls = [
            ToolCall(id="1", name="fs.read", arguments={"path": "a.txt"}),
            ToolCall(id="2", name="fs.read", arguments={"path": "../x"}),
            ToolCall(id="3", name="fs.write", arguments={"path": "b", "content": "\x1b[2J"}),
            ToolCall(id="4", name="fs.nope", arguments={}),
        ]
        anyio.run(run_all, executor, calls)
        narrator = Narrator()
        for event in log_events(tmp_path, calls):
            line = narrator.line(event)
            if line is not None:
                consoles[1].print(line)
        assert strip_times(fast.getvalue()) == strip_times(slow.getvalue())
        assert fast.getvalue().count("\n") == 4


def log_events(root: Path, calls: list[ToolCall]) -> list[dict[str, object]]:
    """The event records of ``calls`` run again under the same policy."""
    records: list[dict[str, object]] = []

    class Keep:
        types = None

        def emit(self, event: Event) -> None:
            records.append(event.to_dict())

        def flush(self) -> None: ...

        def close(self) -> None: ...

    executor = Executor(
        filesystem(root),
        policy=Policy(allow=["fs.read"], deny=["fs.write"]),
        events=[Keep()],
    )
    anyio.run(run_all, executor, calls)
    return records


async def run_all(executor: Executor, calls: list[ToolCall]) -> None:
    for call in calls:
        await executor.execute(call)


def strip_times(text: str) -> str:
    """The output with its clock times and durations blanked."""
    return re.sub(r"\d\d:\d\d:\d\d|in \d+ ms", "T", text)
