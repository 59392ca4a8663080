"""Path strings: parsed into components, never expanded."""

from __future__ import annotations

import pytest

from invokit.builtin.filesystem._paths import display, split_relative
from invokit.exceptions import AccessDenied


@pytest.mark.parametrize(
    ("given", "parts"),
    [
        pytest.param("", (), id="empty"),
        pytest.param(".", (), id="dot"),
        pytest.param("./a//b/./c/", ("a", "b", "c"), id="dots-and-slashes"),
        pytest.param("~/notes", ("~", "notes"), id="tilde-literal"),
        pytest.param("$HOME/x", ("$HOME", "x"), id="variable-literal"),
        pytest.param("a\\..\\b", ("a\\..\\b",), id="backslash-is-a-name-char"),
        pytest.param("...", ("...",), id="three-dots-is-a-name"),
    ],
)
def test_split_keeps_names_literal(given: str, parts: tuple[str, ...]) -> None:
    """Paths split on '/' only; '~', '$VAR' and backslashes are ordinary name characters."""
    assert split_relative(given) == parts


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        pytest.param("../x", "parent_reference", id="dotdot"),
        pytest.param("a/../../x", "parent_reference", id="inner-dotdot"),
        pytest.param("a/../..", "parent_reference", id="trailing-dotdot"),
        pytest.param("/etc/passwd", "absolute", id="absolute"),
        pytest.param("//x", "absolute", id="double-slash"),
        pytest.param("a\x00b", "nul_byte", id="nul"),
        pytest.param("a/" + "n" * 256, "too_long", id="long-name"),
        pytest.param("a/" * 2100, "too_long", id="long-path"),
        pytest.param("\ud800", "unencodable", id="lone-surrogate"),
    ],
)
def test_split_refuses_with_reason(given: str, reason: str) -> None:
    """A path that can never be inside the root is refused with a reason code."""
    with pytest.raises(AccessDenied) as caught:
        split_relative(given)
    assert caught.value.kind == "denied"
    assert caught.value.data["reason"] == reason


def test_display_is_canonical() -> None:
    """The canonical spelling joins components, and the root is '.'."""
    assert display(()) == "."
    assert display(split_relative("./a//b/")) == "a/b"


@pytest.mark.parametrize(
    ("given", "parts"),
    [
        ("src/../README.md", ("README.md",)),
        ("a/b/../c", ("a", "c")),
        ("a/..", ()),
        ("./a/./b/../../c/", ("c",)),
    ],
)
def test_dotdot_that_stays_inside_is_resolved_by_name(given: str, parts: tuple[str, ...]) -> None:
    """A '..' that stays inside the root removes the component before it."""
    assert split_relative(given) == parts
