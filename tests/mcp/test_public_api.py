"""The invokit.mcp surface: the names the CLI and users import."""

from __future__ import annotations

import invokit.mcp


def test_all_is_sorted_and_importable() -> None:
    """__all__ is sorted, and every name in it exists."""
    assert list(invokit.mcp.__all__) == sorted(invokit.mcp.__all__)
    for name in invokit.mcp.__all__:
        assert hasattr(invokit.mcp, name), name


def test_the_contracted_names_are_exported() -> None:
    """The API the CLI codes against is all there."""
    expected = {
        "serve",
        "build_server",
        "MCPToolset",
        "PinStore",
        "to_mcp_tool",
        "to_call_tool_result",
    }
    assert expected <= set(invokit.mcp.__all__)
