"""Asking the person at the terminal to approve a call, without blocking the event loop.

The terminal is read in a daemon thread, so other calls keep running while a question waits.
Questions are asked one at a time; concurrent approvals queue. If the wait is cancelled
(Ctrl-C, or the client cancelled the call) nothing is decided: the request stays pending in
the store, where ``invokit approvals`` can still resolve it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.lowlevel
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from invokit.cli._livelog import printable

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest


class LineReader:
    """Reads lines from a blocking ``readline`` in a daemon thread, one read at a time.

    Every line keeps the time it was finished. A reader asked for a line typed after a given
    moment throws older lines away: a line typed ahead, or typed for a question that was
    withdrawn (its call cancelled), never answers the next question. A daemon thread never
    keeps the process alive.
    """

    def __init__(self, readline: Callable[[], str] | None = None) -> None:
        self._readline = readline or (lambda: sys.stdin.readline())
        self._pending: tuple[anyio.Event, list[tuple[str, float]]] | None = None

    async def read(self, not_before: float | None = None) -> str | None:
        """The next line finished at or after ``not_before`` (``time.monotonic()``), without its
        newline; ``None`` at end of input."""
        while True:
            if self._pending is None:
                done = anyio.Event()
                box: list[tuple[str, float]] = []
                token = anyio.lowlevel.current_token()

                def work(
                    box: list[tuple[str, float]] = box,
                    done: anyio.Event = done,
                    token: anyio.lowlevel.EventLoopToken = token,
                ) -> None:
                    try:
                        line = self._readline()
                    except Exception:  # a closed or broken terminal is the end of input
                        line = ""
                    box.append((line, time.monotonic()))
                    # The event loop may have ended while we read: then nobody waits.
                    with contextlib.suppress(Exception):
                        anyio.from_thread.run_sync(done.set, token=token)

                self._pending = (done, box)
                threading.Thread(target=work, name="invokit-terminal", daemon=True).start()
            done, box = self._pending
            await done.wait()
            self._pending = None
            line, finished = box[0]
            if line == "":
                return None
            if not_before is None or finished >= not_before:
                return line.rstrip("\r\n")
            # Typed before the question was on screen: not an answer to it.


def _one_line(text: str, limit: int = 300) -> str:
    """A model's text as one bounded row: newlines and tabs shown escaped, so it cannot draw
    rows of its own inside the panel."""
    flat = printable(text).replace("\n", "\\n").replace("\t", "\\t")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def request_panel(request: ApprovalRequest) -> Panel:
    """What the person sees: the tool, why it asks, what it touches, the exact arguments."""
    from invokit.permissions import request_to_dict

    rows = Text()
    rows.append("tool      ", style="dim")
    rows.append(request.tool + "\n", style="bold")
    rows.append("why       ", style="dim")
    rows.append(_one_line(request.reason or "the policy asks") + "\n")
    for permission in request.requests:
        described = request_to_dict(permission)
        kind = described.pop("type", permission.kind)
        rows.append("touches   ", style="dim")
        rows.append(_one_line(f"{kind} {permission.target()}") + "\n")
    rows.append("id        ", style="dim")
    rows.append(request.id)
    # ASCII-only JSON: every control character in a model's arguments is shown escaped.
    shown = json.dumps(request.arguments, indent=2, sort_keys=True, ensure_ascii=True)
    arguments = Syntax(shown, "json", word_wrap=True, theme="ansi_dark")
    return Panel(
        Group(rows, Text("arguments", style="dim"), arguments),
        title="[bold yellow]approval needed",
        title_align="left",
        border_style="yellow",
    )


class TerminalApprover:
    """An executor ``approver`` that asks at the terminal: once, for the session, or deny.

    Args:
        console: where the question is shown.
        reader: where answers come from (default: stdin, read in a daemon thread).
        by: recorded as who decided.
    """

    def __init__(
        self, console: Console, *, reader: LineReader | None = None, by: str = "terminal"
    ) -> None:
        self.console = console
        self.reader = reader or LineReader()
        self.by = by
        self._lock = anyio.Lock()

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        from invokit.approvals import ApprovalDecision

        async with self._lock:
            self.console.print(request_panel(request))
            session = request.session_id is not None
            choices = "[o]nce, for this [s]ession, or [d]eny" if session else "[o]nce or [d]eny"
            try:
                while True:
                    answer = await self._ask(f"Approve {request.tool}? {choices}: ")
                    if answer is None:
                        return ApprovalDecision.deny(
                            "nobody can answer at the terminal (input closed)", by=self.by
                        )
                    answer = answer.strip().lower()
                    if answer in ("o", "once", "y", "yes", "a", "approve"):
                        return ApprovalDecision.approve("once", by=self.by)
                    if session and answer in ("s", "session"):
                        return ApprovalDecision.approve("session", by=self.by)
                    if answer in ("d", "deny", "n", "no"):
                        reason = await self._ask("Reason (the model reads it): ")
                        return ApprovalDecision.deny(
                            (reason or "").strip() or "denied at the terminal", by=self.by
                        )
                    self.console.print(Text(f"Please answer with one of: {choices}", "yellow"))
            except anyio.get_cancelled_exc_class():
                self.console.print(
                    Text(
                        f"\nNot answered: {request.id} stays pending "
                        f"(invokit approvals approve {request.id})",
                        style="yellow",
                    )
                )
                raise

    async def _ask(self, prompt: str) -> str | None:
        _drop_typeahead()
        self.console.print(Text(prompt, style="bold"), end="")
        self.console.file.flush()
        return await self.reader.read(not_before=time.monotonic())


def _drop_typeahead() -> None:
    """Throw away what was typed at the terminal before the question appeared."""
    try:
        import termios

        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass  # not a terminal (tests, pipes): the time check in LineReader still applies
