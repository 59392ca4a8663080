"""Events and refusals: what the executor tells its sinks, and the results of calls that
failed before their tool ran."""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from time import perf_counter
from typing import Any

from invokit._calls import ToolCall, new_error_result
from invokit.execution._events import ALL_EVENT_TYPES, EventSink, EventType
from invokit.execution._limits import Limits, fit_message
from invokit.execution._outcomes import (
    ApprovalRequired,
    Failed,
    Interrupt,
    Interrupted,
    failed,
)
from invokit.execution._recording import Record, record_event
from invokit.execution._records import shown
from invokit.tools import Progress, ToolContext
from invokit.tools.internal import ProgressCallback


class Reporter:
    """The executor's event plumbing: which sinks want which events, and the outcomes that
    are reported as they are returned (failed before running, interrupted)."""

    limits: Limits
    _refusal_chars: int
    sinks: tuple[EventSink, ...]
    _sinks_for: dict[str, Callable[[Record], None]]
    """For each event type some sink wants: how to hand it one record (the hot path calls it
    with ``(type, call, time.time(), data)``; elsewhere :meth:`_emit` does)."""
    _on_received: Callable[[Record], None] | None
    _on_validated: Callable[[Record], None] | None
    _on_decided: Callable[[Record], None] | None
    _on_started: Callable[[Record], None] | None
    _on_completed: Callable[[Record], None] | None
    """``_sinks_for``'s entries for the five events of every allowed call, settled once, so
    the hot path reads an attribute instead of looking the type up."""
    _interrupts: dict[str, Interrupt]
    _commits: tuple[Callable[[], Awaitable[None] | None], ...]
    """The ``committed`` of each group-commit sink: what :meth:`Executor.commit` awaits."""
    _commits_on_return: tuple[Callable[[], Awaitable[None] | None], ...]
    """``_commits`` when every outcome waits for its records before it is returned; empty when
    the caller commits (``commit_on_return=False``)."""

    def _listen(self, events: Sequence[EventSink], *, commit_on_return: bool) -> None:
        self.sinks = tuple(events)
        buffered = sys.modules.get("invokit.execution._audit_buffer")
        self._commits = tuple(
            sink.committed
            for sink in self.sinks
            if buffered is not None
            and isinstance(sink, buffered.BufferedSink)
            and sink.group_commit
        )
        self._refusal_chars = self.limits.output.max_chars
        self._sinks_for = {}
        for kind in sorted(ALL_EVENT_TYPES):
            wanted = tuple(
                put for put in (_recorder(sink, kind) for sink in self.sinks) if put is not None
            )
            if len(wanted) == 1:
                self._sinks_for[kind] = wanted[0]
            elif wanted:
                self._sinks_for[kind] = _fan_out(wanted)
        self._commits_on_return = self._commits if commit_on_return else ()
        sinks_for = self._sinks_for.get
        self._on_received, self._on_validated = sinks_for("received"), sinks_for("validated")
        self._on_decided, self._on_started = sinks_for("decided"), sinks_for("started")
        self._on_completed = sinks_for("completed")
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
        """Hand every sink that wants ``kind`` the raw record ``(kind, call, time, data)``: an
        audit sink appends it to its buffer (its writer thread makes the event and writes it),
        any other sink gets the :class:`Event` built from it."""
        self._sinks_for[kind]((kind, call, time.time(), data))

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


def _fan_out(puts: tuple[Callable[[Record], None], ...]) -> Callable[[Record], None]:
    """One record to each of several sinks."""

    def put(record: Record) -> None:
        for each in puts:
            each(record)

    return put


def _recorder(sink: EventSink, kind: str) -> Callable[[Record], None] | None:
    """How ``sink`` takes a record of type ``kind``, or ``None`` when it does not want it. An
    audit sink buffers the raw record; any other sink is handed the event, and a sink that
    fails warns (``RuntimeWarning``) and never makes a call fail."""
    buffered = sys.modules.get("invokit.execution._audit_buffer")  # not loaded: none is one
    if buffered is not None and isinstance(sink, buffered.BufferedSink):
        return sink.recorder(kind)  # type: ignore[no-any-return]
    types = getattr(sink, "types", None)
    if types is not None and kind not in types:
        return None

    def put(record: Record) -> None:
        try:
            sink.emit(record_event(record))
        except Exception as exc:  # an audit sink must not break a call; it warns
            warnings.warn(f"event sink {sink!r} failed: {exc!r}", RuntimeWarning, stacklevel=3)

    return put
