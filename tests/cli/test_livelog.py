"""The live log's one-line view of a call's arguments."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.cli._livelog import compact, printable


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


def escaped_one_by_one(text: str) -> str:
    """What ``printable`` must give: each hidden character (control, format, surrogate,
    private use, unassigned, line or paragraph separator) escaped, newlines and tabs kept."""
    hidden = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        if c not in "\n\t" and unicodedata.category(c) in hidden
        else c
        for c in text
    )


@given(st.text(alphabet=st.characters(codec=None)))
def test_printable_escapes_exactly_the_hidden_characters(text: str) -> None:
    """Any text, printable or not (the common all-printable text takes a shortcut), comes out
    with exactly its hidden characters escaped."""
    assert printable(text) == escaped_one_by_one(text)


@pytest.mark.parametrize(
    "text",
    ["plain", "caf\u00e9 \u00a0nbsp", "a\u2028b", "\u202eevil", "tab\there", "\x1b[2J", ""],
)
def test_printable_on_chosen_text(text: str) -> None:
    """Text with no-break spaces, separators, bidi controls, tabs and escapes."""
    assert printable(text) == escaped_one_by_one(text)
