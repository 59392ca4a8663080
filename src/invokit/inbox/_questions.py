"""What the inbox shows of one pending question, read from its approval request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invokit._calls import PRINCIPAL
from invokit.approvals import ApprovalRequest


@dataclass(frozen=True, kw_only=True, slots=True)
class DiffLine:
    kind: str
    """``add``, ``del``, ``head`` or ``same``: how the line is coloured."""
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Question:
    """One pending question as the page shows it (every text still to be escaped)."""

    id: str
    call_id: str
    tool: str
    arguments: str
    """The arguments as indented JSON, ASCII only: invisible characters are escapes."""
    reason: str
    rule: str | None
    touches: tuple[str, ...]
    """The side effects the call declared, one per line (``write notes.md``)."""
    protected: str | None
    caller: dict[str, str] | None
    session_id: str | None
    expires_at: float
    diff: tuple[DiffLine, ...]


def caller_of(request: ApprovalRequest) -> dict[str, str] | None:
    """Who asked, when the server verified it (``[serve.auth]``): ``{"iss": ..., "sub": ...}``."""
    metadata = request.call.metadata
    who = metadata.get(PRINCIPAL) if isinstance(metadata, dict) else None
    if (
        isinstance(who, dict)
        and isinstance(who.get("iss"), str)
        and isinstance(who.get("sub"), str)
    ):
        return {"iss": who["iss"], "sub": who["sub"]}
    return None


def question(request: ApprovalRequest, root: Path | None) -> Question:
    from invokit.cli.internal import touches

    return Question(
        id=request.id,
        call_id=request.call.id,
        tool=request.tool,
        arguments=json.dumps(request.arguments, indent=2, sort_keys=True, ensure_ascii=True),
        reason=request.reason,
        rule=request.rule,
        touches=tuple(touches(p) for p in request.requests),
        protected=request.protected,
        caller=caller_of(request),
        session_id=request.session_id,
        expires_at=request.expires_at,
        diff=_diff(request, root),
    )


def _diff(request: ApprovalRequest, root: Path | None) -> tuple[DiffLine, ...]:
    """The file change as the terminal shows it (cli/_diff.py: bounded, escaped), by line."""
    if root is None:
        return ()
    from invokit.cli.internal import change_diff

    text: Any = change_diff(request, root)
    if text is None:
        return ()
    lines: list[DiffLine] = []
    for line in str(text.plain).split("\n"):
        if line.startswith(("+++", "---")):
            kind = "head"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        lines.append(DiffLine(kind=kind, text=line))
    return tuple(lines)
