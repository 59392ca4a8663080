"""The CPython runtime's own output, written past its print(): the host keeps a bounded
amount of it, and none reaches the host's stderr."""

from __future__ import annotations

import resource
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


@tool(read_only=True)
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([add], policy=Policy(allow=["add", "compose"]))
    enable_compose(
        made, sandbox=PythonSandbox(), limits=ScriptLimits(max_seconds=5, max_memory=64 << 20)
    )
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="p", name="compose", arguments={"code": code}))
    return outcome.result


async def test_an_endless_line_on_stdout_is_cut_off(executor: Executor) -> None:
    """Bytes written straight to the protocol pipe without a newline are not gathered
    without end by the host: the script is stopped, quickly, with an error result."""
    code = "import os\nchunk = b'x' * (1 << 20)\nwhile True:\n    os.write(1, chunk)\n"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = await _run(executor, code)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    # Bounded by the line cap (64 MiB of text, held as the pieces and their join, with the
    # decoder's buffers: about twice that), not by the script's five seconds of writing,
    # which would be gigabytes: a margin of four times the cap keeps the check off the edge.
    assert grown_mib < 4 * 64, f"the host grew by {grown_mib:.0f} MiB"
    assert result.is_error
    assert result.error is not None and result.error.kind == "script_error", result.text
    # Stopped at the message size cap ("one message"), not by the script's time limit.
    assert "one message" in result.text


async def test_the_script_cannot_write_to_the_hosts_stderr(
    executor: Executor, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "import os\nos.write(2, b'FORGED host log line\\n')\nadd(a=1)"
    result = await _run(executor, code)
    assert not result.is_error, result.text
    assert "FORGED" not in capfd.readouterr().err
