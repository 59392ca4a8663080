"""Real tools and recorded provider payloads shared by the provider tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from invokit import ToolRegistry, tool

PAYLOADS = Path(__file__).parent / "payloads"


def payload(name: str) -> Any:
    """A recorded payload, modelled on the provider's documented example."""
    return json.loads((PAYLOADS / name).read_text(encoding="utf-8"))


@tool(name="weather.current", read_only=True)
def current_weather(
    location: Annotated[str, Field(description="City and country, e.g. Paris, France")],
    unit: Literal["c", "f"] = "c",
    days: int = 1,
) -> dict[str, Any]:
    """Get the current weather for a location.

    Args:
        unit: Temperature unit.
        days: How many days of forecast to include.
    """
    return {"location": location, "unit": unit, "days": days}


@tool(name="send_email")
def send_email(to: str, body: str, cc: list[str] | None = None) -> str:
    """Send an email.

    Args:
        to: Recipient address.
        body: Message text.
        cc: Copy recipients.
    """
    return f"sent to {to}"


@pytest.fixture
def registry() -> ToolRegistry:
    """Two real tools: one with a dotted name, one with a nullable optional list."""
    return ToolRegistry([current_weather, send_email])
