"""What a compose script cannot do on its own: each attempt is a clear error result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit import Executor, ToolCall, ToolResult
from invokit.compose import ScriptLimits, enable_compose
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([], policy=Policy(allow=["compose"]))
    enable_compose(made, limits=ScriptLimits(max_seconds=0.5, max_memory=8 * 1024 * 1024))
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="x", name="compose", arguments={"code": code}))
    return outcome.result


@pytest.mark.parametrize(
    ("code", "kind", "error_type"),
    [
        pytest.param(
            "open('/etc/passwd').read()", "script_error", "PermissionError", id="read-file"
        ),
        pytest.param(
            "open('{out}', 'w').write('x')", "script_error", "PermissionError", id="write-file"
        ),
        pytest.param(
            "from pathlib import Path\nPath('{out}').write_text('x')",
            "script_error",
            "PermissionError",
            id="pathlib-write",
        ),
        pytest.param(
            "import os\nos.listdir('/')", "script_error", "PermissionError", id="list-dir"
        ),
        pytest.param(
            "import os\nos.getenv('HOME')", "script_error", "PermissionError", id="environ"
        ),
        pytest.param("import socket", "script_error", "ModuleNotFoundError", id="socket"),
        pytest.param("import subprocess", "script_error", "ModuleNotFoundError", id="subprocess"),
        pytest.param("__import__('os')", "script_error", "ModuleNotFoundError", id="dunder-import"),
        pytest.param(
            "import os\nos.system('touch {out}')", "script_error", "AttributeError", id="os-system"
        ),
        pytest.param("while True:\n    pass", "script_timeout", "TimeoutError", id="time"),
        pytest.param(
            "x = 'a' * 1000\nwhile True:\n    x = x + x",
            "script_memory_exceeded",
            "MemoryError",
            id="memory",
        ),
        pytest.param("def (:", "script_syntax_error", "SyntaxError", id="syntax"),
    ],
)
async def test_escape_is_an_error_result(
    executor: Executor, tmp_path: Path, code: str, kind: str, error_type: str
) -> None:
    """Files, the environment, imports, processes, time and memory are out of a script's
    reach; each attempt ends the script with a result of the named kind and nothing leaks."""
    out = tmp_path / "escaped.txt"
    result = await _run(executor, code.format(out=out))
    assert result.is_error and result.error is not None, result.text
    assert result.error.kind == kind, result.text
    assert result.structured["error_type"] == error_type, result.text
    assert not out.exists()


async def test_a_refused_operation_is_catchable_and_the_script_goes_on(executor: Executor) -> None:
    """The refusal is an ordinary exception inside the script."""
    result = await _run(
        executor, "try:\n    open('/etc/hostname').read()\nexcept PermissionError:\n    r = 'no'\nr"
    )
    assert not result.is_error
    assert result.structured["result"] == "no"
