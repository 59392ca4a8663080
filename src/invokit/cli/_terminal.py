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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from invokit._inert import printable
from invokit.cli._diff import change_diff
from invokit.cli._keyboard import KeyReader, LineReader, drop_typeahead
from invokit.cli._livelog import touches

if TYPE_CHECKING:
    from invokit._spec import ToolSpec
    from invokit.approvals import ApprovalDecision, ApprovalRequest
    from invokit.registry import Registry

GRACE = 1.0
"""Seconds keys are ignored after the question on screen changed because one was withdrawn."""

GUARD = 0.5
"""Seconds keys are ignored after a prompt that takes an answer is drawn: a key already on its
way (typed for what was on screen before) never answers it."""


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
    flat = printable(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _exact(text: str) -> str:
    """A rule in full (never cut), with control characters and newlines shown escaped."""
    return printable(text)


def request_panel(
    request: ApprovalRequest,
    *,
    root: Path | None = None,
    diff: Text | None = None,
    keys: str | None = None,
    always: Sequence[str] | None = None,
) -> Panel:
    """What the person sees: the tool, why it asks, what it touches, the exact arguments, the
    change it makes (a diff, for an edit or an overwrite) and what "always" would record.

    ``always`` is what an "always" answer records
    (:func:`invokit.approvals.always_rule_preview`), shown in full with the project it applies
    to; ``None`` says "always" is not offered for this call.
    """
    rows = Text()
    rows.append("id        ", style="dim")
    rows.append(printable(request.id) + "\n", style="bold")
    rows.append("tool      ", style="dim")
    rows.append(_one_line(request.tool) + "\n", style="bold")
    rows.append("why       ", style="dim")
    rows.append(_one_line(request.reason or "the policy asks") + "\n")
    if request.protected is not None:
        rows.append("runs it   ", style="dim")
        rows.append(_one_line(request.protected) + "\n", style="bold red")
    for permission in request.requests:
        rows.append("touches   ", style="dim")
        rows.append(touches(permission) + "\n")  # in full, never cut
    rows.append("always    ", style="dim")
    if request.protected is not None:  # whatever a caller passes: never for a surface
        rows.append("not offered: an execution surface is asked about each time", style="dim")
    elif always:
        project = request.project if request.project is not None else root
        where = f"in project {project}" if project is not None else "in this project"
        rows.append(_exact(f"records {' and '.join(always)} {where}"))
    else:
        rows.append(
            "not offered: no standing rule can name exactly this call (approve it once)",
            style="dim",
        )
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
    ``n`` deny (then a reason for the model; in line mode ``n REASON``).

    Keys are bound to their question:

    * a prompt takes keys only ``guard`` seconds after it was drawn (``grace`` seconds after a
      withdrawal changed the question on screen); until then it shows no keys and says when
      they open, and what was typed before is thrown away;
    * ``s`` and ``a`` reach further than this call, so each takes a second step: a line that
      names what it covers ("grant fs.write for the rest of this session?") confirmed with
      ``y`` (after its own guard); any other key goes back to the question;
    * a reason belongs to its question: when the question goes away while the reason is being
      typed, the rest of that line, up to Enter, is read off and thrown away before the next
      question is drawn, never read as an answer;
    * a question about an execution surface (``ApprovalRequest.protected``) shows what runs
      the path as a warning and takes only ``y`` or ``n``.

    "Always" is offered only when the tool's definition is found in ``registry`` with the
    fingerprint the approval was asked for, and :func:`invokit.approvals.always_rule_preview`
    gives a rule for the call: the panel shows exactly that rule and its project. Otherwise
    ``a`` is not among the keys and is refused.

    Args:
        console: where the question is shown.
        reader: where answers come from (default: stdin, read in a daemon thread).
        by: recorded as who decided.
        board: the pinned bottom of the terminal, shared with the live log.
        root: the served root: the project "always" applies to, and where diffs are read.
        registry: where the tools' definitions are looked up (the executor's ``registry``;
            it may be set after construction). Without it, "always" is never offered.
        grace: seconds input is ignored after a withdrawal changed the question on screen.
        guard: seconds input is ignored after a prompt that takes an answer is drawn.
    """

    def __init__(
        self,
        console: Console,
        *,
        reader: LineReader | None = None,
        by: str = "terminal",
        board: Board | None = None,
        root: Path | None = None,
        registry: Registry | None = None,
        grace: float = GRACE,
        guard: float = GUARD,
    ) -> None:
        self.console = console
        self.reader = reader or LineReader()
        self.by = by
        self.board = board or Board(console)
        self.root = root
        self.registry = registry
        self.grace = grace
        self.guard = guard
        self._lock = anyio.Lock()
        self._queued = 0
        self._withdrawn_at: float | None = None
        self._ready_at = 0.0
        self._typing_reason = False
        # The id of a withdrawn question whose reason was being typed: the rest of that line
        # is read off before anything else is asked.
        self._unfinished: str | None = None

    def spec_of(self, request: ApprovalRequest) -> ToolSpec | None:
        """The definition of the tool ``request`` was asked for: found by name in
        :attr:`registry` and only if its fingerprint is the one asked about; else ``None``."""
        if self.registry is None:
            return None
        try:
            found = self.registry.get(request.tool)
            spec = found.current_spec() if found is not None else None
        except Exception:  # a registry that cannot answer: nothing to show a rule for
            return None
        if spec is None or spec.fingerprint != request.spec_fingerprint:
            return None
        return spec

    def always_preview(self, request: ApprovalRequest) -> list[str] | None:
        """The rules "always" would record for ``request`` (exactly those the executor
        records), or ``None``: then "always" is not offered (never for a protected call)."""
        from invokit.approvals import always_rule_preview

        spec = self.spec_of(request)
        if spec is None or request.protected is not None:
            return None
        try:
            return always_rule_preview(spec, request)
        except Exception:  # an argument the preview cannot read: no standing rule
            return None

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self._queued += 1
        asking = False
        try:
            async with self._lock:
                self._queued -= 1
                asking = True
                if self._unfinished is not None:
                    await self._finish_withdrawn_reason()
                return await self._question(request)
        except anyio.get_cancelled_exc_class():
            if not asking:
                self._queued -= 1
            else:
                # The question on screen goes away: the next one must not take its keys.
                self._withdrawn_at = time.monotonic()
                if self._typing_reason:
                    self._unfinished = request.id
            self.board.unpin()
            note = (
                "; the reason being typed for it is thrown away (finish it with Enter)"
                if self._unfinished == request.id
                else ""
            )
            self.board.log(
                Text(
                    f"withdrawn: the caller went away (or the question expired); "
                    f"{printable(request.id)} ({_one_line(request.tool)}) will not run from it"
                    + note,
                    style="yellow",
                )
            )
            raise
        finally:
            if asking:
                self._typing_reason = False

    async def _finish_withdrawn_reason(self) -> None:
        """Read off, and throw away, the rest of a reason whose question was withdrawn."""
        gone = printable(self._unfinished or "")
        self.board.pin(
            lambda: Text(
                f"… the reason for {gone} (withdrawn) is thrown away: finish it with Enter, "
                "then the next question is shown",
                style="bold yellow",
            )
        )
        try:
            await self.reader.discard_line()
        finally:
            self.board.unpin()
        self._unfinished = None

    async def _question(self, request: ApprovalRequest) -> ApprovalDecision:
        from invokit.approvals import ApprovalDecision

        diff = change_diff(request, self.root) if self.root is not None else None
        always = self.always_preview(request) or None  # no rule: no "always"
        session = request.session_id is not None and request.protected is None
        keys = (
            ["y once"]
            + (["s session"] if session else [])
            + (["a always"] if always is not None else [])
            + ["n deny"]
        )
        choices = " · ".join(keys)
        letters = "/".join(k[0] for k in keys)
        how = (
            "press a key once the keys show on the prompt; s and a ask to confirm; "
            "after n, type a reason for the model, then Enter"
            if isinstance(self.reader, KeyReader)
            else "then Enter, once the keys show on the prompt; s and a ask to confirm "
            "(n REASON tells the model why)"
        )
        self.console.print(
            request_panel(
                request, root=self.root, diff=diff, keys=f"{choices}  {how}", always=always
            )
        )
        try:
            while True:
                answer = await self._ask(self._prompt(request, letters))
                if answer is None:
                    return self._closed()
                word, _, rest = answer.strip().partition(" ")
                word = word.lower()
                if word in ("y", "yes", "o", "once"):
                    return self._said(ApprovalDecision.approve("once", by=self.by), request)
                if session and word in ("s", "session"):
                    what = (
                        f"grant {_one_line(request.tool, 60)} (this version) for the rest of "
                        f"session {_one_line(request.session_id or '', 40)}"
                    )
                    confirmed = await self._confirm(request, what)
                    if confirmed is None:
                        return self._closed()
                    if confirmed:
                        return self._said(ApprovalDecision.approve("session", by=self.by), request)
                    continue
                if always is not None and word in ("a", "always"):
                    project = request.project if request.project is not None else self.root
                    where = f"in project {project}" if project is not None else "here"
                    what = _exact(f"record {' and '.join(always)} {where}, until revoked")
                    confirmed = await self._confirm(request, what)
                    if confirmed is None:
                        return self._closed()
                    if confirmed:
                        return self._said(ApprovalDecision.approve("always", by=self.by), request)
                    continue
                if word in ("n", "no", "d", "deny"):
                    reason = rest.strip()
                    if not reason:
                        self._typing_reason = True
                        reason = (await self._reason(request) or "").strip()
                        self._typing_reason = False
                    return self._said(
                        ApprovalDecision.deny(reason or "denied at the terminal", by=self.by),
                        request,
                    )
                self.board.log(Text(f"Please answer with one of: {choices}", "yellow"))
        finally:
            self.board.unpin()

    def _closed(self) -> ApprovalDecision:
        from invokit.approvals import ApprovalDecision

        return ApprovalDecision.deny(
            "nobody can answer at the terminal (input closed)", by=self.by, channel="terminal"
        )

    async def _confirm(self, request: ApprovalRequest, what: str) -> bool | None:
        """The second step of a wider answer: ``what`` it covers, confirmed with ``y``;
        ``None`` at end of input."""

        def line(ready: bool) -> Text:
            text = Text("? ", style="bold yellow")
            text.append(f"{printable(request.id)} ", style="bold")
            text.append(what + "?", style="bold")
            text.append(" y confirms, any other key goes back: " if ready else " (wait)")
            return text

        answer = await self._ask(line)
        if answer is None:
            return None
        confirmed = answer.strip().lower() in ("y", "yes")
        self.board.unpin()  # this line is answered: a log line must not draw it again
        if not confirmed:
            self.board.log(Text(f"not confirmed: {printable(request.id)} is asked again", "dim"))
        return confirmed

    def _prompt(self, request: ApprovalRequest, letters: str) -> Callable[[bool], Text]:
        """The pinned line: which call (its approval id), how many more wait, and the keys
        once they are open (until then, when they open)."""

        def line(ready: bool) -> Text:
            text = Text("? ", style="bold yellow")
            text.append(f"{printable(request.id)} ", style="bold")
            text.append(_one_line(request.tool, 60), style="bold")
            if request.requests:
                text.append(" " + _one_line(request.requests[0].target(), 60))
            if request.protected is not None:
                text.append(" (protected)", style="bold red")
            if self._queued:
                text.append(f" ({self._queued} more waiting)", style="yellow")
            if ready:
                text.append(f" {letters}: ", style="bold")
                return text
            left = max(0.0, self._ready_at - time.monotonic())
            changed = "question changed: " if self._withdrawn_at is not None else ""
            text.append(f" ({changed}keys open in {left:.1f} s)", style="bold red")
            return text

        return line

    def _said(self, decision: ApprovalDecision, request: ApprovalRequest) -> ApprovalDecision:
        from dataclasses import replace

        word = f"approved ({decision.scope})" if decision.approved else "denied"
        self.board.unpin()
        self.console.print(Text(f"→ {word}: {request.id} {_one_line(request.tool)}", style="dim"))
        from invokit.permissions.internal import local_person

        # The person at this terminal is the user running it: approvers are matched to them.
        return replace(decision, channel="terminal", person=decision.person or local_person())

    async def _reason(self, request: ApprovalRequest) -> str | None:
        prompt = Text(
            f"Reason for denying {request.id} (Enter for none; the model reads it): ",
            style="bold",
        )
        if isinstance(self.reader, KeyReader):
            # Typed right after "n": nothing here is typeahead for another question. Drawn
            # again under a log line, the prompt shows the reason typed so far.
            typed: list[str] = []
            self.board.pin(lambda: prompt + Text(_one_line("".join(typed))))
            return await self.reader.read_line(self.console, typed)
        return await self._ask(lambda ready: prompt)

    async def _ask(self, question: Callable[[bool], Text]) -> str | None:
        """Pin ``question`` and read the answer typed for it: after it was drawn and its guard
        (``grace`` after a withdrawal changed the question on screen) passed. Until then the
        question shows no keys; what was typed before is thrown away."""
        drop_typeahead()
        now = time.monotonic()
        ready = now + self.guard
        if self._withdrawn_at is not None:
            ready = max(ready, self._withdrawn_at + self.grace)
        self._ready_at = ready
        if ready > now:
            self.board.pin(lambda: question(time.monotonic() >= self._ready_at))
            await anyio.sleep(ready - time.monotonic())
        self._withdrawn_at = None
        drop_typeahead()
        self.board.pin(lambda: question(True))
        return await self.reader.read(not_before=ready)
