"""Removing terminal escapes and control characters from text shown to a person."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.mcp import printable
from invokit.mcp._sanitize import printable_json


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("\x1b[31mred\x1b[0m", "red", id="sgr-colour"),
        pytest.param("a\x1b[2Jb", "ab", id="clear-screen"),
        pytest.param("\x1b]0;title\x07text", "text", id="osc-bel"),
        pytest.param("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link", id="osc-hyperlink"),
        pytest.param("\x9b31mc1\x9b0m", "c1", id="c1-csi"),
        pytest.param("over\rwrite", "overwrite", id="carriage-return"),
        pytest.param("bell\x07\x00nul", "bellnul", id="c0"),
        pytest.param("\u202eabc\u202c", "abc", id="bidi-override"),
        pytest.param("tab\tand\nline", "tab\tand\nline", id="keeps-tab-newline"),
    ],
)
def test_escapes_and_controls_are_removed(raw: str, shown: str) -> None:
    """Escape sequences vanish whole; control characters are dropped; tab and newline stay."""
    assert printable(raw) == shown


def test_one_line_mode_turns_newlines_into_spaces() -> None:
    """With keep_newlines=False a value cannot start a fake new line in a prompt."""
    assert printable("a\nb\tc", keep_newlines=False) == "a b c"


@given(st.text())
def test_output_never_holds_a_control_character(text: str) -> None:
    """Whatever the input, the output has no C0/C1 control besides tab and newline."""
    out = printable(text)
    assert all(ch in "\t\n" or not (ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F) for ch in out)


def test_json_rendering_is_inert_and_capped() -> None:
    """Arguments render as JSON (escapes shown as text) and are cut past the limit."""
    shown = printable_json({"k": "\x1b[2J" + "x" * 100}, limit=40)
    assert "\x1b" not in shown
    assert "\\u001b[2J" in shown
    assert "more characters not shown" in shown
