"""Text that is safe to show a person, for the MCP side (elicitation prompts).

:func:`printable` is invokit's one inert renderer (:mod:`invokit._inert`), re-exported here as
``invokit.mcp.printable``; :func:`printable_json` lays arguments out as indented JSON with it.
"""

from __future__ import annotations

import json
from typing import Any

from invokit._inert import printable

__all__ = ["printable", "printable_json"]


def printable_json(value: Any, *, limit: int = 4000) -> str:
    """``value`` as indented JSON for a person, inert, cut at ``limit`` characters.

    JSON escaping already turns control characters inside strings into ``\\u001b`` text; the
    pass through :func:`printable` is for anything that is not a JSON string (keys included).
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    text = printable(text, keep_newlines=True)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"
    return text
