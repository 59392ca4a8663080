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

    A read that was waited for and then abandoned (its waiter cancelled) is not lost: the
    next :meth:`read` takes its line. A daemon thread never keeps the process alive.
    """

    def __init__(self, readline: Callable[[], str] | None = None) -> None:
        self._readline = readline or (lambda: sys.stdin.readline())
        self._pending: tuple[anyio.Event, list[str]] | None = None

    async def read(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        if self._pending is None:
            done = anyio.Event()
            box: list[str] = []
            token = anyio.lowlevel.current_token()

            def work() -> None:
                try:
                    box.append(self._readline())
                except Exception:  # a closed or broken terminal is the end of input
                    box.append("")
                # The event loop may have ended while we read: then nobody waits.
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(done.set, token=token)

            self._pending = (done, box)
            threading.Thread(target=work, name="invokit-terminal", daemon=True).start()
        done, box = self._pending
        await done.wait()
        self._pending = None
        line = box[0]
        return None if line == "" else line.rstrip("\r\n")


def request_panel(request: ApprovalRequest) -> Panel:
    """What the person sees: the tool, why it asks, what it touches, the exact arguments."""
    from invokit.permissions import request_to_dict

    rows = Text()
    rows.append("tool      ", style="dim")
    rows.append(request.tool + "\n", style="bold")
    rows.append("why       ", style="dim")
    rows.append(printable(request.reason or "the policy asks") + "\n")
    for permission in request.requests:
        described = request_to_dict(permission)
        kind = described.pop("type", permission.kind)
        rows.append("touches   ", style="dim")
        rows.append(printable(f"{kind} {permission.target()}") + "\n")
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
        self.console.print(Text(prompt, style="bold"), end="")
        self.console.file.flush()
        return await self.reader.read()
