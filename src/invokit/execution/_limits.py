"""Executor limits and the output-limit step: fail, clip, keep head and tail, or spill."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from invokit._calls import JsonPart, TextPart, ToolResult
from invokit._ids import new_id
from invokit._spec import OutputLimit
from invokit.exceptions import ToolFailed
from invokit.tools._function import FunctionTool, tool

READER_NAME = "tool_result_read"


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """Bounds the executor applies to every call unless a tool's spec says otherwise."""

    timeout: float = 60.0
    """Seconds a call may run."""
    output: OutputLimit = field(
        default_factory=lambda: OutputLimit(max_chars=100_000, mode="head_tail")
    )
    """How much text the model may receive from one call."""
    max_concurrency: int = 16
    """The most calls ``execute_many`` runs at once."""
    approval_ttl: float = 3600.0
    """Seconds an approval request stays open before it counts as denied."""

    def __post_init__(self) -> None:
        if not 0 < self.timeout < math.inf:
            raise ValueError(
                f"timeout must be a positive, finite number of seconds, not {self.timeout!r}"
            )
        if not 0 < self.approval_ttl < math.inf:
            raise ValueError(
                f"approval_ttl must be a positive, finite number of seconds, not {self.approval_ttl!r}"
            )
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {self.max_concurrency!r}")


class ArtifactStore:
    """Keeps spilled outputs in memory (newest ``capacity`` of them) for ``tool_result_read``."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, str] = OrderedDict()

    def put(self, text: str) -> str:
        handle = new_id("art_", 12)
        self._items[handle] = text
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return handle

    def get(self, handle: str) -> str | None:
        return self._items.get(handle)

    def reader(self, page_chars: int = 20_000) -> FunctionTool:
        """The ``tool_result_read`` tool that pages through spilled outputs."""
        store = self

        @tool(
            name=READER_NAME,
            read_only=True,
            idempotent=True,
            output_limit=OutputLimit(max_chars=page_chars + 500, mode="clip"),
        )
        def tool_result_read(
            handle: str, offset: int = 0, length: int = page_chars
        ) -> dict[str, Any]:
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
            start = max(0, offset)
            size = max(1, min(length, page_chars))
            chunk = text[start : start + size]
            end = start + len(chunk)
            return {
                "text": chunk,
                "offset": start,
                "next_offset": end if end < len(text) else None,
                "total_chars": len(text),
            }

        return tool_result_read


def result_text(result: ToolResult) -> str:
    """The text the model will read, JSON parts rendered."""
    if len(result.content) == 1 and isinstance(result.content[0], TextPart):
        return result.content[0].text
    return result.text


def _size(result: ToolResult) -> int:
    total = 0
    for part in result.content:
        if isinstance(part, TextPart):
            total += len(part.text)
        elif isinstance(part, JsonPart):
            value = part.value
            if isinstance(value, dict | list | str):
                import json

                total += len(json.dumps(value, ensure_ascii=False))
            else:
                total += 24
    return total


def apply_output_limit(
    result: ToolResult, limit: OutputLimit, artifacts: ArtifactStore | None
) -> ToolResult:
    """Cut ``result`` to ``limit``; unchanged when it fits."""
    if _size(result) <= limit.max_chars:
        return result
    text = result_text(result)
    size = len(text)
    if limit.mode == "fail":
        message = (
            f"The output of {result.name!r} is {size} characters, over the limit of {limit.max_chars}. "
            "Ask for less (a smaller range, a narrower pattern)."
        )
        return replace(
            ToolResult.make_error(result.call_id, result.name, "output_too_large", message),
            duration=result.duration,
            metadata={**result.metadata, "output_chars": size},
        )
    budget = limit.max_chars
    if limit.mode == "spill" and artifacts is not None and result.name != READER_NAME:
        handle = artifacts.put(text)

        def spilled(shown: int) -> str:
            return (
                f"\n[output cut: showing {shown} of {size} characters. "
                f"Read the rest with {READER_NAME}(handle={handle!r}, offset={shown})]"
            )

        shown = _room(budget, spilled)
        return _cut(result, text[:shown] + spilled(shown), size, artifact=handle)
    if limit.mode == "head_tail":

        def marker(kept: int) -> str:
            return f"\n[... {size - kept} characters cut of {size} ...]\n"

        kept = _room(budget, marker)
        head, tail = text[: kept // 2], text[size - (kept - kept // 2) :] if kept else ""
        return _cut(result, head + marker(kept) + tail, size)

    def clipped(shown: int) -> str:
        return f"\n[output cut: {shown} of {size} characters shown]"

    shown = _room(budget, clipped)
    return _cut(result, text[:shown] + clipped(shown), size)


def _room(budget: int, note: Callable[[int], str]) -> int:
    """How many characters of output fit in ``budget`` beside ``note`` (whose length depends
    on that number); zero when the note alone fills it."""
    room = max(0, budget - len(note(budget)))
    return max(0, budget - len(note(room)))


def _cut(result: ToolResult, text: str, size: int, artifact: str | None = None) -> ToolResult:
    metadata = {**result.metadata, "output_chars": size}
    if artifact is not None:
        metadata["artifact"] = artifact
    return replace(result, content=(TextPart(text=text),), truncated=True, metadata=metadata)
