"""A compose script reads, writes and runs commands through the executor, one audited call
at a time, with fs and shell built-ins on a temporary root."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from invokit import Completed, Executor, ToolCall
from invokit.builtin.filesystem import filesystem
from invokit.builtin.shell import shell
from invokit.compose import ComposeTool, ScriptLimits, enable_compose
from invokit.execution import JsonlAuditSink
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

SCRIPT = """
a = fs_read(path="a.txt")
b = fs_read(path="b.txt")
summary = "a has " + str(len(a["content"])) + " chars; b has " + str(len(b["content"])) + " chars"
fs_write(path="summary.txt", content=summary)
counted = shell(command="wc -c summary.txt")
try:
    fs_delete(path="a.txt")
    deleted = True
except PermissionError as error:
    deleted = False
    print("not deleted:", str(error)[:40])
{"summary": summary, "wc": counted, "deleted": deleted}
"""


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[tuple[Executor, Path, Path]]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta beta\n")
    audit = tmp_path / "state" / "audit.jsonl"
    policy = Policy(
        allow=["fs.read", "fs.write", "shell(wc *)", "compose"], deny=["fs.delete"], root=root
    )
    registry = filesystem(root).merged(shell(allow=["wc *"], root=root))
    executor = Executor(registry, policy=policy, events=[JsonlAuditSink(audit)])
    enable_compose(executor)
    yield executor, root, audit
    await executor.aclose()


def _events(audit: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit.read_text().splitlines()]


async def test_script_reads_writes_runs_and_each_child_is_audited(
    setup: tuple[Executor, Path, Path],
) -> None:
    """The script reads two files, writes a summary, runs an allowed command and catches a
    denied delete; every child call is audited under the script's call id."""
    executor, root, audit = setup
    outcome = await executor.execute(
        ToolCall(id="s1", name="compose", arguments={"code": SCRIPT}, session_id="sess")
    )
    assert isinstance(outcome, Completed), outcome
    result = outcome.result
    assert not result.is_error, result.text
    value = result.structured["result"]
    assert value["summary"] == "a has 6 chars; b has 10 chars"
    assert value["deleted"] is False
    assert "not deleted: denied" in result.structured["printed"]
    assert (root / "summary.txt").read_text() == value["summary"]
    assert (root / "a.txt").exists()
    assert "29" in json.dumps(value["wc"])
    await executor.aclose()
    events = _events(audit)
    children = {e["call_id"]: e for e in events if e["call_id"].startswith("s1:compose:")}
    assert sorted(children) == [f"s1:compose:{n}" for n in range(1, 6)]
    by_call: dict[str, list[str]] = {}
    for event in events:
        by_call.setdefault(event["call_id"], []).append(event["type"])
    assert by_call["s1:compose:3"][-1] == "completed"  # the write
    assert "failed" in by_call["s1:compose:5"]  # the denied delete
    assert {e["tool"] for e in events if e["call_id"].startswith("s1:compose:")} == {
        "fs.read",
        "fs.write",
        "shell",
        "fs.delete",
    }
    assert all(e["session_id"] == "sess" for e in events)
    assert by_call["s1"][-1] == "completed"


async def test_stubs_are_typed_sorted_and_byte_stable(setup: tuple[Executor, Path, Path]) -> None:
    """The compose description lists every tool as a typed function, the same each time."""
    executor, _, _ = setup
    compose = executor.registry.get("compose")
    assert isinstance(compose, ComposeTool)
    first = compose.spec.description
    compose.forget()
    assert compose.spec.description == first
    assert "def fs_read(path: str, offset: int = 1" in first
    assert "def shell(command: list[str] | str, cwd: str = '.')" in first
    assert first.index("def fs_delete(") < first.index("def fs_read(") < first.index("def shell(")
    assert "def compose(" not in first


async def test_an_uncaught_child_error_names_line_call_and_kind(
    setup: tuple[Executor, Path, Path],
) -> None:
    """A failing child that the script does not catch becomes one error result with the
    script line, the child's call id and its kind."""
    executor, _, _ = setup
    code = 'x = 1\nfs_read(path="missing.txt")\n'
    outcome = await executor.execute(ToolCall(id="s2", name="compose", arguments={"code": code}))
    result = outcome.result
    assert result.is_error and result.error is not None
    assert result.error.kind == "script_error"
    assert result.structured["line"] == 2
    assert result.structured["call"] == "s2:compose:1"
    assert result.structured["tool"] == "fs.read"


async def test_tool_call_limit_is_an_error_the_script_sees(tmp_path: Path) -> None:
    """Past ``max_tool_calls`` a call raises in the script instead of running."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.txt").write_text("a")
    executor = Executor(filesystem(root, writable=False), policy=Policy(allow=["*"]))
    enable_compose(executor, limits=ScriptLimits(max_tool_calls=2))
    code = (
        "n = 0\ntry:\n    for i in range(5):\n        fs_read(path='a.txt')\n        n += 1\n"
        "except RuntimeError as e:\n    err = str(e)\n[n, err]"
    )
    outcome = await executor.execute(ToolCall(id="t", name="compose", arguments={"code": code}))
    assert outcome.result.structured["result"][0] == 2
    assert "2 tool calls" in outcome.result.structured["result"][1]
    too_long = await executor.execute(
        ToolCall(id="u", name="compose", arguments={"code": "x = 1\n" * 20_000})
    )
    assert too_long.result.error is not None
    assert too_long.result.error.kind == "script_too_long"
    await executor.aclose()
