"""``tools/list`` cursors: each names the last tool of the page before it."""

from __future__ import annotations

import base64
import binascii

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["cursor_after", "name_in"]

_PREFIX = "after:"


def cursor_after(name: str) -> str:
    """The cursor of the page that follows the tool ``name``."""
    return base64.urlsafe_b64encode((_PREFIX + name).encode()).decode()


def name_in(cursor: str) -> str:
    """The tool name a cursor of :func:`cursor_after` names; a protocol error for anything else."""
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode()
    except (binascii.Error, UnicodeError, ValueError):
        text = ""
    if not text.startswith(_PREFIX):
        raise MCPError(
            types.INVALID_PARAMS,
            "Invalid tools/list cursor: pass back a nextCursor this server sent, or none for "
            "the first page.",
        )
    return text[len(_PREFIX) :]
