"""What "approve always" would record (``always_rule_preview``): a rule that says exactly what
was approved, or None when none can."""

from __future__ import annotations

from typing import Any

import pytest

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.approvals import ApprovalRequest, always_rule_preview
from invokit.approvals._always import pinned_rule
from invokit.permissions import (
    Custom,
    FileDelete,
    FileWrite,
    McpInvoke,
    PermissionRequest,
    Policy,
    ShellExec,
)

OPEN = ToolSpec(name="t", description="A tool.")
CLOSED = ToolSpec(
    name="t",
    description="A tool without arguments.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
)


def _request(
    arguments: dict[str, Any], requests: tuple[PermissionRequest, ...] = (), name: str = "t"
) -> ApprovalRequest:
    return ApprovalRequest(
        id="apr_x",
        call=ToolCall(id="c", name=name, arguments=arguments),
        tool=name,
        spec_fingerprint="f",
        arguments=arguments,
        arguments_hash="h",
        requests=requests,
        created_at=0.0,
        expires_at=1.0,
    )


@pytest.mark.parametrize(
    ("spec", "arguments", "requests", "expected"),
    [
        pytest.param(OPEN, {"path": "a"}, (FileWrite(path="a"),), ["t(write:a)"], id="one-target"),
        pytest.param(
            OPEN,
            {"argv": "git status"},
            (ShellExec(argv=("git", "status")),),
            ["t(exec:git status)"],
            id="one-argv",
        ),
        pytest.param(
            OPEN,
            {"a": 1, "b": 2},
            (McpInvoke(server="s", tool="t"),),
            ["t(a=1, b=2)"],
            id="mcp-pins-arguments",
        ),
        pytest.param(OPEN, {"x": "1"}, (), ['t(x="1")'], id="no-requests-pins-arguments"),
        pytest.param(
            OPEN, {"x": True}, (Custom(kind="k"),), ["t(x=true)"], id="custom-without-detail"
        ),
        pytest.param(
            OPEN,
            {"path": "a", "destination": "b"},
            (FileDelete(path="a"), FileWrite(path="b")),
            ['t(destination="b", path="a")'],
            id="several-requests-one-rule",
        ),
        pytest.param(OPEN, {"x": "a*b?"}, (), ['t(x="a\\\\*b\\\\?")'], id="glob-escaped"),
        pytest.param(OPEN, {"x": ["a"]}, (), None, id="list-no-rule"),
        pytest.param(OPEN, {"x": {"y": 1}}, (), None, id="object-no-rule"),
        pytest.param(OPEN, {"x": ""}, (), None, id="empty-string-no-rule"),
        pytest.param(OPEN, {"a-b": 1}, (), None, id="unspellable-key-no-rule"),
        pytest.param(OPEN, {"x": float("nan")}, (), None, id="nan-no-rule"),
        pytest.param(OPEN, {}, (), None, id="open-schema-no-arguments-no-rule"),
        pytest.param(CLOSED, {}, (), ["t"], id="closed-schema-no-arguments"),
    ],
)
def test_preview(
    spec: ToolSpec,
    arguments: dict[str, Any],
    requests: tuple[PermissionRequest, ...],
    expected: list[str] | None,
) -> None:
    """The preview is the target rule for one targeted request, one pinned rule otherwise, and
    None when nothing exact can be written."""
    assert always_rule_preview(spec, _request(arguments, requests)) == expected


def test_pinned_values_keep_their_types() -> None:
    """A string and the number or boolean it spells pin different rules."""
    assert pinned_rule("t", {"x": "1"}) != pinned_rule("t", {"x": 1})
    assert pinned_rule("t", {"x": "true"}) != pinned_rule("t", {"x": True})
    assert pinned_rule("t", {"x": None}) != pinned_rule("t", {"x": "null"})
    assert pinned_rule("t", {"x": 1.5}) == "t(x=1.5)"


def test_pinned_rules_are_policy_rules() -> None:
    """A pinned rule with commas, quotes and parentheses in its values still parses."""
    rule = pinned_rule("t", {"msg": 'a, "b" (c)', "n": -7})
    assert rule is not None
    Policy(extra_allow=[rule])


def test_a_huge_argument_is_not_pinned() -> None:
    """A rule nobody could read in a prompt is not recorded."""
    assert pinned_rule("t", {"x": "a" * 10_000}) is None
