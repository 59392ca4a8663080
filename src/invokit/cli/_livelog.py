"""The live log: one line per step that matters, as calls happen (and from the audit log).

A person watching ``invokit serve`` sees each call with its arguments and decision (allowed,
denied and why, waiting for approval), who approved it, and how it ended.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from invokit._inert import printable
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


def inert(text: object, style: str = "", *, keep_newlines: bool = False) -> Text:
    """``text`` as rich ``Text``: console markup (``[conceal]``) is not interpreted and control
    characters and newlines are shown escaped (:func:`invokit._inert.printable`). For anything
    a model, a tool or a server wrote."""
    return Text(printable(str(text), keep_newlines=keep_newlines), style=style)


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
    return printable(f"{verb} {target}")


class Line:
    """One line of the live log: pieces of inert text, each with a rich style.

    Printed through rich (``console.print(line)``, via :meth:`__rich__`) or written straight
    as ANSI (:meth:`ansi`): the live log runs on the event loop for every call, and building
    a rich ``Text`` and laying it out costs more than the rest of the line.
    """

    __slots__ = ("_parts",)

    def __init__(self, text: str = "", style: str = "") -> None:
        self._parts: list[tuple[str, str]] = [(text, style)] if text else []

    def append(self, text: str, style: str = "") -> Line:
        """Add ``text`` (already inert) in ``style``."""
        if text:
            self._parts.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self._parts)

    def text(self) -> Text:
        """The line as rich ``Text``."""
        line = Text()
        for text, style in self._parts:
            line.append(text, style=style or None)
        return line

    def __rich__(self) -> Text:
        return self.text()

    def ansi(self, color_system: str | None) -> str:
        """The line with its styles as ANSI codes (none without a ``color_system``), as
        ``Console.print`` writes a line that fits."""
        if color_system is None:
            return self.plain
        out: list[str] = []
        for text, style in self._parts:
            if style:
                before, after = _codes(style, color_system)
                out.append(before + text + after)
            else:
                out.append(text)
        return "".join(out)


_stamps: dict[int, str] = {}


def _stamp(when: float) -> Line:
    second = int(when)
    shown = _stamps.get(second)
    if shown is None:
        _stamps.clear()  # one second at a time: the cache never grows
        shown = _stamps[second] = time.strftime("%H:%M:%S", time.localtime(second)) + " "
    return Line(shown, "dim")


def describe(
    record: Mapping[str, Any], arguments: Any = None, decision: Mapping[str, Any] | None = None
) -> Line | None:
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

    def line(self, record: Mapping[str, Any]) -> Line | None:
        shown = self._line(record)
        caller = self._callers.get(str(record.get("call_id")))
        if shown is not None and caller is not None:
            shown.append(printable(f"  by {caller}"), style="dim")
        if record.get("type") in ("completed", "failed"):
            self._callers.pop(str(record.get("call_id")), None)
        return shown

    def _line(self, record: Mapping[str, Any]) -> Line | None:
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
        console.file.write(line.ansi(console.color_system) + "\n")

    def flush(self) -> None:
        self.console.file.flush()

    def close(self) -> None:
        self.flush()
