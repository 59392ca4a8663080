"""Spilled outputs and ``tool_result_read``, the tool that pages through them.

A page is sized so that the reader's whole answer, JSON-escaped as the model receives it,
fits its own output limit: the paging fields (``next_offset``, ``total_chars``) always arrive.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from invokit._ids import new_id
from invokit._spec import OutputLimit
from invokit.exceptions import ToolFailed
from invokit.tools._function import FunctionTool, tool

READER_NAME = "tool_result_read"
# Room for the answer's envelope: {"text": "", "offset": N, "next_offset": N, "total_chars": N}
# with 20-digit numbers is 95 characters.
_ENVELOPE = 128


class ArtifactStore:
    """Keeps spilled outputs in memory (newest ``capacity`` of them) for ``tool_result_read``."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, str] = OrderedDict()
        self._readers: dict[int, FunctionTool] = {}

    def put(self, text: str) -> str:
        handle = new_id("art_", 12)
        self._items[handle] = text
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return handle

    def get(self, handle: str) -> str | None:
        return self._items.get(handle)

    def reader(self, page_chars: int = 20_000) -> FunctionTool:
        """The ``tool_result_read`` tool that pages through spilled outputs; its answer, as
        JSON, is never longer than ``page_chars`` plus a small envelope."""
        found = self._readers.get(page_chars)
        if found is None:
            found = self._readers[page_chars] = _reader(self, max(1, page_chars))
        return found


def page_of(text: str, start: int, size: int) -> str:
    """The longest piece of ``text`` from ``start``, at most ``size`` characters, whose JSON
    string form (without its quotes) is at most ``size`` characters."""
    chunk = text[start : start + size]
    # Each character costs at least one character escaped, so dropping the excess from the
    # end always makes the piece fit: one pass, no search.
    excess = len(json.dumps(chunk, ensure_ascii=False)) - 2 - size
    if excess > 0:
        # At least one character, so paging always moves on (one escaped character fits in
        # the envelope's spare room).
        chunk = chunk[: max(1, len(chunk) - excess)]
    return chunk


def _reader(store: ArtifactStore, page_chars: int) -> FunctionTool:
    @tool(
        name=READER_NAME,
        read_only=True,
        idempotent=True,
        output_limit=OutputLimit(max_chars=page_chars + _ENVELOPE, mode="clip"),
    )
    def tool_result_read(handle: str, offset: int = 0, length: int = page_chars) -> dict[str, Any]:
        """Read part of a tool output that was too large to show at once.

        Args:
            handle: The handle given in the cut result.
            offset: The first character to read.
            length: How many characters to read (at most one page).
        """
        text = store.get(handle)
        if text is None:
            raise ToolFailed(
                f"no stored output has handle {handle!r} (it may have expired)",
                kind="not_found",
            )
        start = min(max(0, offset), len(text))
        chunk = page_of(text, start, max(1, min(length, page_chars)))
        end = start + len(chunk)
        return {
            "text": chunk,
            "offset": start,
            "next_offset": end if end < len(text) else None,
            "total_chars": len(text),
        }

    return tool_result_read
