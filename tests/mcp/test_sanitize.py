"""Text shown to a person from the MCP side: escapes and control characters made visible."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit._inert import printable as the_one_renderer
from invokit.mcp import printable
from invokit.mcp._sanitize import printable_json


def test_the_mcp_renderer_is_the_one_renderer() -> None:
    """``invokit.mcp.printable`` is invokit's one inert renderer, not a second one."""
    assert printable is the_one_renderer


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m", id="sgr-colour"),
        pytest.param("\x1b]0;title\x07text", "\\x1b]0;title\\x07text", id="osc-bel"),
        pytest.param("\x9b31mc1", "\\x9b31mc1", id="c1-csi"),
        pytest.param("over\rwrite", "over\\rwrite", id="carriage-return"),
        pytest.param("bell\x07\x00nul", "bell\\x07\\x00nul", id="c0"),
        pytest.param("\u202eabc\u202c", "\\u202eabc\\u202c", id="bidi-override"),
        pytest.param("tab\tand\nline", "tab\\tand\\nline", id="tab-newline"),
    ],
)
def test_escapes_and_controls_are_shown_escaped(raw: str, shown: str) -> None:
    """Escape sequences, control characters, tabs and newlines appear as escapes, inert."""
    assert printable(raw) == shown


@given(st.text())
def test_output_never_holds_a_control_character(text: str) -> None:
    """Whatever the input, the output has no C0/C1 control, newline included."""
    out = printable(text)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in out)


def test_json_rendering_is_inert_and_capped() -> None:
    """Arguments render as JSON (escapes shown as text) and are cut past the limit."""
    shown = printable_json({"k": "\x1b[2J" + "x" * 100}, limit=40)
    assert "\x1b" not in shown
    assert "\\u001b[2J" in shown
    assert "more characters not shown" in shown
