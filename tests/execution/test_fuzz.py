"""No argument a model can send makes execute raise."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import ToolCall, ToolRegistry, tool
from invokit.execution import Completed, Executor, Failed, Interrupted


@tool(read_only=True)
async def typed(
    name: str, count: int = 1, tags: list[str] | None = None, ratio: float = 0.5
) -> str:
    """A tool with a few typed fields."""
    return name * min(count, 3)


@tool()
async def guarded(path: str) -> str:
    """A tool that asks first."""
    return path


EXECUTOR = Executor(ToolRegistry([typed, guarded]))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _run(arguments: Any, name: str) -> object:
    async def main() -> object:
        return await EXECUTOR.execute(ToolCall(id="f", name=name, arguments=arguments))

    return anyio.run(main)


@settings(max_examples=150)
@given(value=json_values, name=st.sampled_from(["typed", "guarded", "nope"]))
def test_arbitrary_json_never_raises(value: Any, name: str) -> None:
    """Any JSON value as arguments (text or parsed) gives an outcome, never an exception."""
    for arguments in (json.dumps(value), value if isinstance(value, dict) else json.dumps(value)):
        outcome = _run(arguments, name)
        assert isinstance(outcome, Completed | Failed | Interrupted)


@settings(max_examples=150)
@given(text=st.text(max_size=60))
def test_arbitrary_text_never_raises(text: str) -> None:
    """Any text as arguments, JSON or not, gives an outcome."""
    outcome = _run(text, "typed")
    assert isinstance(outcome, Completed | Failed | Interrupted)
