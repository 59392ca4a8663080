"""An "always" approval covers exactly what a person saw and what ran: the edited arguments, not
the rejected ones; every argument of a tool whose requests name no target; one whole call of a
tool with several requests, never its parts recombined."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.execution import ApprovalRequired, Completed, Executor, Interrupted, Outcome
from invokit.mcp import MCPToolset, PinStore
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

PINNED = Path(__file__).parent.parent / "mcp" / "pinned_server.py"


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted), outcome
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def _store(tmp_path: Path) -> SqliteApprovalStore:
    return SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")


async def test_always_with_edited_arguments_records_what_ran(tmp_path: Path) -> None:
    """A person edits the model's path (evil.sh -> notes.txt) and approves "always": the rule is
    for notes.txt, and the model's retry of evil.sh is asked about again."""
    root = tmp_path / "proj"
    root.mkdir()
    executor = Executor(
        filesystem(root), policy=Policy(ask=["fs.write"], root=root), approvals=_store(tmp_path)
    )

    def write(call_id: str, path: str, content: str) -> ToolCall:
        return ToolCall(id=call_id, name="fs.write", arguments={"path": path, "content": content})

    asked = _asked(await executor.execute(write("1", "evil.sh", "rm -rf ~")))
    done = await executor.resume(
        asked.id,
        approve=True,
        scope="always",
        by="ana",
        arguments={"path": "notes.txt", "content": "hello"},
    )
    assert isinstance(done, Completed)
    assert [r.rule for r in await executor.approvals.always_rules()] == [
        "fs.write(write:notes.txt)"
    ]
    _asked(await executor.execute(write("2", "evil.sh", "rm -rf ~")))
    assert not (root / "evil.sh").exists()
    assert isinstance(await executor.execute(write("3", "notes.txt", "again")), Completed)
    await executor.aclose()


async def test_always_for_a_move_cannot_be_recombined(tmp_path: Path) -> None:
    """Moves a -> b and c -> d approved "always" record one rule per call; a -> d, never
    approved, is asked about, and a -> b runs again without asking."""
    root = tmp_path / "p"
    root.mkdir()
    executor = Executor(
        filesystem(root), policy=Policy(ask=["fs.move"], root=root), approvals=_store(tmp_path)
    )

    def move(call_id: str, source: str, destination: str) -> ToolCall:
        return ToolCall(
            id=call_id, name="fs.move", arguments={"path": source, "destination": destination}
        )

    for name in ("a", "c"):
        (root / name).write_text(name)
    for index, (source, destination) in enumerate([("a", "b"), ("c", "d")]):
        asked = _asked(await executor.execute(move(str(index), source, destination)))
        assert isinstance(await executor.resume(asked.id, approve=True, scope="always"), Completed)
    rules = [r.rule for r in await executor.approvals.always_rules()]
    assert len(rules) == 2
    assert all(r.startswith("fs.move(") and "path=" in r and "destination=" in r for r in rules)
    (root / "b").rename(root / "a")
    (root / "d").rename(root / "c")
    _asked(await executor.execute(move("x", "a", "d")))
    _asked(await executor.execute(move("y", "c", "b")))
    assert sorted(p.name for p in root.iterdir()) == ["a", "c"]
    assert isinstance(await executor.execute(move("z", "a", "b")), Completed)
    assert sorted(p.name for p in root.iterdir()) == ["b", "c"]
    await executor.aclose()


async def test_always_for_a_remote_tool_pins_its_arguments(tmp_path: Path) -> None:
    """A real MCP server's plus(a=1, b=2) approved "always" runs again without asking; plus
    with other arguments (the McpInvoke request names no target) is asked about."""
    env = {**os.environ, "GREET_DESCRIPTION": "Greet someone by name."}
    async with MCPToolset.stdio(
        sys.executable,
        [str(PINNED)],
        prefix="pin",
        env=env,
        pins=PinStore(tmp_path / "pins.json"),
        connect_timeout=30,
    ) as toolset:
        executor = Executor(toolset, policy=Policy(root=tmp_path), approvals=_store(tmp_path))

        def plus(call_id: str, a: Any, b: Any) -> ToolCall:
            return ToolCall(id=call_id, name="pin.plus", arguments={"a": a, "b": b})

        asked = _asked(await executor.execute(plus("1", 1, 2)))
        assert isinstance(await executor.resume(asked.id, approve=True, scope="always"), Completed)
        (rule,) = await executor.approvals.always_rules(executor.project)
        assert rule.rule == "pin.plus(a=1, b=2)"
        assert rule.server == "pin"
        assert isinstance(await executor.execute(plus("2", 1, 2)), Completed)
        _asked(await executor.execute(plus("3", 1000, -7)))
        explained = await executor.explain(plus("4", 1, 2))
        assert explained.decision.verdict == "allow" and explained.decision.standing
        assert (await executor.explain(plus("5", 1, 3))).decision.verdict == "ask"
        await executor.approvals.close()


@tool(destructive=True)
async def notify(channel: str, urgent: bool = False, tags: list[str] | None = None) -> str:
    """Send a notification."""
    return channel


async def test_pinned_rule_compares_values_and_types_exactly(tmp_path: Path) -> None:
    """A rule pinned to channel="*" covers only that call: not another channel (the glob star
    is literal), not one with another argument added."""
    executor = Executor(
        ToolRegistry([notify]), policy=Policy(root=tmp_path), approvals=_store(tmp_path)
    )

    def call(call_id: str, **arguments: Any) -> ToolCall:
        return ToolCall(id=call_id, name="notify", arguments=arguments)

    asked = _asked(await executor.execute(call("1", channel="*")))
    assert isinstance(await executor.resume(asked.id, approve=True, scope="always"), Completed)
    (rule,) = await executor.approvals.always_rules(executor.project)
    assert rule.rule == 'notify(channel="\\\\*")'
    assert isinstance(await executor.execute(call("2", channel="*")), Completed)
    _asked(await executor.execute(call("3", channel="ops")))
    _asked(await executor.execute(call("4", channel="*", urgent=True)))
    _asked(await executor.execute(call("5", channel="*", tags=["x"])))
    await executor.aclose()


async def test_no_exact_rule_means_no_standing_rule(tmp_path: Path) -> None:
    """A call with a list argument cannot be pinned: "always" runs it once, records nothing
    and warns; the same call is asked about again."""
    executor = Executor(
        ToolRegistry([notify]), policy=Policy(root=tmp_path), approvals=_store(tmp_path)
    )
    arguments = {"channel": "ops", "tags": ["a", "b"]}
    asked = _asked(await executor.execute(ToolCall(id="1", name="notify", arguments=arguments)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = await executor.resume(asked.id, approve=True, scope="always")
    assert isinstance(done, Completed)
    assert any("no exact rule" in str(w.message) for w in caught)
    assert await executor.approvals.always_rules() == []
    _asked(await executor.execute(ToolCall(id="2", name="notify", arguments=arguments)))
    await executor.aclose()


async def test_old_rules_that_cover_every_argument_apply_nowhere(tmp_path: Path) -> None:
    """Rules an older invokit recorded for a tool whose requests name no target (``notify``,
    ``pin.plus(mcp:pin/plus)``) stay listed but allow nothing."""
    executor = Executor(
        ToolRegistry([notify]), policy=Policy(root=tmp_path), approvals=_store(tmp_path)
    )
    await executor.approvals.add_always_rule("notify", project=executor.project)
    await executor.approvals.add_always_rule("notify(custom:send:)", project=executor.project)
    _asked(await executor.execute(ToolCall(id="1", name="notify", arguments={"channel": "x"})))
    assert len(await executor.approvals.always_rules(executor.project)) == 2
    await executor.aclose()
