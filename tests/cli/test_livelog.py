"""The live log's one-line view of a call's arguments."""

from __future__ import annotations

import pytest

from invokit.cli._livelog import compact


def test_compact_cuts_a_huge_argument_to_its_limit() -> None:
    """A 4 MB argument is shown as its first characters and an ellipsis, within the limit."""
    shown = compact({"content": "a" * 4_000_000}, limit=160)
    assert len(shown) == 160 and shown.endswith("…")
    assert shown.startswith('{"content": "aaaa')


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"a": 1}, '{"a": 1}', id="short"),
        pytest.param({"a": "\x1b[2J"}, '{"a": "\\u001b[2J"}', id="escape-kept-inert"),
    ],
)
def test_compact_shows_short_values_whole(value: object, expected: str) -> None:
    """A value that fits is shown whole, control characters escaped by JSON itself."""
    assert compact(value) == expected


def test_escapes_that_lengthen_the_text_are_cut_too() -> None:
    """Escaping can make a text that fit too long: it is cut to the limit as well."""
    shown = compact("\u202e" * 30, limit=40)
    assert len(shown) == 40 and "\u202e" not in shown and shown.endswith("…")
