"""The CPython runtime starts no process, even through the private module that subprocess
uses (``_posixsubprocess.fork_exec`` raises no audit event), and even where the limit on
processes does not hold (``RLIMIT_NPROC`` is not enforced for root)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from invokit import Executor, ToolCall, ToolResult, tool
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import PythonSandbox, ScriptLimits, enable_compose
from invokit.permissions import Policy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap"),
]

FORK_EXEC = """
import os
spawned = False
try:
    import _posixsubprocess
    e1, e2 = os.pipe()
    pid = _posixsubprocess.fork_exec(
        ["/usr/bin/touch", "/tmp/spawned"], [b"/usr/bin/touch"], True, (), None, None,
        -1, -1, -1, -1, -1, -1, e1, e2, True, False, 0, None, None, -1, -1, None, False,
    )
    os.close(e2)
    os.waitpid(pid, 0)
except BaseException as error:
    print(type(error).__name__, error)
os.path.exists("/tmp/spawned")
"""


RENAMED = """
import _imp, importlib.machinery, importlib.util
found = importlib.machinery.PathFinder.find_spec("_posixsubprocess")
spec = importlib.util.spec_from_file_location("x._posixsubprocess", found.origin)
hasattr(_imp.create_dynamic(spec), "fork_exec")
"""


@tool(read_only=True)
def add(a: int) -> int:
    """Add."""
    return a


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([add], policy=Policy(allow=["add", "compose"]))
    enable_compose(made, sandbox=PythonSandbox(), limits=ScriptLimits(max_seconds=5))
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="p", name="compose", arguments={"code": code}))
    return outcome.result


async def test_fork_exec_starts_no_process(executor: Executor) -> None:
    result = await _run(executor, FORK_EXEC)
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"] is False, result.structured
    assert "PermissionError" in result.structured["printed"]


async def test_the_standard_library_still_imports(executor: Executor) -> None:
    code = "import statistics, json, re, collections, datetime\nstatistics.mean([add(a=2), 4])"
    result = await _run(executor, code)
    assert not result.is_error, result.text
    assert result.structured is not None and result.structured["result"] == 3


async def test_the_module_cannot_be_loaded_under_another_name(executor: Executor) -> None:
    result = await _run(executor, RENAMED)
    assert result.is_error, result.text
    assert "PermissionError" in result.text and "_posixsubprocess" in result.text
