"""The one inert renderer: no input makes it emit a raw control byte or an extra line."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit._inert import printable

HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escaped_one_by_one(text: str, *, keep_newlines: bool = False) -> str:
    """What ``printable`` must give, character by character."""
    out = []
    for char in text:
        code = ord(char)
        if keep_newlines and char in "\n\t":
            out.append(char)
        elif char in NAMED:
            out.append(NAMED[char])
        elif unicodedata.category(char) in HIDDEN:
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    return "".join(out)


def acts_on_a_terminal(char: str) -> bool:
    return unicodedata.category(char) in HIDDEN


@given(st.text(alphabet=st.characters(codec=None)))
def test_no_input_gives_a_raw_control_or_an_extra_line(text: str) -> None:
    """Any text comes out as one line with no control, format, separator or unassigned
    character in it, and with exactly its hidden characters escaped."""
    shown = printable(text)
    assert not any(acts_on_a_terminal(char) for char in shown), repr(shown)
    assert len(shown.splitlines()) <= 1
    assert shown == escaped_one_by_one(text)


@given(st.text(alphabet=st.characters(codec=None)))
def test_kept_lines_are_each_inert(text: str) -> None:
    """With ``keep_newlines`` the only raw controls left are the newlines and tabs the text
    had: its lines are the text's own lines, each inert."""
    shown = printable(text, keep_newlines=True)
    assert not any(acts_on_a_terminal(char) for char in shown if char not in "\n\t")
    assert shown.count("\n") == text.count("\n")
    assert shown == escaped_one_by_one(text, keep_newlines=True)


@given(st.text(alphabet=st.characters(codec=None)))
def test_rendering_twice_changes_nothing(text: str) -> None:
    """What is shown is already inert: rendering it again gives the same text."""
    once = printable(text)
    assert printable(once) == once


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("fs.write\n10:00:00 approved", "fs.write\\n10:00:00 approved", id="newline"),
        pytest.param("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H", id="clear-screen"),
        pytest.param("\x1b]0;owned\x07", "\\x1b]0;owned\\x07", id="osc-title"),
        pytest.param("\x9b31m", "\\x9b31m", id="c1-csi"),
        pytest.param("over\rwrite", "over\\rwrite", id="carriage-return"),
        pytest.param("\u202eevil", "\\u202eevil", id="bidi-override"),
        pytest.param("a\u2028b", "a\\u2028b", id="line-separator"),
        pytest.param("caf\u00e9 \u00a0x", "caf\u00e9 \u00a0x", id="no-break-space-kept"),
        pytest.param("tab\there", "tab\\there", id="tab"),
    ],
)
def test_chosen_text(raw: str, shown: str) -> None:
    """Escapes, line breaks and bidi controls are shown; accents and spaces stay."""
    assert printable(raw) == shown
