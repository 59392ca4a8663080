"""Events and refusals: what the executor tells its sinks, and the results of calls that
failed before their tool ran."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Sequence
from time import perf_counter
from typing import Any

from invokit._calls import ToolCall, new_error_result
from invokit.execution._events import ALL_EVENT_TYPES, EventSink, EventType, new_event, text_field
from invokit.execution._limits import Limits, fit_message
from invokit.execution._outcomes import (
    ApprovalRequired,
    Failed,
    Interrupt,
    Interrupted,
    failed,
)
from invokit.execution._records import shown
from invokit.tools._context import Progress, ProgressCallback, ToolContext


class Reporter:
    """The executor's event plumbing: which sinks want which events, and the outcomes that
    are reported as they are returned (failed before running, interrupted)."""

    limits: Limits
    _refusal_chars: int
    sinks: tuple[EventSink, ...]
    _sinks_for: dict[str, tuple[EventSink, ...]]
    _interrupts: dict[str, Interrupt]

    def _listen(self, events: Sequence[EventSink]) -> None:
        self.sinks = tuple(events)
        self._refusal_chars = self.limits.output.max_chars
        self._sinks_for = {}
        # A sink without ``types`` (a plain object with ``emit``) wants every event.
        chosen = [(s, getattr(s, "types", None)) for s in self.sinks]
        for kind in sorted(ALL_EVENT_TYPES):
            wanted = tuple(s for s, types in chosen if types is None or kind in types)
            if wanted:
                self._sinks_for[kind] = wanted
        self._interrupts = {}

    def _failed(
        self, call: ToolCall, start: float, kind: str, message: str, *, data: Any = None
    ) -> Failed:
        # A refusal may quote what the model sent (a 2 MB URL); it is held to the output limit.
        if len(message) > self._refusal_chars:
            message = fit_message(message, self._refusal_chars)
        result = new_error_result(call.id, call.name, kind, message, data, perf_counter() - start)
        if "failed" in self._sinks_for:
            self._emit(
                "failed",
                call,
                {
                    "kind": kind,
                    "message": message[:500],
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
        name, call_id, session = call.name, call.id, call.session_id
        if (
            type(name) is not str
            or type(call_id) is not str
            or (session is not None and type(session) is not str)
        ):  # a malformed call, as parsed: its fields are written as their types only
            name, call_id = text_field(name) or "", text_field(call_id) or ""
            session = text_field(session)
        # id(call): the call object lives for its whole execution, so its events share it
        # and no other execution in flight has it.
        event = new_event(kind, call_id, name, time.time(), session, data, id(call))
        for sink in self._sinks_for[kind]:
            try:
                sink.emit(event)
            except Exception as exc:  # an audit sink must not break a call; it warns
                warnings.warn(f"event sink {sink!r} failed: {exc!r}", RuntimeWarning, stacklevel=2)

    def _progress(
        self, call: ToolCall, downstream: ProgressCallback | None
    ) -> ProgressCallback | None:
        """The callback a tool reports progress to: the ``progress`` event, then the host's
        ``downstream`` callback, whose failure is reported (a warning and a ``progress`` event
        with ``callback_error``) and never fails the call."""
        emitting = "progress" in self._sinks_for
        if not emitting and downstream is None:
            return None
        reported = False

        async def report(progress: Progress) -> None:
            nonlocal reported
            if emitting:
                self._emit(
                    "progress",
                    call,
                    {
                        "progress": progress.progress,
                        "total": progress.total,
                        "message": progress.message,
                    },
                )
            if downstream is None:
                return
            try:
                await downstream(progress)
            except Exception as exc:  # the host's callback, not the tool, failed
                if reported:
                    return
                reported = True
                if emitting:
                    self._emit("progress", call, {"callback_error": repr(exc)[:500]})
                # Warnings turned into errors still never fail the call.
                with contextlib.suppress(Warning):
                    warnings.warn(
                        f"the on_progress callback of call {call.id!r} failed: {exc!r}; "
                        "the call goes on without it",
                        RuntimeWarning,
                        stacklevel=2,
                    )

        return report

    def _cancelled(self, call: ToolCall, args: dict[str, Any], ctx: ToolContext | None) -> None:
        """Record a cancellation, which then propagates: never swallowed."""
        if ctx is not None:
            ctx.cancel()
        if "failed" in self._sinks_for:
            self._emit("failed", call, {"kind": "cancelled", "arguments": args, "is_error": True})
