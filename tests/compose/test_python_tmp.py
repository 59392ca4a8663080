"""The CPython runtime's private /tmp (and /dev) live in the host's memory: what a script
writes there is bounded like its heap, not by half the host's RAM."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator

import pytest

from invokit import Executor, ToolCall, tool
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import PythonSandbox, ScriptLimits, enable_compose
from invokit.permissions import Policy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap"),
]

FILL = """
import os
written = 0
chunk = b"x" * (1 << 20)
try:
    fd = os.open(PATH, os.O_WRONLY | os.O_CREAT)
    while written < (512 << 20):
        os.write(fd, chunk)
        written += len(chunk)
except OSError as error:
    print(type(error).__name__)
written
"""


@tool(read_only=True)
def add(a: int) -> int:
    """Add."""
    return a


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([add], policy=Policy(allow=["add", "compose"]))
    enable_compose(
        made, sandbox=PythonSandbox(), limits=ScriptLimits(max_seconds=5, max_memory=64 << 20)
    )
    yield made
    await made.aclose()


# bubblewrap's own root is a tmpfs too, holding the folders it creates for its mounts (the
# parent of the interpreter's installation among them): unbounded before it was read-only.
ROOT_FOLDER = os.path.join(os.path.dirname(os.path.realpath(sys.base_prefix)), "fill")


@pytest.mark.parametrize("path", ["/tmp/fill", "/dev/shm/fill", "/dev/fill", "/fill", ROOT_FOLDER])
async def test_what_a_script_writes_in_memory_is_bounded(executor: Executor, path: str) -> None:
    code = FILL.replace("PATH", repr(path))
    outcome = await executor.execute(ToolCall(id="t", name="compose", arguments={"code": code}))
    result = outcome.result
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"] <= 64 << 20, result.structured
