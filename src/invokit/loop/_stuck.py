"""Stuck detection: the same call, made again and again, ends the run — after a warning.

A call is "the same" when its tool name and canonical arguments are equal (key order and
whitespace do not matter). With ``stuck_after=N`` the (N-1)th identical call still runs and its
result carries a note telling the model that one more ends the run; the Nth is not run and
the run ends with reason ``stuck``. Counts cover the whole run, across turns and resumes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from invokit._calls import JsonPart, TextPart, ToolCall, ToolResult
from invokit._canonical import canonical_hash


def call_signature(call: ToolCall) -> str:
    """``name:hash`` of the call's canonical arguments; unparsable text is hashed as text."""
    arguments: object
    if isinstance(call.arguments, str):
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = call.arguments
    else:
        arguments = dict(call.arguments)
    return f"{call.name}:{canonical_hash(arguments)}"


@dataclass(frozen=True, kw_only=True, slots=True)
class StuckCheck:
    """What one turn's calls mean for stuck detection."""

    warn: frozenset[str] = frozenset()
    """Ids of calls whose result gets the "one more ends the run" note."""
    stuck: ToolCall | None = None
    """The first call that reached the limit; the turn's calls are then not run."""
    count: int = 0
    """How many times ``stuck`` was made, itself included."""


@dataclass(kw_only=True, slots=True)
class StuckDetector:
    """Counts identical calls over a run.

    Args:
        after: the count at which the run ends (``None`` turns detection off).
        counts: signature → times seen, carried across resumes.
    """

    after: int | None
    counts: dict[str, int] = field(default_factory=dict)

    def observe(self, calls: Sequence[ToolCall]) -> StuckCheck:
        """Count ``calls`` (one turn) and say which to warn about or whether the run is stuck."""
        if self.after is None:
            return StuckCheck()
        warn: set[str] = set()
        for call in calls:
            key = call_signature(call)
            seen = self.counts.get(key, 0) + 1
            self.counts[key] = seen
            if seen >= self.after:
                return StuckCheck(stuck=call, count=seen)
            if seen == self.after - 1:
                warn.add(call.id)
        return StuckCheck(warn=frozenset(warn))


def with_warning(result: ToolResult, call: ToolCall, count: int) -> ToolResult:
    """``result`` with a note telling the model that repeating the call ends the run."""
    note = TextPart(
        text=(
            f"Note: this is call number {count} of {call.name!r} with exactly these arguments. "
            "Making the same call again ends the run; change the arguments, try another "
            "approach, or answer with what you have."
        )
    )
    content = result.content
    # A result without parts is rendered from its value by providers; keep that value visible.
    if not content and result.structured is not None:
        content = (JsonPart(value=result.structured),)
    elif not content and result.error is not None:
        content = (TextPart(text=result.error.message),)
    return replace(result, content=(*content, note))


def stuck_reason(call: ToolCall, count: int) -> str:
    """Why a stuck run ended, for the host and for the refused call's result."""
    return (
        f"The model called {call.name!r} with the same arguments {count} times without "
        "making progress; the run ended."
    )
