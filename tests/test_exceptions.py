"""Tests for the exception hierarchy (invokit.exceptions)."""

from __future__ import annotations

import inspect
import re

import pytest

from invokit import exceptions
from invokit.exceptions import (
    AccessDenied,
    ApprovalAlreadyUsed,
    ApprovalError,
    ApprovalExpired,
    ApprovalMismatch,
    ApprovalNotFound,
    ArgumentIssue,
    ArgumentsError,
    AuthRequired,
    DefinitionError,
    DuplicateToolName,
    InvalidArguments,
    InvalidToolDefinition,
    InvokitError,
    MalformedArguments,
    MissingExtra,
    NotJsonSafe,
    PolicyError,
    RetryWithFeedback,
    ToolError,
    ToolFailed,
)

_EXCEPTIONS = [
    value
    for value in vars(exceptions).values()
    if isinstance(value, type) and issubclass(value, BaseException)
]


def _drawn_tree() -> dict[str, str]:
    """Each class named in the module docstring's tree → the class on the line above it at a
    smaller indent (its drawn parent)."""
    doc = exceptions.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^[\s│]*(?:[├└]── )?([A-Z]\w+)", line)
        if match is None or match.group(1) not in vars(exceptions):
            continue
        depth = match.start(1)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[match.group(1)] = stack[-1][1]
        stack.append((depth, match.group(1)))
    return parents


def test_every_exception_derives_from_invokit_error() -> None:
    """All exceptions the module defines are InvokitError subclasses, so one except catches all."""
    assert _EXCEPTIONS
    for cls in _EXCEPTIONS:
        assert issubclass(cls, InvokitError), cls


def test_docstring_tree_lists_every_exception_with_its_real_parent() -> None:
    """The module docstring draws every exception class, each under its actual base class."""
    tree = _drawn_tree()
    drawn = set(tree) | {"InvokitError"}
    assert {cls.__name__ for cls in _EXCEPTIONS} == drawn
    for name, parent in tree.items():
        assert issubclass(getattr(exceptions, name), getattr(exceptions, parent)), name


def test_all_lists_every_public_name_sorted() -> None:
    """``invokit.exceptions.__all__`` is sorted and holds every exception class."""
    assert exceptions.__all__ == sorted(exceptions.__all__)
    assert {cls.__name__ for cls in _EXCEPTIONS} <= set(exceptions.__all__)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        pytest.param(InvalidToolDefinition, ValueError, id="definition-is-value-error"),
        pytest.param(DuplicateToolName, ValueError, id="duplicate-is-value-error"),
        pytest.param(ArgumentsError, ValueError, id="arguments-is-value-error"),
        pytest.param(NotJsonSafe, TypeError, id="not-json-safe-is-type-error"),
        pytest.param(PolicyError, ValueError, id="policy-is-value-error"),
        pytest.param(MissingExtra, ImportError, id="missing-extra-is-import-error"),
    ],
)
def test_errors_also_derive_from_the_matching_builtin(cls: type, builtin: type) -> None:
    """Errors are catchable by the builtin their callers would naturally expect."""
    assert issubclass(cls, builtin)


def test_invalid_tool_definition_carries_rule_value_and_tool() -> None:
    """The rule, the offending value and the tool are attributes and appear in the message."""
    error = InvalidToolDefinition("timeout must be positive", -1, tool="fs.read")
    assert (error.rule, error.value, error.tool) == ("timeout must be positive", -1, "fs.read")
    assert "fs.read" in str(error)
    assert "-1" in str(error)


def test_duplicate_tool_name_names_both_sources_and_the_fixes() -> None:
    """The duplicate error keeps the name and both sources, and says how to resolve it."""
    error = DuplicateToolName("read", ("pkg.a.read", "pkg.b.read"))
    assert error.name == "read"
    assert error.sources == ("pkg.a.read", "pkg.b.read")
    for needle in ("pkg.a.read", "pkg.b.read", "renamed", "prefixed", "first_wins", "last_wins"):
        assert needle in str(error)


def test_malformed_arguments_carry_reason_position_and_one_issue() -> None:
    """A malformed-JSON error holds its reason and position and one root issue."""
    error = MalformedArguments("expected value", position=7)
    assert (error.reason, error.position) == ("expected value", 7)
    assert error.issues == (ArgumentIssue(path="", message="expected value"),)
    assert "position 7" in str(error)


def test_invalid_arguments_list_every_issue() -> None:
    """An invalid-arguments error keeps every issue and renders each with its path."""
    issues = [
        ArgumentIssue(
            path="/a", message="1 is not of type 'string'", expected="string", actual="1"
        ),
        ArgumentIssue(path="/b/0", message="too short", actual="''"),
    ]
    error = InvalidArguments(issues)
    assert error.issues == tuple(issues)
    text = str(error)
    assert "2 problems" in text
    assert "/a: 1 is not of type 'string'" in text
    assert "/b/0: too short (got '')" in text


def test_issue_at_the_root_renders_as_root() -> None:
    """An issue with an empty pointer is rendered as (root), not as an empty prefix."""
    assert ArgumentIssue(path="", message="must be an object").render().startswith("(root)")


def test_not_json_safe_names_type_and_path() -> None:
    """NotJsonSafe keeps the type name and the JSON pointer to the value."""
    error = NotJsonSafe("socket.socket", "/conn/0")
    assert (error.type_name, error.path) == ("socket.socket", "/conn/0")
    assert "socket.socket" in str(error)
    assert "/conn/0" in str(error)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(ToolError("x"), "execution_failed", id="tool-error"),
        pytest.param(ToolFailed("x"), "execution_failed", id="tool-failed"),
        pytest.param(ToolFailed("x", kind="not_found"), "not_found", id="tool-failed-own-kind"),
        pytest.param(RetryWithFeedback("x"), "retry", id="retry"),
        pytest.param(AccessDenied("x"), "denied", id="denied"),
        pytest.param(AuthRequired("github"), "auth_required", id="auth"),
    ],
)
def test_tool_errors_have_a_kind(error: ToolError, kind: str) -> None:
    """Each tool-body error has the kind the executor reports; ToolFailed may choose its own."""
    assert error.kind == kind


def test_tool_failed_kind_does_not_leak_to_the_class() -> None:
    """Giving one ToolFailed a kind leaves other instances and the class default alone."""
    ToolFailed("x", kind="custom")
    assert ToolFailed("y").kind == "execution_failed"
    assert ToolFailed.kind == "execution_failed"


def test_tool_error_carries_message_and_structured_data() -> None:
    """A tool error's message and data are attributes for the executor to put in the result."""
    error = AccessDenied("outside the root", data={"path": "/etc/passwd"})
    assert error.message == "outside the root"
    assert error.data == {"path": "/etc/passwd"}
    assert str(error) == "outside the root"


def test_auth_required_carries_provider_scopes_and_challenge() -> None:
    """AuthRequired keeps who to ask, for what, and the challenge to start the flow."""
    error = AuthRequired("github", ["repo", "read:org"], {"url": "https://example.test/login"})
    assert error.provider == "github"
    assert error.scopes == ("repo", "read:org")
    assert error.challenge == {"url": "https://example.test/login"}
    assert "repo, read:org" in error.message


def test_policy_error_names_source_and_line() -> None:
    """A policy error locates the fault as source:line."""
    error = PolicyError("unknown effect 'alow'", source="invokit.toml", line=4)
    assert (error.source, error.line) == ("invokit.toml", 4)
    assert str(error).startswith("invokit.toml:4: ")


@pytest.mark.parametrize(
    "cls",
    [ApprovalNotFound, ApprovalExpired, ApprovalMismatch, ApprovalAlreadyUsed],
)
def test_approval_errors_carry_the_approval_id(cls: type[ApprovalError]) -> None:
    """Every approval error keeps the approval id and detail as attributes."""
    error = cls("ap-1", "bound to another call")
    assert isinstance(error, ApprovalError)
    assert (error.approval_id, error.detail) == ("ap-1", "bound to another call")


def test_missing_extra_says_what_to_install() -> None:
    """MissingExtra names the extra and gives the exact pip command."""
    error = MissingExtra("the MCP server", "mcp")
    assert error.extra == "mcp"
    assert 'pip install "invokit[mcp]"' in str(error)


def test_definition_errors_share_a_base() -> None:
    """Both definition-time errors can be caught as DefinitionError."""
    assert issubclass(InvalidToolDefinition, DefinitionError)
    assert issubclass(DuplicateToolName, DefinitionError)


def test_every_exception_has_a_docstring() -> None:
    """Every exception class documents what it means."""
    for cls in _EXCEPTIONS:
        assert inspect.getdoc(cls), cls
