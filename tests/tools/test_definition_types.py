"""Definitions are checked when a tool is defined: option types and needs_approval functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from invokit import OutputLimit, Tool, ToolAnnotations, ToolContext, ToolSpec, tool
from invokit.exceptions import InvalidToolDefinition


async def body(x: int) -> int:
    """A body."""
    return x


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"read_only": "yes"}, id="read_only-text"),
        pytest.param({"destructive": 1}, id="destructive-int"),
        pytest.param({"needs_approval": "always"}, id="needs_approval-text"),
        pytest.param({"timeout": "3"}, id="timeout-text"),
        pytest.param({"timeout": True}, id="timeout-bool"),
        pytest.param({"tags": 3}, id="tags-int"),
        pytest.param({"tags": ["ok", 1]}, id="tag-int"),
        pytest.param({"category": 7}, id="category-int"),
        pytest.param({"concurrency": "parallel"}, id="concurrency-unknown"),
        pytest.param({"output_limit": 100}, id="output_limit-int"),
        pytest.param({"permissions": "fs"}, id="permissions-text"),
    ],
)
def test_wrong_option_types_fail_at_definition(options: dict[str, Any]) -> None:
    """``@tool`` and ``Tool.from_schema`` refuse a wrongly typed option at once, naming it,
    not at the first call."""
    with pytest.raises(InvalidToolDefinition) as caught:
        tool(**options)(body)
    option = next(iter(options))
    assert option.split("_")[0] in str(caught.value) or "tag" in str(caught.value)
    with pytest.raises(InvalidToolDefinition):
        Tool.from_schema(
            body,
            name="body",
            description="A body.",
            input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
            **options,
        )


def test_annotation_and_spec_values_are_type_checked() -> None:
    """ToolAnnotations, OutputLimit and ToolSpec refuse values of the wrong type."""
    with pytest.raises(InvalidToolDefinition, match="read_only"):
        ToolAnnotations(read_only="false")  # type: ignore[arg-type]
    with pytest.raises(InvalidToolDefinition, match="max_chars"):
        OutputLimit(max_chars="10")  # type: ignore[arg-type]
    with pytest.raises(InvalidToolDefinition, match="timeout"):
        ToolSpec(name="t", timeout="3")  # type: ignore[arg-type]
    with pytest.raises(InvalidToolDefinition, match="description"):
        ToolSpec(name="t", description=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidToolDefinition, match="annotation"):
        ToolSpec.from_dict({"name": "t", "annotations": {"read_only": "yes"}})


def test_lone_string_tag_stays_one_tag() -> None:
    """``tags="fs"`` is still the one tag fs (documented), not an error and not its letters."""
    assert tool(tags="fs")(body).spec.tags == frozenset({"fs"})


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(lambda: True, id="no-parameters"),
        pytest.param(lambda a, b, c: True, id="three-required"),
        pytest.param(lambda args, *, mode: True, id="required-keyword"),
    ],
)
def test_needs_approval_function_with_wrong_parameters_is_refused(check: Any) -> None:
    """A needs_approval function that cannot take the arguments (and optionally the context)
    is refused at definition."""
    with pytest.raises(InvalidToolDefinition, match="needs_approval"):
        tool(needs_approval=check)(body)


def test_needs_approval_function_shapes_that_fit() -> None:
    """One parameter, two, a defaulted second, ``*args``, sync and async all fit; the spec
    does not carry the function (the hint stays unset)."""

    def one(args: Mapping[str, Any]) -> bool:
        return True

    def two(args: Mapping[str, Any], ctx: ToolContext) -> bool:
        return True

    async def later(args: Mapping[str, Any], ctx: ToolContext | None = None) -> bool:
        return True

    def star(*parts: Any) -> bool:
        return True

    for check in (one, two, later, star):
        made = tool(needs_approval=check)(body)
        assert made.approval_check is not None
        assert made.spec.annotations.needs_approval is None
    assert tool(needs_approval=True)(body).approval_check is None


def test_a_builtin_without_a_signature_is_refused_clearly() -> None:
    """A callable whose signature cannot be read is refused with a message, not later."""
    with pytest.raises(InvalidToolDefinition, match="needs_approval"):
        tool(needs_approval=dict)(body)  # type: ignore[arg-type]
