"""The live log: one line per step that matters, as calls happen (and from the audit log).

A person watching ``invokit serve`` sees each call with its arguments and decision (allowed,
denied and why, waiting for approval), who approved it, and how it ended.
"""

from __future__ import annotations

import functools
import json
import time
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from invokit.execution import Event

if TYPE_CHECKING:
    from invokit.cli._terminal import Board

SHOWN_TYPES = frozenset(
    {
        "validated",
        "decided",
        "approval_requested",
        "approval_resolved",
        "completed",
        "failed",
        "interrupted",
    }
)

_VERDICT_STYLE = {
    "allow": ("allowed", "green"),
    "ask": ("asks", "yellow"),
    "deny": ("denied", "red"),
}


def printable(text: str) -> str:
    """``text`` with control, format and unassigned characters escaped (``\\x1b``).

    Arguments and reasons come from a model: they must not move the cursor, recolour or
    rewrite the terminal (escape sequences), or reorder what a person reads (bidi controls).
    """
    if text.isprintable():  # the usual case, checked in C: nothing of those categories
        return text
    out: list[str] = []
    for char in text:
        if char in "\n\t" or unicodedata.category(char) not in _HIDDEN:
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def inert(text: object, style: str = "") -> Text:
    """``text`` as rich ``Text``: console markup (``[conceal]``) is not interpreted and control
    characters are shown escaped. For anything a model, a tool or a server wrote."""
    return Text(printable(str(text)), style=style)


def compact(value: Any, limit: int = 160) -> str:
    """One-line JSON, printable, cut at ``limit`` characters. Only what can be shown is
    escaped: a 4 MB argument costs its JSON encoding (in C), not a Python pass over it."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    shown = printable(text[:limit])  # escaping only ever lengthens: the cut can come first
    if len(text) <= limit and len(shown) <= limit:
        return shown
    return shown[: limit - 1] + "…"


_VERBS = {
    "file_read": "read",
    "file_write": "write",
    "file_delete": "delete",
    "mcp_invoke": "call",
}


def touches(permission: Any) -> str:
    """What one permission request touches, in full and printable: ``write scripts/a.sh``,
    ``run rm -rf 'my dir'`` (an argv quoted as a shell would read it), ``GET https://…``."""
    import shlex

    from invokit.permissions import NetworkAccess, ShellExec

    if isinstance(permission, ShellExec):
        verb, target = "run", shlex.join(permission.argv)
    elif isinstance(permission, NetworkAccess):
        verb, target = permission.method, permission.url
    else:
        verb, target = _VERBS.get(permission.kind, permission.kind), permission.target()
    return printable(f"{verb} {target}").replace("\n", "\\n").replace("\t", "\\t")


def _stamp(when: float) -> Text:
    return Text(time.strftime("%H:%M:%S", time.localtime(when)) + " ", style="dim")


def describe(
    record: Mapping[str, Any], arguments: Any = None, decision: Mapping[str, Any] | None = None
) -> Text | None:
    """A line for one event (as ``Event.to_dict()`` gives it); ``None`` for steps not shown.

    ``arguments`` are the call's validated arguments; ``decision`` the data of its ``decided``
    event, shown with how the call ended (a call the policy allowed says so only once it ran).
    """
    kind = record.get("type")
    data: Mapping[str, Any] = record.get("data") or {}
    tool = printable(str(record.get("tool", "?")))
    line = _stamp(float(record.get("time") or time.time()))
    if kind == "decided":
        word, style = _VERDICT_STYLE.get(str(data.get("verdict")), ("?", "white"))
        line.append(f"{word:<8}", style=f"bold {style}")
        line.append(tool, style="bold")
        if arguments is not None:
            line.append(" " + compact(arguments))
        line.append("  " + printable(str(data.get("reason") or "")), style="dim")
        return line
    if kind == "approval_requested":
        line.append("waiting ", style="bold yellow")
        line.append(tool, style="bold")
        line.append(printable(f" for approval {data.get('id')}"))
        return line
    if kind == "approval_resolved":
        approved = bool(data.get("approved"))
        by = f" by {data['by']}" if data.get("by") else ""
        via = f" via {data['channel']}" if data.get("channel") else ""
        if approved:
            line.append("approved", style="bold green")
            line.append(
                printable(f" {tool} {data.get('id')} ({data.get('scope', 'once')}){by}{via}")
            )
        elif data.get("verdict") == "withdrawn":
            line.append("withdrawn", style="bold red")
            line.append(printable(f" {tool} {data.get('id')}: {data.get('reason') or ''}"))
        else:
            line.append("refused ", style="bold red")
            line.append(
                printable(f" {tool} {data.get('id')}{by}{via}: {data.get('reason') or 'no reason'}")
            )
        return line
    if kind == "completed":
        if data.get("is_error"):
            # A guard in the tool (a path outside the root) refused it: not "allowed".
            word = "refused " if data.get("kind") == "denied" else "error   "
            line.append(word, style="bold red")
            line.append(tool, style="bold")
            if arguments is not None:
                line.append(" " + compact(arguments))
            line.append(printable(f" {data.get('kind')}: {data.get('message', '')}"))
        else:
            line.append("done    ", style="bold green")
            line.append(tool, style="bold")
            if arguments is not None:
                line.append(" " + compact(arguments))
            duration = float(data.get("duration") or 0.0)
            line.append(f" in {duration * 1000:.0f} ms", style="dim")
            if data.get("truncated"):
                line.append(" (output truncated)", style="yellow")
            if decision is not None and decision.get("verdict") == "allow":
                reason = printable(str(decision.get("reason") or ""))
                if not reason.startswith("allowed"):
                    reason = f"allowed: {reason}" if reason else "allowed"
                line.append(f"  {reason}", style="dim")
        return line
    if kind == "failed":
        # A refusal before the call ran (preflight: a protected path) says so.
        word = "refused " if data.get("kind") == "denied" else "failed  "
        line.append(word, style="bold red")
        line.append(tool, style="bold")
        if arguments is not None:
            line.append(" " + compact(arguments))
        line.append(printable(f" {data.get('kind')}: {data.get('message', '')}"))
        return line
    if kind == "interrupted":
        line.append("paused  ", style="bold yellow")
        line.append(tool, style="bold")
        if data.get("kind") == "approval":
            line.append(printable(f" approve with: invokit approvals approve {data.get('id')}"))
        else:
            line.append(printable(f" {data.get('kind')} {data.get('id')}"))
        return line
    return None


def ansi_line(line: Text, color_system: str | None) -> str:
    """``line`` as text with its styles as ANSI codes (none without a ``color_system``), as
    ``Console.print`` writes a line that fits: its spans must not overlap (``describe``'s
    never do)."""
    plain = line.plain
    if color_system is None:
        return plain
    base = str(line.style or "")
    out: list[str] = []
    at = 0
    for span in sorted(line.spans, key=lambda s: s.start):
        if span.start > at:
            out.append(_styled(plain[at : span.start], base, color_system))
        out.append(_styled(plain[span.start : span.end], f"{base} {span.style}", color_system))
        at = max(at, span.end)
    out.append(_styled(plain[at:], base, color_system))
    return "".join(out)


def _styled(text: str, style: str, color_system: str) -> str:
    style = style.strip()
    if not style or not text:
        return text
    before, after = _codes(style, color_system)
    return before + text + after


@functools.lru_cache(maxsize=64)
def _codes(style: str, color_system: str) -> tuple[str, str]:
    """The ANSI codes that open and close ``style``."""
    from rich.color import ColorSystem
    from rich.style import Style

    system = {
        "standard": ColorSystem.STANDARD,
        "256": ColorSystem.EIGHT_BIT,
        "truecolor": ColorSystem.TRUECOLOR,
        "windows": ColorSystem.WINDOWS,
    }.get(color_system, ColorSystem.STANDARD)
    before, _, after = Style.parse(style).render("\x00", color_system=system).partition("\x00")
    return before, after


class Narrator:
    """Turns a stream of event records into :func:`describe` lines.

    One line for an allowed call, when it ends, with its arguments and its real outcome (done,
    refused by the tool's guard, error): never ``allowed`` for a call that did not run. A call
    the policy asks about is shown when it asks, and again when it ends; a denied call once
    (its decision), not again as a failure.
    """

    def __init__(self) -> None:
        self._arguments: dict[str, Any] = {}
        self._decisions: dict[str, Mapping[str, Any]] = {}
        self._denied: set[str] = set()
        self._callers: dict[str, str] = {}

    def line(self, record: Mapping[str, Any]) -> Text | None:
        shown = self._line(record)
        caller = self._callers.get(str(record.get("call_id")))
        if shown is not None and caller is not None:
            shown.append(printable(f"  by {caller}"), style="dim")
        if record.get("type") in ("completed", "failed"):
            self._callers.pop(str(record.get("call_id")), None)
        return shown

    def _line(self, record: Mapping[str, Any]) -> Text | None:
        kind = record.get("type")
        data: Mapping[str, Any] = record.get("data") or {}
        call_id = str(record.get("call_id"))
        if kind == "received":
            # Who called, when the server verified it ([serve.auth]): named on the call's lines.
            who = data.get("principal")
            if isinstance(who, Mapping) and who.get("sub"):
                self._callers[call_id] = f"{who.get('sub')} ({who.get('iss')})"
            return None
        if kind == "validated":
            self._arguments[call_id] = data.get("arguments")
            return None
        if kind == "decided":
            verdict = data.get("verdict")
            if verdict == "allow":  # said with the outcome: the call may still be refused
                self._decisions[call_id] = data
                return None
            if verdict == "deny":
                self._denied.add(call_id)
        if kind == "failed" and data.get("kind") == "denied" and call_id in self._denied:
            self._denied.discard(call_id)
            self._arguments.pop(call_id, None)
            return None
        arguments = self._arguments.get(call_id)
        decision = self._decisions.get(call_id)
        if kind in ("completed", "failed"):
            self._arguments.pop(call_id, None)
            self._decisions.pop(call_id, None)
            self._denied.discard(call_id)
            if arguments is None and kind == "failed":
                arguments = data.get("arguments")
        return describe(record, arguments, decision)


class LiveLog:
    """An event sink that prints a line per step to a console as calls happen.

    With a ``board`` (shared with the terminal approver) an open question is shown again
    under every line, so the log never scrolls it away.
    """

    def __init__(self, console: Console, board: Board | None = None) -> None:
        self.console = console
        self.board = board
        self._narrator = Narrator()

    @property
    def types(self) -> frozenset[str] | None:
        return SHOWN_TYPES

    def emit(self, event: Event) -> None:
        line = self._narrator.line(event.to_dict())
        if line is None:
            return
        if self.board is not None and self.board._pinned is not None:
            self.board.log(line)  # a question stays pinned under the line
            return
        # One styled line needs none of rich's layout: writing it is about a tenth of
        # console.print's cost, and this runs on the event loop for every call.
        console = self.console
        console.file.write(ansi_line(line, console.color_system) + "\n")

    def flush(self) -> None:
        self.console.file.flush()

    def close(self) -> None:
        self.flush()
