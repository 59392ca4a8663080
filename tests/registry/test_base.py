"""Tests for ToolRegistry and the Registry base (invokit.registry._base)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit import Registry, Tool, ToolContext, ToolRegistry, ToolSpec, declare, tool
from invokit.exceptions import DuplicateToolName

_FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
tool_names = st.builds(
    str.__add__, st.sampled_from(_FIRST), st.text(alphabet=_FIRST + "0123456789.-", max_size=10)
)


def _tools(*names: str) -> list[Tool]:
    return [declare(name, f"The {name} tool.") for name in names]


class Switchable(Tool):
    """A tool whose current spec can be hidden."""

    def __init__(self, name: str) -> None:
        self._spec = ToolSpec(name=name)
        self.visible = True

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def current_spec(self) -> ToolSpec | None:
        return self._spec if self.visible else None

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return None


@given(st.lists(tool_names, unique=True, max_size=12), st.randoms(use_true_random=False))
def test_order_is_sorted_whatever_the_insertion_order(names: list[str], rng: Any) -> None:
    """Names, iteration and specs are sorted by name for any insertion order."""
    shuffled = list(names)
    rng.shuffle(shuffled)
    registry = ToolRegistry(_tools(*shuffled))
    assert list(registry.names()) == sorted(names)
    assert [t.name for t in registry] == sorted(names)
    assert [s.name for s in registry.specs()] == sorted(names)
    again = ToolRegistry()
    for item in _tools(*reversed(shuffled)):
        again.add(item)
    assert again.names() == registry.names()


def test_lookup_by_name() -> None:
    """``get``, ``in``, ``len`` and indexing find tools by name; unknown names are absent."""
    registry = ToolRegistry(_tools("b", "a"))
    assert registry.get("a") is not None
    assert registry.get("zzz") is None
    assert "a" in registry
    assert "zzz" not in registry
    assert 3 not in registry
    assert len(registry) == 2
    assert registry["b"].name == "b"
    with pytest.raises(KeyError):
        registry["zzz"]
    assert repr(registry) == "ToolRegistry(['a', 'b'])"


def test_specs_honour_current_spec() -> None:
    """A tool whose current spec is None is left out of specs() but stays callable by name."""
    switch = Switchable("switch")
    registry = ToolRegistry([switch, *_tools("other")])
    switch.visible = False
    assert [s.name for s in registry.specs()] == ["other"]
    assert registry.get("switch") is switch
    switch.visible = True
    assert [s.name for s in registry.specs()] == ["other", "switch"]


def test_duplicate_names_are_an_error_naming_both_sources() -> None:
    """Two different tools with one name raise DuplicateToolName naming both definitions."""

    @tool(name="read")
    def read_a() -> None:
        """A."""

    @tool(name="read")
    def read_b() -> None:
        """B."""

    with pytest.raises(DuplicateToolName) as caught:
        ToolRegistry([read_a, read_b])
    assert caught.value.name == "read"
    first, second = caught.value.sources
    assert first.endswith("read_a")
    assert second.endswith("read_b")


def test_same_tool_twice_is_not_a_conflict() -> None:
    """Registering one tool object twice keeps one entry."""
    (only,) = _tools("x")
    assert len(ToolRegistry([only, only])) == 1


@pytest.mark.parametrize(
    ("conflicts", "winner"),
    [pytest.param("first_wins", 0, id="first-wins"), pytest.param("last_wins", 1, id="last-wins")],
)
def test_conflicts_can_be_resolved_on_request(conflicts: Any, winner: int) -> None:
    """With first_wins or last_wins, the chosen duplicate is kept and no error is raised."""
    pair = [declare("x", "one"), declare("x", "two")]
    registry = ToolRegistry(pair, conflicts=conflicts)
    assert registry.get("x") is pair[winner]


def test_registries_can_be_built_from_registries() -> None:
    """Passing a registry to ToolRegistry takes its tools."""
    inner = ToolRegistry(_tools("a"))
    assert ToolRegistry([inner, *_tools("b")]).names() == ("a", "b")


def test_only_tools_are_accepted() -> None:
    """A plain function is refused with a hint to decorate it."""

    def plain() -> None:
        """Plain."""

    with pytest.raises(TypeError, match="@tool"):
        ToolRegistry([plain])  # type: ignore[list-item]


def test_add_and_remove_notify_subscribers() -> None:
    """Subscribers hear about every change until they unsubscribe."""
    registry = ToolRegistry()
    heard: list[tuple[str, ...]] = []
    unsubscribe = registry.subscribe(lambda: heard.append(registry.names()))
    (x,) = _tools("x")
    registry.add(x)
    registry.remove("x")
    unsubscribe()
    registry.add(x)
    assert heard == [("x",), ()]
    with pytest.raises(KeyError):
        registry.remove("missing")


def test_registry_base_needs_names_get_and_subscribe() -> None:
    """Registry is abstract: a subclass must provide names, get and subscribe."""
    with pytest.raises(TypeError):
        Registry()  # type: ignore[abstract]
