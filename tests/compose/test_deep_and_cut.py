"""In both runtimes a deeply nested argument is a catchable ``invalid_arguments`` (a
``ValueError`` in the script), a deeply nested result is a script error, and ``print`` output
cut at its limit always ends with a note saying so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from invokit import Executor, ToolCall, ToolResult, tool
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import MontySandbox, PythonSandbox, ScriptLimits, enable_compose
from invokit.compose._sandbox import CUT_NOTE, cut_print
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

RUNTIMES = [
    pytest.param("monty", id="monty"),
    pytest.param(
        "python",
        id="python",
        marks=pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap"),
    ),
]

NESTED = """
x = 1
for _ in range({depth}):
    x = [x]
try:
    echo(value=x)
    outcome = "ran"
except ValueError as error:
    outcome = "caught " + str(error)
outcome
"""


@tool(read_only=True)
def echo(value: Any) -> int:
    """Take anything."""
    return 1


@pytest.fixture(params=RUNTIMES)
async def executor(request: pytest.FixtureRequest) -> AsyncIterator[Executor]:
    made = Executor([echo], policy=Policy(allow=["echo", "compose"]))
    sandbox = MontySandbox() if request.param == "monty" else PythonSandbox()
    limits = ScriptLimits(max_seconds=5, max_print_chars=10)
    enable_compose(made, sandbox=sandbox, limits=limits)
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="d", name="compose", arguments={"code": code}))
    return outcome.result


@pytest.mark.parametrize("depth", [100, 100_000])
async def test_a_deeply_nested_argument_is_catchable(executor: Executor, depth: int) -> None:
    """100 and 100,000 levels alike raise ValueError('invalid_arguments: ...') in the script."""
    result = await _run(executor, NESTED.format(depth=depth))
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"].startswith("caught invalid_arguments"), result.structured


async def test_a_deeply_nested_result_is_a_script_error(executor: Executor) -> None:
    """A last value nested 100,000 deep ends the script with an error result, not a crash."""
    result = await _run(executor, "x = 1\nfor _ in range(100000):\n    x = [x]\nx")
    assert result.is_error
    assert result.error is not None and result.error.kind == "script_error", result.text


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("print('x' * 50)", id="one-long-print"),
        pytest.param("print('x' * 9)\nprint('more')", id="past-the-limit"),
        pytest.param("print('x' * 9, end='')\nprint('y')\nprint('z')", id="exactly-full"),
    ],
)
async def test_cut_output_says_so(executor: Executor, code: str) -> None:
    """Output past max_print_chars is dropped and the kept part ends with the note."""
    result = await _run(executor, code + "\n1")
    assert not result.is_error, result.text
    assert result.structured is not None
    printed = result.structured["printed"]
    assert printed.endswith(CUT_NOTE), repr(printed)
    assert len(printed) == 10 + len(CUT_NOTE)


def test_cut_print_notes_once() -> None:
    """The note comes with the first text past the limit, and never again."""
    assert cut_print("abc", 5) == "abc"
    assert cut_print("abc", 0) == CUT_NOTE
    assert cut_print("abcdef", 2) == "ab" + CUT_NOTE
    assert cut_print("abc", -1) == ""
