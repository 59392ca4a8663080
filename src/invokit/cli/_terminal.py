"""Asking the person at the terminal to approve a call, without blocking the event loop.

The terminal is read in a daemon thread, so other calls keep running while a question waits.
Questions are asked one at a time; concurrent approvals queue, and the open question is pinned
under the live log (:class:`Board`): every log line is followed by the question again, so it
never scrolls away. If the wait is cancelled (the client cancelled the call or went away, or
Ctrl-C) the question is withdrawn and nothing is approved here.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from invokit.cli._diff import change_diff
from invokit.cli._keyboard import KeyReader, LineReader, drop_typeahead
from invokit.cli._livelog import printable

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest


class Board:
    """The bottom of the terminal: log lines above, the open question pinned below them.

    Everything printed while a question is open goes through :meth:`log`, which prints the
    line and then the question again, so the question is always the last thing on screen.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pinned: Callable[[], Text] | None = None

    def log(self, line: RenderableType) -> None:
        """Print ``line``; then the open question again, if there is one."""
        self.console.print(line)
        if self._pinned is not None:
            self._show()

    def pin(self, question: Callable[[], Text]) -> None:
        """Show ``question`` now and after every log line until :meth:`unpin`."""
        self._pinned = question
        self._show()

    def unpin(self) -> None:
        self._pinned = None

    def _show(self) -> None:
        assert self._pinned is not None
        self.console.print(self._pinned())
        with contextlib.suppress(Exception):  # a console on a closed file: nothing to flush
            self.console.file.flush()


def _one_line(text: str, limit: int = 300) -> str:
    """A model's text as one bounded row: newlines and tabs shown escaped, so it cannot draw
    rows of its own inside the panel."""
    flat = printable(text).replace("\n", "\\n").replace("\t", "\\t")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def always_rules(request: ApprovalRequest) -> list[str]:
    """The standing rules an "always" answer records: exactly what the call touches."""
    from invokit.permissions import rule_for

    return [rule_for(request.tool, r) for r in request.requests] or [rule_for(request.tool)]


def request_panel(
    request: ApprovalRequest,
    *,
    root: Path | None = None,
    diff: Text | None = None,
    keys: str | None = None,
) -> Panel:
    """What the person sees: the tool, why it asks, what it touches, the exact arguments, the
    change it makes (a diff, for an edit or an overwrite) and what "always" would allow."""
    from invokit.permissions import request_to_dict

    rows = Text()
    rows.append("id        ", style="dim")
    rows.append(printable(request.id) + "\n", style="bold")
    rows.append("tool      ", style="dim")
    rows.append(_one_line(request.tool) + "\n", style="bold")
    rows.append("why       ", style="dim")
    rows.append(_one_line(request.reason or "the policy asks") + "\n")
    for permission in request.requests:
        described = request_to_dict(permission)
        kind = described.pop("type", permission.kind)
        rows.append("touches   ", style="dim")
        rows.append(_one_line(f"{kind} {permission.target()}") + "\n")
    rows.append("always    ", style="dim")
    where = f"in this project ({root})" if root is not None else "in this project"
    rows.append(_one_line(f"this rule {where}: {', '.join(always_rules(request))}"))
    # ASCII-only JSON: every control character in a model's arguments is shown escaped.
    shown = json.dumps(request.arguments, indent=2, sort_keys=True, ensure_ascii=True)
    parts: list[RenderableType] = [
        rows,
        Text("arguments", style="dim"),
        Syntax(shown, "json", word_wrap=True, theme="ansi_dark"),
    ]
    if diff is not None:
        parts += [Text("change", style="dim"), diff]
    if keys is not None:
        answer = Text("answer    ", style="dim")
        answer.append(keys, style="bold")
        parts.append(answer)
    title = Text("approval needed ", style="bold yellow")
    title.append(printable(request.id), style="yellow")
    return Panel(Group(*parts), title=title, title_align="left", border_style="yellow")


class TerminalApprover:
    """An executor ``approver`` that asks at the terminal: once, session, always, or deny.

    One question is open at a time; the others queue, and the open one says how many wait.
    Each answer applies to the question on screen, which names its approval id. Answers:
    ``y`` once, ``s`` for the session, ``a`` always (the exact rule and project are shown),
    ``n`` deny (``n REASON`` says why; the model reads it).

    Args:
        console: where the question is shown.
        reader: where answers come from (default: stdin, read in a daemon thread).
        by: recorded as who decided.
        board: the pinned bottom of the terminal, shared with the live log.
        root: the served root: the project "always" applies to, and where diffs are read.
    """

    def __init__(
        self,
        console: Console,
        *,
        reader: LineReader | None = None,
        by: str = "terminal",
        board: Board | None = None,
        root: Path | None = None,
    ) -> None:
        self.console = console
        self.reader = reader or LineReader()
        self.by = by
        self.board = board or Board(console)
        self.root = root
        self._lock = anyio.Lock()
        self._queued = 0

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self._queued += 1
        asking = False
        try:
            async with self._lock:
                self._queued -= 1
                asking = True
                return await self._question(request)
        except anyio.get_cancelled_exc_class():
            if not asking:
                self._queued -= 1
            self.board.unpin()
            self.board.log(
                Text(
                    f"withdrawn: the caller went away (or the question expired); "
                    f"{printable(request.id)} ({_one_line(request.tool)}) will not run from it",
                    style="yellow",
                )
            )
            raise

    async def _question(self, request: ApprovalRequest) -> ApprovalDecision:
        from invokit.approvals import ApprovalDecision

        diff = change_diff(request, self.root) if self.root is not None else None
        session = request.session_id is not None
        keys = ["y once"] + (["s session"] if session else []) + ["a always", "n deny"]
        choices = " · ".join(keys)
        letters = "/".join(k[0] for k in keys)
        how = (
            "press a key (after n, type a reason for the model, then Enter)"
            if isinstance(self.reader, KeyReader)
            else "then Enter (n REASON tells the model why)"
        )
        self.console.print(
            request_panel(request, root=self.root, diff=diff, keys=f"{choices}  {how}")
        )
        try:
            while True:
                answer = await self._ask(lambda: self._prompt(request, letters))
                if answer is None:
                    return ApprovalDecision.deny(
                        "nobody can answer at the terminal (input closed)",
                        by=self.by,
                        channel="terminal",
                    )
                word, _, rest = answer.strip().partition(" ")
                word = word.lower()
                if word in ("y", "yes", "o", "once"):
                    return self._said(ApprovalDecision.approve("once", by=self.by), request)
                if session and word in ("s", "session"):
                    return self._said(ApprovalDecision.approve("session", by=self.by), request)
                if word in ("a", "always"):
                    return self._said(ApprovalDecision.approve("always", by=self.by), request)
                if word in ("n", "no", "d", "deny"):
                    reason = rest.strip()
                    if not reason:
                        reason = (await self._reason(request) or "").strip()
                    return self._said(
                        ApprovalDecision.deny(reason or "denied at the terminal", by=self.by),
                        request,
                    )
                self.board.log(Text(f"Please answer with one of: {choices}", "yellow"))
        finally:
            self.board.unpin()

    def _prompt(self, request: ApprovalRequest, letters: str) -> Text:
        """The pinned line: which call (its approval id), how many more wait, the keys."""
        text = Text("? ", style="bold yellow")
        text.append(f"{request.id} ", style="bold")
        text.append(_one_line(request.tool, 60), style="bold")
        if request.requests:
            text.append(" " + _one_line(request.requests[0].target(), 60))
        if self._queued:
            text.append(f" ({self._queued} more waiting)", style="yellow")
        text.append(f" {letters}: ", style="bold")
        return text

    def _said(self, decision: ApprovalDecision, request: ApprovalRequest) -> ApprovalDecision:
        from dataclasses import replace

        word = f"approved ({decision.scope})" if decision.approved else "denied"
        self.board.unpin()
        self.console.print(Text(f"→ {word}: {request.id} {_one_line(request.tool)}", style="dim"))
        return replace(decision, channel="terminal")

    async def _reason(self, request: ApprovalRequest) -> str | None:
        prompt = Text(
            f"Reason for denying {request.id} (Enter for none; the model reads it): ",
            style="bold",
        )
        if isinstance(self.reader, KeyReader):
            # Typed right after "n": nothing here is typeahead for another question.
            self.board.pin(lambda: prompt)
            return await self.reader.read_line(self.console)
        return await self._ask(lambda: prompt)

    async def _ask(self, question: Callable[[], Text]) -> str | None:
        drop_typeahead()
        self.board.pin(question)
        return await self.reader.read(not_before=time.monotonic())
