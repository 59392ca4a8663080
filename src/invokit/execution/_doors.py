"""The doors of the executor's parts: what each part may read of the executor that wires it.

Each part is typed against the small protocol below that names what it uses, never against
``Executor``: reading a part's signature tells what it can touch, ``mypy`` holds it to that,
and no part imports the executor back (``execution/`` has no import circle). ``Executor`` is
the one implementation of every door; it wires the parts in the order of docs/executor.md:

* lookup and validation (``_executor``, ``_prepared``): no door, it is the executor's own;
* the store in this project — :class:`InProject` (``earlier``, ``waiting_child``);
* the decision — :class:`Standing` (``_snapshot``, ``_standing``), :class:`Deciding`
  (``_deciding``), :class:`Checking` (``_checking``, ``explain``);
* approvals — :class:`Answering` (``_answers``), :class:`Holding` (an interrupt kept in the
  store), :class:`Asking` (``_approving``, ``_resuming``), :class:`Standing` again for
  ``_scopes`` (a wider approval's grant or rules), :class:`Guarding` (``_guarding``, acting
  on the verdict);
* running — :class:`Counting` (``_quotas``), :class:`Hooking` (``_hooks``), :class:`Running`
  (``_running``), :class:`Continuing` (``_children``), :class:`Batching` (``_batch``);
* recording — :class:`Recording` (``_reporting.Reporter`` implements it).

A part hands a call on to the next step through a callable its door declares (``_run``,
``_guarded``, ``_rewritten``, ``_hold``), never by reaching for the executor.
``tests/execution/test_doors.py`` keeps each door as narrow as it is here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from invokit._calls import ToolCall
    from invokit.approvals import ApprovalDecision, ApprovalRequest, ApprovalStore, StandingRule
    from invokit.execution._artifacts import SpillStore
    from invokit.execution._authority import Authority
    from invokit.execution._events import EventSink, EventType
    from invokit.execution._invoke import Deadlines
    from invokit.execution._limits import Limits
    from invokit.execution._outcomes import Failed, Interrupt, Interrupted, Outcome
    from invokit.execution._prepared import Prepared
    from invokit.execution._recording import Record
    from invokit.execution._same_call import SameCall
    from invokit.permissions import Decision, PermissionChecker, Policy
    from invokit.tools import Tool, ToolContext
    from invokit.tools.internal import ProgressCallback


class Recording(Protocol):
    """Recording: hand the sinks an event, and report an outcome as it is returned."""

    _sinks_for: dict[str, Callable[[Record], None]]
    """Which event types some sink wants, and how to hand it one record."""

    def _emit(self, kind: EventType, call: ToolCall, data: dict[str, Any]) -> None: ...

    def _failed(
        self, call: ToolCall, start: float, kind: str, message: str, *, data: Any = None
    ) -> Failed: ...

    def _interrupted(self, interrupt: Interrupt) -> Interrupted: ...


class Lookup(Protocol):
    """Lookup: a tool's plan by name, and what a call of an unknown one reads."""

    resources: Mapping[str, Any] | None
    """The shared objects every tool's context carries."""

    def _lookup(self, name: str) -> Prepared | None: ...

    def _not_found(self, call: ToolCall) -> str: ...


class InProject(Protocol):
    """The approval store, and the project whose records this executor reads and writes."""

    approvals: ApprovalStore
    project: str


class Standing(InProject, Protocol):
    """The decision's reads: the rules in force, the host checkers, and the store's earlier
    answers, "always" rules and session grants of this project."""

    _policy: Policy
    _checkers: tuple[PermissionChecker, ...]
    _always: tuple[StandingRule, ...]
    """This project's "always" rules as last read from the store (``_standing``)."""
    _grants: dict[str, Authority]
    """The session grants this executor recorded, by grant id: who gave them and when."""


class Deciding(Standing, Recording, Protocol):
    """The decision step: its reads, and the ``decided`` event and refusals it reports."""


class Checking(Standing, Lookup, Protocol):
    """``check`` and ``explain``: lookup and the decision's reads; nothing is reported."""


class Answering(InProject, Recording, Protocol):
    """Answers the executor records itself (a withdrawal) and the audit record of an answer."""

    policy: Policy


class Holding(Recording, Protocol):
    """An authorization or host-run interrupt kept in the store until it is resumed."""

    approvals: ApprovalStore
    limits: Limits
    _interrupts: dict[str, Interrupt]


class Asking(Deciding, Answering, Holding, Lookup, Protocol):
    """Approvals: ask (the inline approver or an interrupt), wait, withdraw, resume; a
    resumed call is decided again and handed on to ``_run`` (or ``_guarded``)."""

    approver: Callable[[ApprovalRequest], Awaitable[ApprovalDecision | bool]] | None
    sinks: tuple[EventSink, ...]
    """For tracing: the asking span a resumed call links to."""

    def _progress(
        self, call: ToolCall, downstream: ProgressCallback | None
    ) -> ProgressCallback | None: ...

    async def _run(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext | None,
        start: float,
        *,
        approved: ApprovalRequest | None,
        decision: Decision | None,
        rewritten: bool = False,
        authority: Authority | None = None,
    ) -> Outcome: ...

    async def _guarded(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext,
        start: float,
        *,
        approved: ApprovalRequest | None,
    ) -> Outcome: ...


class Guarding(Asking, Protocol):
    """Acting on a verdict: run, refuse, run under a standing answer, or ask."""

    _same_call: SameCall
    """Executions of one call take turns."""

    def _asked_never(self, call: ToolCall) -> bool: ...


class Counting(InProject, Recording, Protocol):
    """Quotas: counted in the store, per project, by the policy's quota rules."""

    policy: Policy


class Hooking(Recording, Protocol):
    """The ``before_call`` hooks; arguments they rewrite go back to the decision
    (``_rewritten``) and from there to ``_run``."""

    _before: tuple[Any, ...]

    async def _rewritten(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext,
        start: float,
        approved: ApprovalRequest | None,
    ) -> Outcome: ...


class Running(Hooking, Counting, Protocol):
    """Running a decided call: hooks, quotas, invoke under its deadline, normalize, the
    output limit, ``after_call`` hooks and the ``started``/``completed`` records."""

    resources: Mapping[str, Any] | None
    artifacts: SpillStore
    _after: tuple[Any, ...]
    _deadlines: Deadlines
    _set_up: dict[int, Tool]
    _on_started: Callable[[Record], None] | None
    _on_completed: Callable[[Record], None] | None

    def _cancelled(self, call: ToolCall, args: dict[str, Any], ctx: ToolContext | None) -> None: ...

    async def _hold(self, outcome: Interrupted) -> Outcome: ...


class Continuing(InProject, Lookup, Recording, Protocol):
    """A paused parent tool going on after its child's approval was resumed."""

    async def _run(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext | None,
        start: float,
        *,
        approved: ApprovalRequest | None,
        decision: Decision | None,
        rewritten: bool = False,
        authority: Authority | None = None,
    ) -> Outcome: ...


class Batching(Protocol):
    """``execute_many`` and ``stream``: whole calls, through ``execute``."""

    async def execute(
        self, call: ToolCall, *, on_progress: ProgressCallback | None = None
    ) -> Outcome: ...

    def concurrency_of(self, call: ToolCall) -> str: ...
