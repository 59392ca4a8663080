"""The executor: one guarded path from a model's tool call to a result.

lookup → validate → preflight → policy → approval → hooks → invoke → limit → normalize.
Nothing with a side effect happens before the call was looked up, validated, decided and,
where asked, approved. Every failure becomes a result the model can read.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from time import perf_counter
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall, ToolResult, new_error_result, new_text_result
from invokit._ids import new_id
from invokit.exceptions import (
    ArgumentsError,
    AuthRequired,
)
from invokit.execution import _approving
from invokit.execution._events import ALL_EVENT_TYPES, EventSink, EventType, new_event
from invokit.execution._hooks import run_before_hooks
from invokit.execution._invoke import (
    PRECISE_BELOW,
    Watchdog,
    loop_getter,
    rounds,
    run_with_timeout,
    watchdog,
)
from invokit.execution._limits import ArtifactStore, Limits, apply_output_limit
from invokit.execution._normalize import error_to_result, value_to_result
from invokit.execution._outcomes import (
    ApprovalRequired,
    AuthorizationRequired,
    ExternalCall,
    Failed,
    Interrupt,
    Interrupted,
    Outcome,
    completed,
    failed,
    interrupt_from_dict,
)
from invokit.execution._prepared import Prepared
from invokit.execution._records import (
    argument_issues,
    completed_data,
    decision_data,
    denied_message,
    shown,
)
from invokit.permissions._requests import PermissionRequest
from invokit.registry._base import Registry, ToolRegistry
from invokit.registry._view import RenamedTool
from invokit.tools._base import Tool
from invokit.tools._context import Progress, ProgressCallback, ToolContext
from invokit.tools._function import FunctionTool

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest, ApprovalScope, ApprovalStore
    from invokit.permissions import Decision, Policy

Approver = Callable[["ApprovalRequest"], Awaitable["ApprovalDecision"]]


class Executor:
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
        artifacts: ArtifactStore | None = None,
    ) -> None:
        from invokit.permissions import Policy

        base = registry if isinstance(registry, Registry) else ToolRegistry(registry)
        self.limits = limits or Limits()
        self.artifacts = artifacts or ArtifactStore()
        self.registry: Registry = base
        if self._may_spill(base) and self.artifacts.reader().name not in base:
            self.registry = base.merged([self.artifacts.reader()])
        self.policy = policy if policy is not None else Policy()
        if approvals is None:
            from invokit.approvals import MemoryApprovalStore

            approvals = MemoryApprovalStore()
        self.approvals: ApprovalStore = approvals
        self.approver = approver
        self.hooks = tuple(hooks)
        self._before: tuple[Any, ...] = tuple(h for h in self.hooks if hasattr(h, "before_call"))
        self._after: tuple[Any, ...] = tuple(h for h in self.hooks if hasattr(h, "after_call"))
        self.sinks = tuple(events)
        self._sinks_for: dict[str, tuple[EventSink, ...]] = {}
        for kind in sorted(ALL_EVENT_TYPES):
            wanted = tuple(s for s in self.sinks if s.types is None or kind in s.types)
            if wanted:
                self._sinks_for[kind] = wanted
        self.resources = resources
        self._prepared: dict[str, Prepared] = {}
        self._interrupts: dict[str, Interrupt] = {}
        self._always: tuple[str, ...] = ()
        self._policy = self.policy
        self.registry.subscribe(self._prepared.clear)
        self._get_loop: Callable[[], Any] | None = None
        self._dog: Watchdog | None = None

    def _find_loop(self) -> Callable[[], Any] | None:
        self._get_loop = loop_getter()
        return self._get_loop

    def _may_spill(self, registry: Registry) -> bool:
        if self.limits.output.mode == "spill":
            return True
        return any(
            t.spec.output_limit is not None and t.spec.output_limit.mode == "spill"
            for t in registry
        )

    # -- lookup -----------------------------------------------------------------------

    def _prepare(self, name: str) -> Prepared | None:
        found = self.registry.get(name)
        spec = found.current_spec() if found is not None else None
        if found is None or spec is None:
            return None
        prepared = Prepared(
            tool=found,
            spec=spec,
            validator=found.validator,
            policy=self._policy.compile(spec),
            timeout=spec.timeout if spec.timeout is not None else self.limits.timeout,
            limit=spec.output_limit or self.limits.output,
        )
        if prepared.timeout >= PRECISE_BELOW:
            prepared.rounds = rounds(prepared.timeout)
        inner = found
        while isinstance(inner, RenamedTool):  # prefixed, renamed, aliased: the real tool
            inner = inner.inner
        if isinstance(inner, FunctionTool) and not inner.external:
            shortcut = inner.direct()
            if shortcut is not None:
                prepared.direct, prepared.convert = shortcut
                prepared.lean = not inner.declares_permissions
        prepared.static = type(found) is FunctionTool  # its spec is built once, never replaced
        settled = prepared.policy.constant
        hooked = self._before or self._after
        if prepared.lean and not hooked and settled is not None and settled.verdict != "ask":
            prepared.settled = settled
            prepared.denied = denied_message(spec.name, settled)
        self._prepared[name] = prepared
        return prepared

    def _lookup(self, name: str) -> Prepared | None:
        prepared = self._prepared.get(name)
        if prepared is None or prepared.tool.current_spec() is not prepared.spec:
            prepared = self._prepare(name)
        return prepared

    def _not_found(self, call: ToolCall) -> str:
        available = [spec.name for spec in self.registry.specs()]
        from difflib import get_close_matches

        close = get_close_matches(call.name, available, n=1)
        listed = ", ".join(available) if available else "(none)"
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"No tool named {call.name!r}. Available tools: {listed}.{hint}"

    # -- the pipeline -----------------------------------------------------------------

    async def execute(
        self, call: ToolCall, *, on_progress: ProgressCallback | None = None
    ) -> Outcome:
        """Run one call through every step; only a bug in invokit raises."""
        start = perf_counter()
        sinks = self._sinks_for
        if "received" in sinks:
            self._emit("received", call, {"arguments": shown(call.arguments)})
        name = call.name
        if type(name) is not str:
            return self._failed(
                call, start, "not_found", f"A tool name must be text, not {name!r}."
            )
        prepared = self._prepared.get(name)
        if prepared is None or (
            not prepared.static and prepared.tool.current_spec() is not prepared.spec
        ):
            prepared = self._prepare(name)
            if prepared is None:
                return self._failed(call, start, "not_found", self._not_found(call))
        try:
            args = prepared.validator.validate(call.arguments)
        except ArgumentsError as exc:
            return self._failed(
                call, start, "invalid_arguments", str(exc), data=argument_issues(exc)
            )
        if "validated" in sinks:
            self._emit("validated", call, {"arguments": args})
        settled = prepared.settled
        if settled is None or on_progress is not None:
            ctx = ToolContext(
                call, resources=self.resources, on_progress=self._progress(call, on_progress)
            )
            return await self._guarded(prepared, call, args, ctx, start, approved=None)
        # The shortest path: a plain async @tool, no hooks, and a policy that answers the same
        # for every call. No context, no requests, the tool's coroutine awaited right here.
        if "decided" in sinks:
            self._emit("decided", call, decision_data(settled))
        if settled.verdict == "deny":
            return self._failed(call, start, "denied", prepared.denied, data={"rule": settled.rule})
        if "started" in sinks:
            self._emit("started", call, {})
        tool = prepared.tool
        try:
            if not tool._ready:
                await tool.ensure_setup()
            convert = prepared.convert
            coro = prepared.direct(**(convert(args) if convert is not None else args))  # type: ignore[misc]
            get_loop = self._get_loop or self._find_loop()
            loop = get_loop() if get_loop is not None else None
            due = prepared.rounds
            if loop is None or not due:
                value, late = await run_with_timeout(coro, prepared.timeout)
            else:
                # Watchdog.arm and run_with_timeout, inlined: this is every plain call's cost.
                dog = self._dog
                if dog is None or dog.loop is not loop:
                    dog = self._dog = watchdog(loop)
                deadlines = dog.deadlines
                deadlines[coro] = (dog.task(loop), dog.round + due)
                if dog.timer is None:
                    dog.start()
                try:
                    value = await coro
                except BaseException as exc:
                    del deadlines[coro]
                    if not dog.timed_out(coro, exc):
                        raise
                    value, late = None, True
                else:
                    del deadlines[coro]
                    late = bool(dog.fired) and dog.fired_anyway(coro)
            if late:
                result = self._timeout(call, prepared)
            elif type(value) is str and len(value) <= prepared.limit.max_chars:
                result = new_text_result(call.id, name, value, perf_counter() - start)
                if "completed" in sinks:
                    self._emit("completed", call, completed_data(result, args, settled, None))
                return completed(result)
            else:
                result = value_to_result(call, value)
        except AuthRequired as exc:
            return self._interrupted(self._authorization(call, args, exc))
        except Exception as exc:  # the one translation boundary for tool bodies
            result = error_to_result(call, exc)
        except BaseException:
            self._cancelled(call, args, None)
            raise
        return self._finish(prepared, call, args, result, start, settled, None, fresh=True)

    async def _guarded(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        ctx: ToolContext,
        start: float,
        *,
        approved: ApprovalRequest | None,
    ) -> Outcome:
        """Preflight, policy and approval for ``args``; then run. ``approved`` is the request a
        person approved for exactly these arguments, if any."""
        try:
            requests = tuple(prepared.tool.permissions(args, ctx))
        except Exception as exc:  # a broken preflight refuses the call; nothing ran
            return self._failed(
                call, start, "denied", f"Permission check of {call.name!r} failed: {exc!r}"
            )
        decision = prepared.policy.decide(args, requests)
        if "decided" in self._sinks_for:
            self._emit("decided", call, decision_data(decision))
        verdict = decision.verdict
        if verdict == "deny":
            return self._failed(
                call,
                start,
                "denied",
                denied_message(call.name, decision),
                data={"rule": decision.rule},
            )
        if verdict == "ask" and approved is None:
            granted = await _approving.standing_grant(self, prepared, call, args, decision)
            if granted is None:
                return await _approving.ask(
                    self, prepared, call, args, requests, decision, ctx, start
                )
            if not isinstance(granted, bool):
                approved = granted
        return await self._run(
            prepared, call, args, ctx, start, approved=approved, decision=decision
        )

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
    ) -> Outcome:
        """Hooks, then the tool, then limits. ``ctx`` is ``None`` only on the lean path (a plain
        async function that never sees a context)."""
        tool = prepared.tool
        if self._before and not rewritten:
            if ctx is None:
                ctx = ToolContext(call, resources=self.resources)
            outcome = await run_before_hooks(self, prepared, call, args, ctx, start, approved)
            if outcome is not None:
                return outcome
        if tool.external:
            interrupt = ExternalCall(id=new_id("ext_", 12), call=call, arguments=args)
            return self._interrupted(interrupt)
        if "started" in self._sinks_for:
            self._emit("started", call, {})
        try:
            if ctx is not None:
                ctx.bind_policy(
                    prepared.policy, args, decision.verdict if decision is not None else "ask"
                )
            if not tool._ready:
                await tool.ensure_setup()
            direct = prepared.direct
            if direct is not None:
                convert = prepared.convert
                coro = direct(**(convert(args) if convert is not None else args))
            else:
                if ctx is None:
                    ctx = ToolContext(call, resources=self.resources)
                coro = tool.invoke(args, ctx)
            value, late = await run_with_timeout(coro, prepared.timeout)
            if late:
                if ctx is not None:
                    ctx.cancel()
                result = self._timeout(call, prepared)
            else:
                result = value_to_result(call, value)
        except AuthRequired as exc:
            return self._interrupted(self._authorization(call, args, exc))
        except Exception as exc:  # the one translation boundary for tool bodies
            result = error_to_result(call, exc)
        except BaseException:
            self._cancelled(call, args, ctx)
            raise
        fresh = True
        for hook in self._after:
            try:
                replaced = await hook.after_call(call, result)
            except Exception as exc:
                replaced = ToolResult.failure(
                    call, "hook_failed", f"An after_call hook failed: {exc!r}"
                )
            if replaced is not None:
                result, fresh = replaced, False
        return self._finish(prepared, call, args, result, start, decision, approved, fresh=fresh)

    def _finish(
        self,
        prepared: Prepared,
        call: ToolCall,
        args: dict[str, Any],
        result: ToolResult,
        start: float,
        decision: Decision | None,
        approved: ApprovalRequest | None,
        *,
        fresh: bool,
    ) -> Outcome:
        """The output limit, the approval id and the duration on ``result``; then the event."""
        result = apply_output_limit(result, prepared.limit, self.artifacts)
        if approved is not None:
            result = replace(result, metadata={**result.metadata, "approval_id": approved.id})
            fresh = True
        if fresh:
            # A result built in this call that nobody else holds yet: stamp the duration in
            # place instead of copying a frozen dataclass on the hot path.
            object.__setattr__(result, "duration", perf_counter() - start)
        else:
            result = replace(result, duration=perf_counter() - start)
        if "completed" in self._sinks_for:
            self._emit("completed", call, completed_data(result, args, decision, approved))
        return completed(result)

    def _timeout(self, call: ToolCall, prepared: Prepared) -> ToolResult:
        return ToolResult.failure(
            call,
            "timeout",
            f"Tool {call.name!r} did not finish within {prepared.timeout:g} s and was stopped. "
            "Try a smaller request.",
        )

    def _authorization(
        self, call: ToolCall, args: dict[str, Any], exc: AuthRequired
    ) -> AuthorizationRequired:
        return AuthorizationRequired(
            id=new_id("auth_", 12),
            call=call,
            arguments=args,
            provider=exc.provider,
            scopes=exc.scopes,
            challenge=exc.challenge,
        )

    def _cancelled(self, call: ToolCall, args: dict[str, Any], ctx: ToolContext | None) -> None:
        """Record a cancellation, which then propagates: never swallowed."""
        if ctx is not None:
            ctx.cancel()
        if "failed" in self._sinks_for:
            self._emit("failed", call, {"kind": "cancelled", "arguments": args, "is_error": True})

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
    ) -> Outcome:
        """Continue an interrupted call, in this process or another.

        For an approval (its id, or the interrupt): ``approve=True`` or ``False`` with a
        ``reason``; ``arguments`` to run edited arguments (validated and checked by policy again;
        a deny rule still wins); ``scope`` ``"once"``, ``"session"`` or ``"always"``. ``approve``
        may be left out when the request was already decided elsewhere (``invokit approvals``).
        For ``AuthorizationRequired``: ``credentials``. For ``ExternalCall``: ``result``.
        """
        if isinstance(interrupt, Mapping):
            interrupt = interrupt_from_dict(dict(interrupt))
        if isinstance(interrupt, AuthorizationRequired | ExternalCall):
            return await _approving.resume_other(self, interrupt, credentials, result, on_progress)
        approval_id = interrupt if isinstance(interrupt, str) else interrupt.id
        if approval_id in self._interrupts and not approval_id.startswith("apr_"):
            return await _approving.resume_other(
                self, self._interrupts[approval_id], credentials, result, on_progress
            )
        from invokit.approvals import ApprovalDecision

        answer = None
        if approve is not None:
            answer = ApprovalDecision(
                approved=approve,
                scope=scope,
                reason=reason,
                arguments=dict(arguments) if arguments is not None else None,
                by=by,
                credentials=dict(credentials) if credentials is not None else None,
            )
        return await _approving.decide_request(
            self, approval_id, answer, ctx=None, start=perf_counter(), on_progress=on_progress
        )

    def _recheck(
        self,
        prepared: Prepared,
        call: ToolCall,
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        start: float,
        source: str,
    ) -> tuple[dict[str, Any], tuple[PermissionRequest, ...], Decision] | Failed:
        """Validation, preflight and policy again, for arguments that changed after the first
        decision (a hook's rewrite, a person's edit); a deny or invalid input fails the call."""
        try:
            args = prepared.validator(arguments)
        except ArgumentsError as exc:
            return self._failed(call, start, "invalid_arguments", f"{source} are invalid: {exc}")
        try:
            requests = tuple(prepared.tool.permissions(args, ctx))
        except Exception as exc:
            return self._failed(
                call, start, "denied", f"Permission check of {call.name!r} failed: {exc!r}"
            )
        decision = prepared.policy.decide(args, requests)
        if decision.verdict == "deny":
            return self._failed(call, start, "denied", denied_message(call.name, decision))
        return args, requests, decision

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

    async def stream(self, call: ToolCall) -> AsyncIterator[Progress | Outcome]:
        """Progress events as the call runs, then its outcome (always the last item)."""
        import anyio

        send, receive = anyio.create_memory_object_stream[Progress | Outcome](max_buffer_size=1024)

        async def forward(progress: Progress) -> None:
            await send.send(progress)

        async def run() -> None:
            async with send:
                await send.send(await self.execute(call, on_progress=forward))

        async with anyio.create_task_group() as group, receive:
            group.start_soon(run)
            async for item in receive:
                yield item

    def concurrency_of(self, call: ToolCall) -> str:
        """``shared`` or ``exclusive`` for ``call`` (unknown tools are shared: they fail at once)."""
        prepared = self._lookup(call.name)
        return "shared" if prepared is None else prepared.spec.effective_concurrency

    async def explain(self, call: ToolCall) -> Any:
        """Which policy rule decides ``call`` and why (``Policy.explain`` after lookup,
        validation and preflight); raises for an unknown tool or invalid arguments."""
        prepared = self._lookup(call.name)
        if prepared is None:
            raise KeyError(self._not_found(call))
        args = prepared.validator(call.arguments)
        requests = tuple(
            prepared.tool.permissions(args, ToolContext(call, resources=self.resources))
        )
        return self._policy.explain(prepared.spec, args, requests)

    async def aclose(self) -> None:
        """Tear down tools that were set up, flush and close event sinks and the store."""
        for item in self.registry:
            await item.close()
        for sink in self.sinks:
            sink.close()
        await self.approvals.close()

    # -- outcomes and events -------------------------------------------------------------

    def _failed(
        self, call: ToolCall, start: float, kind: str, message: str, *, data: Any = None
    ) -> Failed:
        result = new_error_result(call.id, call.name, kind, message, data, perf_counter() - start)
        if "failed" in self._sinks_for:
            self._emit(
                "failed",
                call,
                {
                    "kind": kind,
                    "message": message,
                    "is_error": True,
                    "arguments": shown(call.arguments),
                },
            )
        return failed(result)

    def _interrupted(self, interrupt: Interrupt) -> Interrupted:
        if not isinstance(interrupt, ApprovalRequired):
            self._interrupts[interrupt.id] = interrupt
        if "interrupted" in self._sinks_for:
            self._emit("interrupted", interrupt.call, {"kind": interrupt.kind, "id": interrupt.id})
        return Interrupted(interrupt)

    def _emit(self, kind: EventType, call: ToolCall, data: dict[str, Any]) -> None:
        event = new_event(kind, call.id, call.name, time.time(), call.session_id, data)
        for sink in self._sinks_for[kind]:
            try:
                sink.emit(event)
            except Exception as exc:  # an audit sink must not break a call; it warns
                warnings.warn(f"event sink {sink!r} failed: {exc!r}", RuntimeWarning, stacklevel=2)

    def _progress(
        self, call: ToolCall, downstream: ProgressCallback | None
    ) -> ProgressCallback | None:
        if "progress" not in self._sinks_for:
            return downstream

        async def report(progress: Progress) -> None:
            self._emit(
                "progress",
                call,
                {
                    "progress": progress.progress,
                    "total": progress.total,
                    "message": progress.message,
                },
            )
            if downstream is not None:
                await downstream(progress)

        return report
