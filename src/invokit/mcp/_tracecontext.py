"""The trace context of a request's ``_meta``, and nothing else of it.

A client's ``_meta`` may carry anything: W3C ``baggage``, say, whose malformed entries
OpenTelemetry's propagator logs verbatim as warnings, where a client could put escape
sequences that repaint the person's terminal. invokit reads only ``traceparent`` and
``tracestate`` from ``_meta``, with the trace-context propagator alone, both for its own tool
span and for the SDK's request span (:class:`TraceContextOnly`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

TRACE_KEYS = ("traceparent", "tracestate")


def trace_carrier(meta: Mapping[str, Any] | None) -> dict[str, str]:
    """``traceparent`` and ``tracestate`` of ``meta`` (strings only); never baggage."""
    if not meta:
        return {}
    return {key: meta[key] for key in TRACE_KEYS if isinstance(meta.get(key), str)}


@contextlib.contextmanager
def trace_context(meta: Mapping[str, Any] | None) -> Iterator[None]:
    """The client's trace context (``traceparent`` in the request's ``_meta``) as the current
    one while the call runs, so its span joins the client's trace (when OpenTelemetry is
    installed)."""
    carrier = trace_carrier(meta)
    if "traceparent" not in carrier:
        yield
        return
    try:
        from opentelemetry import context, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError:
        yield
        return
    extracted = TraceContextTextMapPropagator().extract(carrier)
    remote = trace.get_current_span(extracted).get_span_context()
    if not remote.is_valid or trace.get_current_span().get_span_context().trace_id == (
        remote.trace_id
    ):
        # Nothing usable, or the SDK's server span already joined the client's trace: the
        # tool span nests under that one.
        yield
        return
    token = context.attach(extracted)
    try:
        yield
    finally:
        context.detach(token)


class TraceContextOnly:
    """The SDK's OpenTelemetry middleware, shown only the trace context of ``_meta``.

    The SDK extracts the request's whole ``_meta`` with the global propagator (baggage
    included); this hands it a copy of the context that holds ``traceparent`` and ``tracestate``
    only, and the rest of the chain the request as it came.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        meta = getattr(ctx, "meta", None)
        if not meta or set(meta) <= set(TRACE_KEYS):
            return await self.inner(ctx, call_next)
        narrowed = dataclasses.replace(ctx, meta=trace_carrier(meta) or None)

        async def rest(_: Any) -> Any:
            return await call_next(ctx)

        return await self.inner(narrowed, rest)


def narrow_tracing(middleware: list[Any]) -> list[Any]:
    """``middleware`` with the SDK's OpenTelemetry middleware wrapped in
    :class:`TraceContextOnly`."""
    try:
        from mcp.server._otel import OpenTelemetryMiddleware
    except ImportError:  # an SDK without it: nothing reads _meta for tracing
        return middleware
    return [
        TraceContextOnly(m) if isinstance(m, OpenTelemetryMiddleware) else m for m in middleware
    ]
