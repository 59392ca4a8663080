"""A large catalog costs nothing until its specs are read: building an executor builds none."""

from __future__ import annotations

from typing import Any

import pytest

from invokit import Executor, OutputLimit, ToolCall, ToolRegistry, tool
from invokit.tools import FunctionTool

pytestmark = pytest.mark.anyio


def _tools(n: int, **options: Any) -> list[FunctionTool]:
    made = []
    for i in range(n):

        async def fn(city: str, days: int = 1) -> str:
            return f"{city}:{days}"

        fn.__name__ = f"t{i}"
        made.append(tool(fn, **options))
    return made


async def test_executor_builds_no_spec_until_a_call() -> None:
    """Executor(registry) reads no tool's schema; the first call builds only that tool's."""
    tools = _tools(50, read_only=True)
    executor = Executor(ToolRegistry(tools))
    assert all(t._spec is None for t in tools)
    outcome = await executor.execute(ToolCall(id="1", name="t7", arguments={"city": "Oslo"}))
    assert outcome.result.text == "Oslo:1"
    assert [t.name for t in tools if t._spec is not None] == ["t7"]


async def test_a_tool_that_spills_still_gets_the_reader_without_building_specs() -> None:
    """A tool declaring a spill limit still makes the executor add the spill reader, and
    that is learnt from the declaration, not by building the spec."""
    tools = _tools(3, output_limit=OutputLimit(max_chars=10, mode="spill"))
    executor = Executor(ToolRegistry(tools))
    assert all(t._spec is None for t in tools)
    assert len(executor.registry.names()) == 4
    assert executor.artifacts.reader().name in executor.registry


async def test_renamed_tools_answer_their_limit_without_building_specs() -> None:
    """A prefixed tool reports its inner tool's declared output limit lazily."""
    tools = _tools(2, output_limit=OutputLimit(max_chars=10, mode="spill"))
    registry = ToolRegistry(tools).prefixed("p")
    limits = [t.declared_output_limit for t in registry]
    assert all(limit is not None and limit.mode == "spill" for limit in limits)
    assert all(t._spec is None for t in tools)
