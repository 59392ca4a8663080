"""ADK function tools imported into an invokit registry, guarded by invokit's policy."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from invokit import Completed, Executor, Failed, Interrupted, ToolCall
from invokit.exceptions import InvalidToolDefinition
from invokit.integrations.google_adk import from_adk
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

calls: list[str] = []


def get_weather(city: str, unit: str = "c") -> dict[str, str]:
    """Get the weather for a city.

    Args:
        city: the city.
        unit: c or f.
    """
    calls.append(city)
    return {"city": city, "sky": "clear", "unit": unit}


async def book_flight(destination: str, seats: int) -> str:
    """Book a flight."""
    calls.append(f"book {destination} {seats}")
    return f"booked {seats} to {destination}"


def remember(fact: str, tool_context: ToolContext) -> str:
    """Needs ADK's context."""
    return fact


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    calls.clear()


async def test_an_imported_adk_tool_runs_through_the_executor() -> None:
    """An ADK FunctionTool (or a plain function) runs with ADK's declared schema."""
    registry = from_adk([FunctionTool(get_weather), book_flight])
    assert registry.names() == ("book_flight", "get_weather")
    assert registry["get_weather"].spec.input_schema["required"] == ["city"]
    executor = Executor(registry, policy=Policy(allow=["get_weather"]))
    outcome = await executor.execute(
        ToolCall(id="c1", name="get_weather", arguments={"city": "Madrid"})
    )
    assert isinstance(outcome, Completed)
    assert outcome.result.structured == {"city": "Madrid", "sky": "clear", "unit": "c"}


async def test_an_imported_adk_tool_is_denied_by_an_invokit_rule() -> None:
    """A deny rule refuses an imported ADK tool; its body never runs."""
    executor = Executor(from_adk([book_flight]), policy=Policy(deny=["book_flight"]))
    outcome = await executor.execute(
        ToolCall(id="c1", name="book_flight", arguments={"destination": "Oslo", "seats": 2})
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert calls == []


async def test_an_imported_adk_tool_asks_by_default_and_runs_once_approved() -> None:
    """With no rule an imported tool asks; once approved it runs once."""
    executor = Executor(from_adk([book_flight]))
    outcome = await executor.execute(
        ToolCall(id="c1", name="book_flight", arguments={"destination": "Oslo", "seats": 2})
    )
    assert isinstance(outcome, Interrupted)
    assert calls == []
    done = await executor.resume(outcome.interrupt.id, approve=True, by="test")
    assert isinstance(done, Completed)
    assert done.result.text == "booked 2 to Oslo"
    assert calls == ["book Oslo 2"]


async def test_require_confirmation_becomes_needs_approval() -> None:
    """An ADK tool that requires confirmation asks even where the default would allow it."""
    tool = FunctionTool(get_weather, require_confirmation=True)
    executor = Executor(from_adk([tool]), policy=Policy(default="allow"))
    outcome = await executor.execute(
        ToolCall(id="c1", name="get_weather", arguments={"city": "Rome"})
    )
    assert isinstance(outcome, Interrupted)
    assert calls == []


def test_a_tool_that_needs_adk_context_is_refused() -> None:
    """A function taking tool_context cannot run outside ADK: importing it raises."""
    with pytest.raises(InvalidToolDefinition):
        from_adk([remember])


def test_other_adk_tools_are_refused() -> None:
    """An ADK tool other than a FunctionTool needs a live invocation: importing it raises."""
    from google.adk.tools.exit_loop_tool import exit_loop

    class Custom(BaseTool):
        async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
            return None

    with pytest.raises(InvalidToolDefinition):
        from_adk([FunctionTool(exit_loop)])
    with pytest.raises(InvalidToolDefinition):
        from_adk([Custom(name="custom", description="a custom tool")])
