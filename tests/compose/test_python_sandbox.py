"""The CPython runtime under bubblewrap: real Python for what Monty cannot run, same executor
path for tool calls, the same kind of error results for what it may not do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit import Executor, ToolCall, ToolResult, tool
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import PythonSandbox, ScriptLimits, enable_compose
from invokit.permissions import Policy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap"),
]


@tool(read_only=True)
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@tool(destructive=True)
def drop(name: str) -> str:
    """Drop a table."""
    return name


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([add, drop], policy=Policy(allow=["add", "compose"], deny=["drop"]))
    enable_compose(
        made, sandbox=PythonSandbox(), limits=ScriptLimits(max_seconds=2, max_memory=256 << 20)
    )
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="p", name="compose", arguments={"code": code}))
    return outcome.result


async def test_real_python_calls_tools_through_the_executor(executor: Executor) -> None:
    """Classes and the standard library work; calls go through the policy (a deny is a
    PermissionError the script catches)."""
    code = (
        "import statistics\nclass Box:\n    def __init__(self, v):\n        self.v = v\n"
        "boxes = [Box(add(a=i)) for i in range(3)]\n"
        "try:\n    drop(name='users')\nexcept PermissionError:\n    print('refused')\n"
        "statistics.mean(b.v for b in boxes)"
    )
    result = await _run(executor, code)
    assert not result.is_error, result.text
    assert result.structured == {"result": 2, "printed": "refused\n", "tool_calls": 4}


@pytest.mark.parametrize(
    ("code", "kind", "error_type"),
    [
        pytest.param(
            "open('/etc/passwd').read()", "script_error", "FileNotFoundError", id="read-host-file"
        ),
        pytest.param(
            "open('{out}', 'w').write('x')",
            "script_error",
            "FileNotFoundError",
            id="write-host-file",
        ),
        pytest.param(
            "open('/usr/x', 'w').write('x')", "script_error", "OSError", id="write-system"
        ),
        pytest.param(
            "import subprocess\nsubprocess.run(['ls'])",
            "script_error",
            "PermissionError",
            id="process",
        ),
        pytest.param(
            "import os\nos.system('touch {out}')", "script_error", "PermissionError", id="system"
        ),
        pytest.param(
            "import socket\nsocket.create_connection(('127.0.0.1', 22))",
            "script_error",
            "PermissionError",
            id="socket",
        ),
        pytest.param("while True:\n    pass", "script_timeout", "TimeoutError", id="time"),
        pytest.param("x = bytearray(10**10)", "script_memory_exceeded", "MemoryError", id="memory"),
    ],
)
async def test_escapes_are_error_results(
    executor: Executor, tmp_path: Path, code: str, kind: str, error_type: str
) -> None:
    """Host files, processes, sockets, time and memory are out of reach; each attempt is an
    error result of the named kind, and nothing reaches the host."""
    out = tmp_path / "escaped.txt"
    result = await _run(executor, code.format(out=out))
    assert result.is_error and result.error is not None, result.text
    assert result.error.kind == kind, result.text
    assert result.structured["error_type"] == error_type, result.text
    assert not out.exists()
