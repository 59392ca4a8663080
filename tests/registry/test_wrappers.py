"""Tests for the registry wrappers: merged, prefixed, filtered, renamed, aliased, unadvertised."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit import Tool, ToolContext, ToolRegistry, ToolSpec, declare, tool
from invokit.exceptions import DuplicateToolName, InvalidToolDefinition
from invokit.permissions import FileRead, PermissionRequest
from invokit.registry import (
    AliasedRegistry,
    FilteredRegistry,
    MergedRegistry,
    PrefixedRegistry,
    RenamedRegistry,
    RenamedTool,
    UnadvertisedRegistry,
    WrapperRegistry,
)


def _needs(args: Mapping[str, Any]) -> list[PermissionRequest]:
    return [FileRead(path=args["path"])]


@tool(read_only=True, tags=("fs", "read"), category="files", permissions=_needs)
async def read(path: str, ctx: ToolContext) -> str:
    """Read a file."""
    return f"{ctx.tool_name}:{path}"


@tool(tags=("fs",), category="files")
def write(path: str, text: str) -> int:
    """Write a file."""
    return len(text)


@tool(tags=("net",), category="web", open_world=True)
def fetch(url: str) -> str:
    """Fetch a URL."""
    return url


def _base() -> ToolRegistry:
    return ToolRegistry([write, fetch, read])


# -- merged -------------------------------------------------------------------------------


def test_merged_lists_the_union_sorted() -> None:
    """Merging registries and bare tool lists gives one sorted listing."""
    merged = ToolRegistry([write]).merged([fetch], ToolRegistry([read]))
    assert isinstance(merged, MergedRegistry)
    assert merged.names() == ("fetch", "read", "write")
    assert merged.get("read") is read


def test_merged_conflict_names_both_registries_and_the_fix() -> None:
    """A name in two parts is an error naming both parts."""
    with pytest.raises(DuplicateToolName) as caught:
        ToolRegistry([read]).prefixed("a").merged(ToolRegistry([declare("a.read", "Other.")]))
    assert caught.value.name == "a.read"
    assert "PrefixedRegistry" in caught.value.sources[0]
    assert caught.value.sources[1] == "<DeclaredTool 'a.read'> in ToolRegistry(a.read)"


def test_merged_conflict_tells_two_plain_registries_apart() -> None:
    """Two plain registries sharing a name are named by the tool's function and the tools
    each holds, never both as just "ToolRegistry"."""
    with pytest.raises(DuplicateToolName) as caught:
        ToolRegistry([read, write]).merged(ToolRegistry([declare("read", "Other.")]))
    first, second = caught.value.sources
    assert first == f"{read.fn.__module__}.{read.fn.__qualname__} in ToolRegistry(read, write)"
    assert second == "<DeclaredTool 'read'> in ToolRegistry(read)"


def test_registry_description_lists_a_few_tools_and_the_count() -> None:
    """A large registry describes itself by its first names and how many tools it holds."""
    tools = [declare(f"t{i:02d}", "T.") for i in range(12)]
    assert ToolRegistry(tools).describe() == "ToolRegistry(t00, t01, t02, … 12 tools)"


def test_prefix_too_long_fails_at_prefixed() -> None:
    """A prefix that makes any name longer than 64 characters fails when the prefixed registry
    is made, naming the name, not later when specs are listed."""
    long_tool = declare("n" * 50, "Long.")
    with pytest.raises(InvalidToolDefinition, match="over the limit of 64"):
        ToolRegistry([read, long_tool]).prefixed("p" * 14)
    exact = ToolRegistry([long_tool]).prefixed("p" * 13)  # 64 characters: allowed
    assert [spec.name for spec in exact.specs()] == ["p" * 13 + "." + "n" * 50]


def test_prefix_check_follows_tools_added_later() -> None:
    """A tool added after prefixing that would get a name too long fails when names are read."""
    inner = ToolRegistry([read])
    prefixed = inner.prefixed("p" * 20)
    inner.add(declare("n" * 50, "Long."))
    with pytest.raises(InvalidToolDefinition):
        prefixed.names()


@pytest.mark.parametrize(
    ("conflicts", "description"),
    [
        pytest.param("first_wins", "Read a file.", id="first-wins"),
        pytest.param("last_wins", "Shadow.", id="last-wins"),
    ],
)
def test_merged_conflicts_resolve_on_request(conflicts: Any, description: str) -> None:
    """first_wins keeps the earlier part's tool, last_wins the later one's."""
    shadow = declare("read", "Shadow.")
    merged = ToolRegistry([read]).merged(ToolRegistry([shadow]), conflicts=conflicts)
    found = merged.get("read")
    assert found is not None
    assert found.spec.description == description
    assert merged.names() == ("read",)


def test_merged_sees_later_changes_and_rechecks_conflicts() -> None:
    """A tool added to a part shows up in the merge; a conflicting addition is refused."""
    left, right = ToolRegistry([read]), ToolRegistry([write])
    merged = left.merged(right)
    right.add(fetch)
    assert merged.names() == ("fetch", "read", "write")
    with pytest.raises(DuplicateToolName):
        right.add(declare("read", "Another read."))


# -- prefixed -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_prefixed_lists_and_calls_under_the_namespace() -> None:
    """Tools are listed and called as ``prefix.name``; the bare name is not callable."""
    prefixed = _base().prefixed("fs")
    assert isinstance(prefixed, PrefixedRegistry)
    assert prefixed.names() == ("fs.fetch", "fs.read", "fs.write")
    assert [s.name for s in prefixed.specs()] == ["fs.fetch", "fs.read", "fs.write"]
    assert prefixed.get("read") is None
    assert prefixed.get("fs.nothing") is None
    view = prefixed["fs.read"]
    assert isinstance(view, RenamedTool)
    assert view.spec.description == "Read a file."
    ctx = ToolContext(call_id="c1", tool_name="fs.read")
    assert await view.invoke({"path": "a"}, ctx) == "fs.read:a"


def test_prefixed_views_are_reused() -> None:
    """Getting the same prefixed name twice returns the same view (no copy per lookup)."""
    prefixed = _base().prefixed("fs")
    assert prefixed.get("fs.read") is prefixed.get("fs.read")


def test_prefix_must_be_a_valid_name() -> None:
    """An invalid prefix is a definition error."""
    with pytest.raises(InvalidToolDefinition):
        _base().prefixed("no spaces")


def test_nested_prefixes_compose() -> None:
    """Prefixing twice gives ``outer.inner.name``."""
    assert ToolRegistry([read]).prefixed("inner").prefixed("outer").names() == ("outer.inner.read",)


# -- filtered -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"tags": ["fs"]}, ("read", "write"), id="tag"),
        pytest.param({"tags": ["read", "net"]}, ("fetch", "read"), id="any-of-tags"),
        pytest.param({"category": "web"}, ("fetch",), id="category"),
        pytest.param(
            {"predicate": lambda spec: bool(spec.annotations.read_only)}, ("read",), id="predicate"
        ),
        pytest.param(
            {"tags": ["fs"], "predicate": lambda spec: spec.name != "read"},
            ("write",),
            id="tags-and-predicate",
        ),
        pytest.param({"tags": []}, (), id="no-tags-matches-nothing"),
    ],
)
def test_filtered_keeps_only_matching_tools(
    kwargs: dict[str, Any], expected: tuple[str, ...]
) -> None:
    """Filtering by tags (any of), category and predicate, combined with and."""
    filtered = _base().filtered(**kwargs)
    assert isinstance(filtered, FilteredRegistry)
    assert filtered.names() == expected
    assert [s.name for s in filtered.specs()] == list(expected)


def test_filtered_out_tools_are_not_callable() -> None:
    """A tool the filter drops cannot be reached by name either."""
    filtered = _base().filtered(category="web")
    assert filtered.get("read") is None
    assert "read" not in filtered
    assert filtered.get("fetch") is fetch


# -- renamed and aliased ------------------------------------------------------------------


def test_renamed_tools_use_only_their_new_name() -> None:
    """A renamed tool is listed and called by its new name; the old name is gone."""
    renamed = _base().renamed({"read": "cat"})
    assert isinstance(renamed, RenamedRegistry)
    assert renamed.names() == ("cat", "fetch", "write")
    assert renamed.get("read") is None
    cat = renamed["cat"]
    assert cat.spec.name == "cat"
    assert cat.spec.description == "Read a file."
    assert renamed.get("write") is write


def test_renaming_onto_a_taken_name_is_an_error() -> None:
    """Renaming a tool to a name another tool holds raises DuplicateToolName."""
    with pytest.raises(DuplicateToolName):
        _base().renamed({"read": "write"})


def test_renaming_two_tools_to_one_name_is_an_error() -> None:
    """Two old names mapped to one new name are refused."""
    with pytest.raises(InvalidToolDefinition):
        _base().renamed({"read": "x", "write": "x"})


def test_swapping_names_is_allowed() -> None:
    """Two tools may trade names in one rename."""
    swapped = _base().renamed({"read": "write", "write": "read"})
    assert swapped["read"].spec.description == "Write a file."
    assert swapped["write"].spec.description == "Read a file."


def test_aliases_are_callable_but_not_listed() -> None:
    """An alias reaches its target under the alias name and is not advertised."""
    aliased = _base().aliased({"cat": "read"})
    assert isinstance(aliased, AliasedRegistry)
    assert aliased.names() == ("fetch", "read", "write")
    cat = aliased["cat"]
    assert cat.spec.name == "cat"
    assert aliased.get("read") is read
    assert aliased.aliased({"dog": "missing"}).get("dog") is None


def test_alias_may_not_shadow_a_listed_tool() -> None:
    """An alias equal to a listed name is a conflict."""
    with pytest.raises(DuplicateToolName):
        _base().aliased({"write": "read"})


# -- unadvertised -------------------------------------------------------------------------


def test_unadvertised_tools_are_callable_but_not_listed() -> None:
    """Hidden names leave names(), iteration and specs(), but get() still finds them."""
    hidden = _base().unadvertised(["fetch"])
    assert isinstance(hidden, UnadvertisedRegistry)
    assert hidden.names() == ("read", "write")
    assert [t.name for t in hidden] == ["read", "write"]
    assert [s.name for s in hidden.specs()] == ["read", "write"]
    assert hidden.get("fetch") is fetch
    assert "fetch" in hidden


# -- wrappers are views -------------------------------------------------------------------


def test_wrappers_are_views_not_copies() -> None:
    """Wrappers hold the original tools and follow later additions to the registry they wrap."""
    base = ToolRegistry([read])
    views = [
        base.prefixed("p"),
        base.filtered(tags=["fs", "net"]),
        base.renamed({"read": "cat"}),
        base.unadvertised(["nothing"]),
        base.aliased({"cat2": "read"}),
    ]
    for view in views:
        assert isinstance(view, WrapperRegistry)
    assert base.filtered(tags=["fs"]).get("read") is read
    base.add(fetch)
    assert [view.names() for view in views] == [
        ("p.fetch", "p.read"),
        ("fetch", "read"),
        ("cat", "fetch"),
        ("fetch", "read"),
        ("fetch", "read"),
    ]


def test_wrappers_compose_and_stay_sorted() -> None:
    """Stacked wrappers keep the sorted order of the final names."""
    stacked = _base().renamed({"fetch": "zz.fetch"}).prefixed("a").merged([declare("b", "B.")])
    assert stacked.names() == ("a.read", "a.write", "a.zz.fetch", "b")


@given(st.permutations(["delta", "alpha", "charlie", "bravo", "echo"]))
def test_wrapped_registries_iterate_sorted(order: list[str]) -> None:
    """Whatever the insertion order, prefixed, renamed and merged listings are sorted."""
    base = ToolRegistry([declare(name, name) for name in order])
    for registry in (
        base.prefixed("ns"),
        base.renamed({"echo": "aardvark"}),
        base.merged([declare("beta", "b")]),
        base.unadvertised(["charlie"]),
    ):
        names = list(registry.names())
        assert names == sorted(names)
        assert [t.name for t in registry] == names


# -- RenamedTool delegation ---------------------------------------------------------------


class Lifecycle(Tool):
    """A tool that records lifecycle calls and can hide itself."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.visible = True

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name="life", description="Life.")

    def current_spec(self) -> ToolSpec | None:
        return self.spec if self.visible else None

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return "ran"

    async def setup(self) -> None:
        self.events.append("setup")

    async def teardown(self) -> None:
        self.events.append("teardown")


@pytest.mark.anyio
async def test_renamed_tool_delegates_everything_but_the_name() -> None:
    """Permissions, validation, invocation, lifecycle and hiding all pass through a renamed view."""
    view = RenamedTool(read, "cat")
    ctx = ToolContext()
    assert view.permissions({"path": "x"}, ctx) == (FileRead(path="x"),)
    assert view.validate('{"path": "x"}') == {"path": "x"}
    assert view.name == "cat"
    life = Lifecycle()
    renamed = RenamedTool(life, "renamed")
    await renamed.ensure_setup()
    await renamed.ensure_setup()
    assert await renamed.invoke({}, ctx) == "ran"
    await renamed.close()
    assert life.events == ["setup", "teardown"]
    current = renamed.current_spec()
    assert current is not None
    assert current.name == "renamed"
    life.visible = False
    assert renamed.current_spec() is None
    assert ToolRegistry([life]).prefixed("p").specs() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await renamed.close()


def test_filtering_by_a_lone_string_tag() -> None:
    """``filtered(tags="net")`` filters by the tag net, not by its letters."""
    assert _base().filtered(tags="net").names() == ("fetch",)
