"""Tests for declaration-only tools (invokit.tools._declared)."""

from __future__ import annotations

import pytest

from invokit import DeclaredTool, ToolAnnotations, ToolContext, ToolRegistry, declare
from invokit.exceptions import InvalidArguments, InvalidToolDefinition, ToolFailed

SCHEMA = {
    "type": "object",
    "properties": {"selector": {"type": "string"}},
    "required": ["selector"],
}


def test_declared_tool_is_listed_like_any_other() -> None:
    """A declaration has a full spec and appears in a registry's listing."""
    click = declare(
        "browser.click",
        "Click an element in the user's browser.",
        SCHEMA,
        annotations=ToolAnnotations(open_world=True),
        tags=["browser"],
        metadata={"runs_on": "client"},
    )
    assert isinstance(click, DeclaredTool)
    assert click.external is True
    spec = click.spec
    assert (spec.name, spec.description, spec.input_schema) == (
        "browser.click",
        "Click an element in the user's browser.",
        SCHEMA,
    )
    assert spec.annotations.open_world is True
    assert spec.tags == frozenset({"browser"})
    assert ToolRegistry([click]).specs() == [spec]


def test_declared_tool_validates_its_arguments() -> None:
    """Calls to a declared tool are validated before being handed to the host."""
    click = declare("click", "Click.", SCHEMA)
    assert click.validate('{"selector": "#ok"}') == {"selector": "#ok"}
    with pytest.raises(InvalidArguments):
        click.validate("{}")


def test_declaration_without_schema_takes_no_arguments() -> None:
    """Without a schema, a declaration's input is an empty object; a lone string is one tag."""
    ping = declare("ping", "Ping.", tags="net")
    assert ping.spec.input_schema == {"type": "object", "properties": {}}
    assert ping.spec.tags == frozenset({"net"})


def test_bad_declarations_are_rejected() -> None:
    """An invalid name or schema is a definition error, as for any tool."""
    with pytest.raises(InvalidToolDefinition):
        declare("no spaces", "x")
    with pytest.raises(InvalidToolDefinition):
        declare("ok", "x", {"type": "object", "properties": {"a": {"type": 3}}})


@pytest.mark.anyio
async def test_invoking_a_declaration_fails_as_external() -> None:
    """Running a declaration directly fails with kind ``external``: the host must run it."""
    with pytest.raises(ToolFailed) as caught:
        await declare("click", "Click.", SCHEMA).invoke({"selector": "a"}, ToolContext())
    assert caught.value.kind == "external"
