"""The executor: one guarded path from a model's tool call to a result.

lookup → validate → preflight → policy → approval → hooks → invoke → limit → normalize.
Nothing with a side effect happens before the call was looked up, validated, decided and,
where asked, approved. Every failure becomes a result the model can read.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from time import perf_counter, time
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.exceptions import ArgumentsError
from invokit.execution import _approving, _resuming, _standing
from invokit.execution._artifacts import SpillStore
from invokit.execution._authority import Authority
from invokit.execution._bindings import Bindings
from invokit.execution._children import PARENT, continue_parent
from invokit.execution._events import EventSink
from invokit.execution._guarding import guarded, rewritten
from invokit.execution._invoke import Deadlines
from invokit.execution._limits import ArtifactStore, Limits, may_spill
from invokit.execution._outcomes import Failed, Interrupt, Outcome
from invokit.execution._prepared import Prepared, prepare
from invokit.execution._records import (
    argument_issues,
    decision_data,
    not_found_message,
    received_data,
    shown,
    validated_data,
)
from invokit.execution._reporting import Reporter
from invokit.execution._resuming import answer_of, hold, interrupt_id
from invokit.execution._running import run
from invokit.execution._same_call import SameCall
from invokit.execution._state_location import check_state_location
from invokit.registry import Registry, ToolRegistry
from invokit.tools import Progress, Tool, ToolContext
from invokit.tools.internal import ProgressCallback

if TYPE_CHECKING:
    from invokit.approvals import (
        ApprovalDecision,
        ApprovalRequest,
        ApprovalScope,
        ApprovalStore,
        StandingRule,
    )
    from invokit.execution._checking import CallCheck
    from invokit.permissions import PermissionChecker, Person, Policy

Approver = Callable[["ApprovalRequest"], Awaitable["ApprovalDecision | bool"]]
"""Decides an approval request inline: an ``ApprovalDecision``, or ``True`` (approve once) /
``False`` (deny)."""


class Executor(Bindings, Reporter):
    """Runs tool calls through the guarded pipeline.

    Args:
        registry: the tools (a registry, or an iterable of tools).
        policy: decides allow / deny / ask; default: read-only tools allowed, others ask.
        approvals: where approval requests live; default: in memory (use
            ``SqliteApprovalStore`` to resume in another process).
        approver: called for each ``ask`` to decide inline; without one, ``execute``
            returns ``Interrupted(ApprovalRequired(...))``.
        hooks: objects with optional ``before_call`` / ``after_call`` coroutines.
        limits: timeout, output limit and concurrency defaults.
        events: sinks that receive an event for every step (audit logs, tracing).
        resources: shared objects handed to every tool in ``ctx.resources``.
        artifacts: where spilled outputs are kept for ``tool_result_read``.
        project: the project "approve always" rules are recorded for and read from (rules of
            another project never apply); default: the policy's root, else the current directory.
        commit_on_return: with a group-commit audit sink, every outcome is returned only once
            its call's records are written (the default). ``False`` returns at once and leaves
            that wait to the caller, who awaits :meth:`commit` before telling anyone of a
            result (``invokit serve`` does, before each answer): calls pay no write on their
            path, and the records of results nobody was told of may be lost to a crash.
        checkers: host code that takes part in every decision
            (:class:`~invokit.permissions.PermissionChecker`): each answers allow, deny or ask
            for a call and its permission requests, combined with the policy's answer by the
            same rules (a deny wins; an ask beats an allow).

    Raises:
        ValueError: the approval store's or an audit sink's file lies inside a folder that
            one of the tools may write (``Tool.writable_roots``).
    """

    def __init__(
        self,
        registry: Registry | Iterable[Tool],
        *,
        policy: Policy | None = None,
        approvals: ApprovalStore | None = None,
        approver: Approver | None = None,
        hooks: Sequence[object] = (),
        limits: Limits | None = None,
        events: Sequence[EventSink] = (),
        resources: Mapping[str, Any] | None = None,
        artifacts: SpillStore | None = None,
        project: str | None = None,
        commit_on_return: bool = True,
        checkers: Sequence[PermissionChecker] = (),
    ) -> None:
        from invokit.permissions import Policy

        base = registry if isinstance(registry, Registry) else ToolRegistry(registry)
        self.limits = limits or Limits()
        self.artifacts: SpillStore = artifacts or ArtifactStore()
        self._prepared: dict[str, Prepared] = {}
        self.registry = base
        if may_spill(self.limits, base) and self.artifacts.reader().name not in base:
            # A page, envelope included, within the executor's own limit: never cut again.
            page = min(20_000, self.limits.output.max_chars)
            self.registry = base.merged([self.artifacts.reader(page)])
        self._policy: Policy = policy if policy is not None else Policy()
        if approvals is None:
            from invokit.approvals import MemoryApprovalStore

            approvals = MemoryApprovalStore()
        check_state_location(self.registry, approvals, events)
        self.approvals = approvals
        self.approver = approver
        self.hooks = tuple(hooks) + _traced(self.registry, events)
        self._before: tuple[Any, ...] = tuple(h for h in self.hooks if hasattr(h, "before_call"))
        self._after: tuple[Any, ...] = tuple(h for h in self.hooks if hasattr(h, "after_call"))
        self._listen(events, commit_on_return=commit_on_return)
        self.resources = resources
        self.project = project if project is not None else _standing.default_project(self.policy)
        self._always: tuple[StandingRule, ...] = ()
        # The session grants this executor recorded, by grant id: who gave them and when.
        self._grants: dict[str, Authority] = {}
        self._checkers: tuple[PermissionChecker, ...] = tuple(checkers)
        self._same_call = SameCall()  # executions of one call take turns (_guarding)
        self._deadlines = Deadlines()
        self._set_up: dict[int, Tool] = {}
        """Every tool this executor set up, so :meth:`aclose` tears each down."""

    # -- lookup -----------------------------------------------------------------------

    def _prepare(self, name: str) -> Prepared | None:
        prepared = prepare(
            self.registry.get(name),
            self._policy,
            self.limits,
            hooked=bool(self._before or self._after),
            checked=bool(self._checkers),
        )
        if prepared is not None:
            self._prepared[name] = prepared
        return prepared

    def _lookup(self, name: str) -> Prepared | None:
        prepared = self._prepared.get(name)
        if prepared is None or prepared.tool.current_spec() is not prepared.spec:
            prepared = self._prepare(name)
        return prepared

    def _not_found(self, call: ToolCall) -> str:
        return not_found_message(call.name, [spec.name for spec in self.registry.specs()])

    # -- the pipeline -----------------------------------------------------------------

    async def execute(
        self, call: ToolCall, *, on_progress: ProgressCallback | None = None
    ) -> Outcome:
        """Run one call through every step; only a bug in invokit raises. With a group-commit
        audit sink the outcome is returned once the call's records are written, unless the
        executor leaves that to its caller (``commit_on_return=False``: :meth:`commit`)."""
        start = perf_counter()
        record = self._on_received  # the hot path hands sinks records itself
        if record is not None:
            arguments = call.arguments
            if type(arguments) is str:  # text cannot change: shown where the event is made
                record(("received", call, time(), received_data, arguments))
            else:  # a mapping its caller may still change: copied now
                record(("received", call, time(), {"arguments": shown(arguments)}))
        prepared = self._find(call, start)  # 1. lookup
        if isinstance(prepared, Failed):
            return await self._returned(prepared) if self._commits_on_return else prepared
        args = self._validate(prepared, call, start)  # 2. validate
        if isinstance(args, Failed):
            return await self._returned(args) if self._commits_on_return else args
        settled = prepared.settled
        if settled is not None and on_progress is None:
            # 3-5, preflight, policy and approval, were settled once for this tool (prepare):
            # it asks for no permissions and the answer, allow or deny, is the same for every
            # call; there are no hooks either.
            record = self._on_decided
            if record is not None:
                record(("decided", call, time(), decision_data, settled))
            if settled.verdict == "deny":
                outcome: Outcome = self._failed(
                    call, start, "denied", prepared.denied, data={"rule": settled.rule}
                )
            else:
                if prepared.withdraws and not self._asked_never(call):
                    # Asked about under another policy (here or in another process): that
                    # approval must not run the call again.
                    await _approving.ran_without(self, call)
                outcome = await self._run(
                    prepared, call, args, None, start, approved=None, decision=settled
                )
        else:
            ctx = ToolContext(
                call, resources=self.resources, on_progress=self._progress(call, on_progress)
            )
            outcome = await self._guarded(prepared, call, args, ctx, start, approved=None)
        if self._commits_on_return:  # 10. what is returned has its records written
            await self.commit()
        return outcome

    def _asked_never(self, call: ToolCall) -> bool:
        """Whether the store can tell in-process that ``call`` never asked for an approval."""
        never_asked = self._never_asked
        return never_asked is not None and type(call.id) is str and never_asked(call.id)

    async def _returned(self, outcome: Outcome) -> Outcome:
        """``outcome``, once the records handed to group-commit sinks so far are written."""
        await self.commit()
        return outcome

    def _find(self, call: ToolCall, start: float) -> Prepared | Failed:
        """Step 1: the tool's plan (computed once per spec), or ``not_found``."""
        name = call.name
        if type(name) is not str:
            return self._failed(
                call, start, "not_found", f"A tool name must be text, not {type(name).__name__}."
            )
        session = call.session_id
        if session is not None and type(session) is not str:
            return self._failed(
                call,
                start,
                "invalid_call",
                f"A session id must be text, not {type(session).__name__}.",
            )
        prepared = self._prepared.get(name)
        if prepared is None or (
            not prepared.static and prepared.tool.current_spec() is not prepared.spec
        ):
            prepared = self._prepare(name)
            if prepared is None:
                return self._failed(call, start, "not_found", self._not_found(call))
        return prepared

    def _validate(
        self, prepared: Prepared, call: ToolCall, start: float
    ) -> dict[str, Any] | Failed:
        """Step 2: the arguments parsed and checked against the tool's schema, or
        ``invalid_arguments`` naming every bad field."""
        try:
            args = prepared.validator.validate(call.arguments)
        except ArgumentsError as exc:
            return self._failed(
                call, start, "invalid_arguments", str(exc), data=argument_issues(exc)
            )
        record = self._on_validated
        if record is not None:
            record(("validated", call, time(), validated_data, args))
        return args

    # The parts, wired: each is typed against its door (``_doors``), which this class
    # implements; a part hands a call on only through these.
    _guarded = guarded
    _rewritten = rewritten
    _run = run
    _hold = hold

    async def resume(
        self,
        interrupt: str | Interrupt | Mapping[str, Any],
        *,
        approve: bool | None = None,
        reason: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        scope: ApprovalScope = "once",
        by: str | None = None,
        credentials: Mapping[str, Any] | None = None,
        result: Any = None,
        on_progress: ProgressCallback | None = None,
        person: Person | None = None,
    ) -> Outcome:
        """Continue an interrupted call, in this process or another.

        For an approval (its id, or the interrupt): ``approve=True`` or ``False`` with a
        ``reason``; ``arguments`` to run edited arguments (validated and checked by policy again;
        a deny rule still wins); ``scope`` ``"once"``, ``"session"`` or ``"always"``. ``approve``
        may be left out when the request was already decided elsewhere (``invokit approvals``).
        For ``AuthorizationRequired``: ``credentials``. For ``ExternalCall``: ``result``.
        ``person`` is who decides (their subject and groups): a rule with approvers or four
        eyes (``[[policy.approvers]]``) takes a "yes" only from a person it allows.

        Every interrupt is single-use and bound to its call: only its id is taken from
        ``interrupt``; the call and arguments come from the store's record. A second resume of
        a used interrupt raises :class:`~invokit.exceptions.ApprovalAlreadyUsed` (an unknown id
        :class:`~invokit.exceptions.ApprovalNotFound`). A resumed call is decided again by the
        policy in force: an approval satisfies an ``ask``, never a ``deny``. A "no" (from here
        or any other channel) is final for that request.
        """
        approval_id = interrupt_id(interrupt)
        if approval_id.startswith(("auth_", "ext_")):  # the ids the executor gives them
            other = await _resuming.resume_other(
                self, approval_id, credentials, result, on_progress
            )
            if self._commits_on_return:
                await self.commit()
            return other
        answer = answer_of(
            approve,
            scope=scope,
            reason=reason,
            arguments=arguments,
            by=by,
            credentials=credentials,
            person=person,
        )
        outcome = await _resuming.decide_request(
            self, approval_id, answer, ctx=None, start=perf_counter(), on_progress=on_progress
        )
        request = (await self.approvals.get(approval_id)).request
        if request.call.metadata and PARENT in request.call.metadata:
            # A call made by another tool (a compose script's child): that tool goes on.
            outcome = await continue_parent(self, approval_id, request, outcome)
        if self._commits_on_return:
            await self.commit()
        return outcome

    async def commit(self) -> None:
        """Wait until every record handed to a group-commit audit sink so far is written (in
        the kernel: it survives ``kill -9``; with the sink's ``fsync``, power loss too).
        Calls that end together share one write; returns at once when nothing waits. An
        executor built with ``commit_on_return=False`` leaves this to its caller: await it
        before telling anyone of a result."""
        for commit in self._commits:
            waiter = commit()
            if waiter is not None:
                await waiter

    async def execute_many(
        self,
        calls: Sequence[ToolCall],
        *,
        max_concurrency: int | None = None,
        on_outcome: Callable[[int, Outcome], None] | None = None,
    ) -> list[Outcome]:
        """Run several calls: shared (read-only) tools in parallel, others one at a time in call
        order. Outcomes come back in call order, exactly one per call; ``on_outcome(index,
        outcome)`` is told of each as it finishes."""
        from invokit.execution._batch import run_batch

        return await run_batch(
            self, calls, max_concurrency or self.limits.max_concurrency, on_outcome
        )

    def stream(self, call: ToolCall) -> AsyncIterator[Progress | Outcome]:
        """Progress events as the call runs, then its outcome (always the last item)."""
        from invokit.execution._batch import stream

        return stream(self, call)

    def concurrency_of(self, call: ToolCall) -> str:
        """``shared`` or ``exclusive`` for ``call`` (unknown tools are shared: they fail at once)."""
        prepared = self._lookup(call.name)
        return "shared" if prepared is None else prepared.spec.effective_concurrency

    async def check(self, call: ToolCall) -> CallCheck:
        """What ``execute(call)`` would decide, without running anything: lookup, validation,
        preflight and the policy (the same decision function), then the approvals already
        given (a pending or answered approval of this call id, standing rules, session
        grants). Nothing is stored, invoked, asked or reported; never raises for bad input
        (``CallCheck.error`` says why the call could not run)."""
        from invokit.execution._checking import check

        return await check(self, call)

    async def pending(
        self, call_id: str, *, session_id: str | None = None
    ) -> ApprovalRequest | None:
        """The approval still waiting for the call ``call_id`` of ``session_id`` in this
        executor's project (looked up in the store, so in any process), else ``None``."""
        from invokit.execution._approving import earlier

        record = await earlier(self, call_id, session_id)
        return record.request if record is not None and record.status == "pending" else None

    async def explain(self, call: ToolCall) -> Any:
        """Which rule decides ``call`` and why (``Policy.explain`` after lookup, validation and
        preflight, with standing rules and host checkers), with the verdict ``check`` reads:
        where the store's answer decides (a grant, a person's answer), ``answered`` says which.
        Raises for an unknown tool or invalid arguments."""
        from invokit.execution._checking import explain

        return await explain(self, call)

    async def aclose(self) -> None:
        """Tear down every tool that was set up (listed or not), each within
        ``Limits.teardown`` seconds, then flush and close the event sinks and the store. A
        teardown that fails or hangs is a ``RuntimeWarning``; the rest still close."""
        from invokit.execution._closing import close_all

        tools = {id(item): item for item in self.registry}
        tools.update(self._set_up)  # set up behind an unlisted name, or no longer listed
        self._set_up = {}
        await close_all(tools.values(), self.sinks, self.approvals, bound=self.limits.teardown)


def _traced(registry: Registry, events: Sequence[EventSink]) -> tuple[object, ...]:
    """Tell the tracing sinks among ``events`` (none unless the OpenTelemetry sink was
    loaded) which tools they trace; the hooks they need."""
    otel = sys.modules.get("invokit.execution._otel")
    return () if otel is None else otel.attach(registry, events)
