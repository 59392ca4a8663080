"""The collector is paused while a catalog is built, and always comes back as it was."""

from __future__ import annotations

import gc

import pytest

from invokit import ToolRegistry, tool
from invokit._gc import collector_paused
from invokit.providers import openai


def test_the_collector_is_off_inside_and_back_after() -> None:
    """Inside, the cyclic collector is off; after, on again, also when the body raises."""
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_turned_off_stays_off() -> None:
    """A host that turned the collector off finds it off after a build."""
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_builds_leave_the_collector_on() -> None:
    """Building specs and OpenAI declarations runs with the collector off and leaves it on."""

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    registry = ToolRegistry([add])
    assert [s.name for s in registry.specs()] == ["add"]
    declared = openai.tools(registry, strict=True)
    assert len(declared.tools) == 1
    assert gc.isenabled()
