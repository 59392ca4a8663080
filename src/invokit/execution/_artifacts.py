"""Spilled outputs and ``tool_result_read``, the tool that pages through them.

A page is sized so that the reader's whole answer, JSON-escaped as the model receives it and
envelope included, fits the page size, which is its output limit: the paging fields
(``next_offset``, ``total_chars``) always arrive, and an executor whose output limit is the page
size never cuts a page.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from invokit._ids import new_id
from invokit._spec import OutputLimit
from invokit.exceptions import ToolFailed
from invokit.tools import FunctionTool, tool

READER_NAME = "tool_result_read"
# The answer's envelope, {"text": "", "offset": N, "next_offset": N, "total_chars": N}, is at
# most 95 characters with 20-digit numbers; a page is never smaller than this, so it holds the
# envelope and some text.
_SMALLEST_PAGE = 128


@runtime_checkable
class SpillStore(Protocol):
    """Where outputs too large to show are kept for ``tool_result_read``: in memory
    (:class:`ArtifactStore`) or shared by every replica (``invokit.postgres``)."""

    def put(self, text: str) -> str:
        """Keep ``text``; the handle to read it by."""
        ...

    def get(self, handle: str) -> str | None:
        """The text kept under ``handle``; ``None`` when there is none (or no longer)."""
        ...

    def reader(self, page_chars: int = 20_000) -> FunctionTool:
        """The ``tool_result_read`` tool paging through this store."""
        ...


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
        JSON, envelope included, is never longer than ``page_chars`` (at least 128)."""
        found = self._readers.get(page_chars)
        if found is None:
            found = self._readers[page_chars] = _reader(self, max(1, page_chars))
        return found


def page_of(text: str, start: int, size: int) -> str:
    """The longest piece of ``text`` from ``start``, at most ``size`` characters, whose JSON
    string form (without its quotes) is at most ``size`` characters; at least one character."""
    chunk = text[start : start + size]
    extra = 0  # characters the escapes so far add
    # One pass over the characters JSON escapes: between two of them, every character
    # costs one, so where the piece must end is found without trying lengths.
    for match in _ESCAPED.finditer(chunk):
        at = match.start()
        if at + extra > size:
            return chunk[: max(1, size - extra)]
        extra += 1 if match.group() in _SHORT_ESCAPES else 5
        if at + 1 + extra > size:
            return chunk[: max(1, at)]
    return chunk[: max(1, min(len(chunk), size - extra))]


# json.dumps(ensure_ascii=False) escapes these: two characters for the short forms, six
# (\u00XX) for the other control characters.
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
_SHORT_ESCAPES = frozenset('"\\\n\r\t\b\f')


def reader_for(store: SpillStore, page_chars: int) -> FunctionTool:
    """A new ``tool_result_read`` tool reading from ``store``, ``page_chars`` per page."""
    return _reader(store, max(1, page_chars))


def _reader(store: SpillStore, page_chars: int) -> FunctionTool:
    page_chars = max(page_chars, _SMALLEST_PAGE)

    @tool(
        name=READER_NAME,
        read_only=True,
        idempotent=True,
        output_limit=OutputLimit(max_chars=page_chars, mode="clip"),
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
        total = len(text)
        # The envelope's cost with the widest next_offset it can have: the page, escapes
        # counted, takes the rest of the page size.
        envelope = len(
            json.dumps({"text": "", "offset": start, "next_offset": total, "total_chars": total})
        )
        budget = max(1, min(length, page_chars - envelope))
        chunk = page_of(text, start, budget)
        end = start + len(chunk)
        return {
            "text": chunk,
            "offset": start,
            "next_offset": end if end < total else None,
            "total_chars": total,
        }

    return tool_result_read
