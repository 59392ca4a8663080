"""Executor limits and the output-limit step: fail, clip, keep head and tail, or spill.

Every cut result fits its limit, note included: the output comes first and the note shrinks
(down to a single ``…``) before the output does. Offsets and counts in a note are true. Images
count by their base64 size. An error result keeps its kind and message, cut if it must be,
whatever the mode.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from invokit._calls import ImagePart, JsonPart, ResourceLink, TextPart, ToolResult
from invokit._spec import OutputLimit
from invokit.execution._artifacts import READER_NAME, ArtifactStore, SpillStore

if TYPE_CHECKING:
    from invokit.tools import Tool

__all__ = [
    "READER_NAME",
    "ArtifactStore",
    "Limits",
    "apply_output_limit",
    "fit_message",
    "result_text",
]

Note = Callable[[int], str]
"""A note about a cut, given how many characters of output it follows."""


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
    teardown: float = 10.0
    """Seconds each tool's teardown may take in ``Executor.aclose`` before it is left."""

    def __post_init__(self) -> None:
        if not 0 < self.timeout < math.inf:
            raise ValueError(
                f"timeout must be a positive, finite number of seconds, not {self.timeout!r}"
            )
        if not 0 < self.approval_ttl < math.inf:
            raise ValueError(
                f"approval_ttl must be a positive, finite number of seconds, not {self.approval_ttl!r}"
            )
        if not 0 < self.teardown < math.inf:
            raise ValueError(
                f"teardown must be a positive, finite number of seconds, not {self.teardown!r}"
            )
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {self.max_concurrency!r}")


def may_spill(limits: Limits, tools: Iterable[Tool]) -> bool:
    """Whether a call of one of ``tools`` may spill its output (so the executor serves the
    spilled pages' reader)."""
    if limits.output.mode == "spill":
        return True
    # declared_output_limit, not spec: building every spec here would undo the
    # registry's laziness (2.5 s at 1,000 typed tools).
    return any(
        (limit := t.declared_output_limit) is not None and limit.mode == "spill" for t in tools
    )


def result_text(result: ToolResult) -> str:
    """The text the model will read, JSON parts rendered."""
    if len(result.content) == 1 and isinstance(result.content[0], TextPart):
        return result.content[0].text
    return result.text


def output_size(result: ToolResult) -> int:
    """The characters ``result`` costs the model: text, JSON as text, images as base64."""
    total = 0
    for part in result.content:
        if isinstance(part, TextPart):
            total += len(part.text)
        elif isinstance(part, JsonPart):
            value = part.value
            if isinstance(value, dict | list | str):
                total += len(json.dumps(value, ensure_ascii=False))
            else:
                total += 24
        elif isinstance(part, ImagePart):
            total += len(part.data) + len(part.mime_type)
        elif isinstance(part, ResourceLink):
            total += sum(len(t) for t in (part.uri, part.name, part.description) if t)
    return total


def apply_output_limit(
    result: ToolResult, limit: OutputLimit, artifacts: SpillStore | None
) -> ToolResult:
    """Cut ``result`` to ``limit``; unchanged when it fits."""
    if output_size(result) <= limit.max_chars:
        return result
    text = result_text(result)
    size = len(text)
    left_out = sum(1 for part in result.content if isinstance(part, ImagePart | ResourceLink))
    budget = limit.max_chars
    if result.is_error:
        # A tool's own error stays what it was (its kind, its message), only shorter.
        return _cut_error(result, text, budget)
    if limit.mode == "fail":
        return _too_large(result, limit, output_size(result))
    dropped = f" ({left_out} image or link part(s) left out)" if left_out else ""
    if limit.mode == "spill" and artifacts is not None and result.name != READER_NAME:
        handle = artifacts.put(text)
        call = f"{READER_NAME}(handle={handle!r}, offset={{}})"

        def spilled(shown: int) -> str:
            return (
                f"\n[output cut: showing {shown} of {size} characters{dropped}. "
                f"Read the rest with {call.format(shown)}]"
            )

        def spilled_short(shown: int) -> str:
            return f"\n[{shown}/{size} shown; {call.format(shown)}]"

        shown, note = _fit(budget, (spilled, spilled_short), minimum=1)
        return _cut(result, text[:shown] + note, size, artifact=handle)
    if limit.mode == "head_tail":

        def marker(kept: int) -> str:
            return f"\n[... {size - kept} characters cut of {size}{dropped} ...]\n"

        def marker_short(kept: int) -> str:
            return f"\n[…{size - kept} cut…]\n"

        kept, note = _fit(budget, (marker, marker_short), minimum=budget // 2)
        # The head gets the odd character: at a tiny limit the output still starts as it did.
        half = kept // 2
        head, tail = text[: kept - half], text[size - half :] if half else ""
        return _cut(result, head + note + tail, size)

    def clipped(shown: int) -> str:
        return f"\n[output cut: {shown} of {size} characters shown{dropped}]"

    def clipped_short(shown: int) -> str:
        return f"\n[cut: {shown}/{size}]"

    shown, note = _fit(budget, (clipped, clipped_short), minimum=budget // 2)
    return _cut(result, text[:shown] + note, size)


def _fit(budget: int, notes: Sequence[Note], *, minimum: int) -> tuple[int, str]:
    """The first of ``notes`` (longest first) that leaves at least ``minimum`` characters of
    output within ``budget``, with that number; else a bare ``…`` (or nothing, for a budget
    of one character)."""
    for note in notes:
        shown = _room(budget, note)
        if shown >= max(1, minimum):
            return shown, note(shown)
    if budget < 2:
        return budget, ""
    return budget - 1, "…"


def _room(budget: int, note: Note) -> int:
    """The most characters of output that fit in ``budget`` beside ``note`` (whose length
    depends on that number); zero when the note alone fills it."""
    shown = budget - len(note(budget))
    while shown > 0 and shown + len(note(shown)) > budget:
        shown -= 1
    return max(0, shown)


def fit_message(message: str, budget: int) -> str:
    """``message`` cut to ``budget`` characters, its note included; itself when it fits."""
    if len(message) <= budget:
        return message
    size = len(message)

    def clipped(shown: int) -> str:
        return f"\n[message cut: {shown} of {size} characters shown]"

    shown, note = _fit(budget, (clipped,), minimum=budget // 2)
    return message[:shown] + note


def _too_large(result: ToolResult, limit: OutputLimit, size: int) -> ToolResult:
    message = (
        f"The output of {result.name!r} is {size} characters, over the limit of "
        f"{limit.max_chars}. Ask for less (a smaller range, a narrower pattern)."
    )
    if len(message) > limit.max_chars:
        message = f"Output over {limit.max_chars} characters."[: limit.max_chars]
    return replace(
        ToolResult.make_error(result.call_id, result.name, "output_too_large", message),
        duration=result.duration,
        metadata={**result.metadata, "output_chars": size},
    )


def _cut_error(result: ToolResult, text: str, budget: int) -> ToolResult:
    size = len(text)

    def clipped(shown: int) -> str:
        return f"\n[message cut: {shown} of {size} characters shown]"

    shown, note = _fit(budget, (clipped,), minimum=budget // 2)
    cut = text[:shown] + note
    error = result.error
    if error is not None and len(error.message) > budget:
        error = replace(error, message=error.message[:shown] + note)
    metadata = {**result.metadata, "output_chars": size}
    return replace(
        result,
        content=(TextPart(text=cut),),
        structured=None,
        error=error,
        truncated=True,
        metadata=metadata,
    )


def _cut(result: ToolResult, text: str, size: int, artifact: str | None = None) -> ToolResult:
    metadata = {**result.metadata, "output_chars": size}
    if artifact is not None:
        metadata["artifact"] = artifact
    # The structured value is the whole output; the model and host get the cut text only.
    return replace(
        result, content=(TextPart(text=text),), structured=None, truncated=True, metadata=metadata
    )
