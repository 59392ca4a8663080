"""The executor and what it returns: outcomes, interrupts, hooks, limits and events."""

from typing import TYPE_CHECKING, Any

from invokit.execution._artifacts import SpillStore
from invokit.execution._events import Event, EventSink
from invokit.execution._executor import Approver, Executor
from invokit.execution._hooks import Continue, Halt, Hook, HookAction, Rewrite, Skip
from invokit.execution._limits import ArtifactStore, Limits
from invokit.execution._outcomes import (
    ApprovalRequired,
    AuthorizationRequired,
    Completed,
    ExternalCall,
    Failed,
    Interrupt,
    Interrupted,
    Outcome,
    interrupt_from_dict,
)

if TYPE_CHECKING:
    from invokit.execution._audit_jsonl import JsonlAuditSink
    from invokit.execution._audit_sqlite import SqliteAuditSink
    from invokit.execution._otel import OpenTelemetrySink

# Audit sinks load on first use: sqlite3 and the tracing shim stay out of ``import invokit``.
_LAZY = {
    "JsonlAuditSink": "invokit.execution._audit_jsonl",
    "SqliteAuditSink": "invokit.execution._audit_sqlite",
    "OpenTelemetrySink": "invokit.execution._otel",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'invokit.execution' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)


__all__ = [
    "ApprovalRequired",
    "Approver",
    "ArtifactStore",
    "AuthorizationRequired",
    "Completed",
    "Continue",
    "Event",
    "EventSink",
    "Executor",
    "ExternalCall",
    "Failed",
    "Halt",
    "Hook",
    "HookAction",
    "Interrupt",
    "Interrupted",
    "JsonlAuditSink",
    "Limits",
    "OpenTelemetrySink",
    "Outcome",
    "Rewrite",
    "Skip",
    "SpillStore",
    "SqliteAuditSink",
    "interrupt_from_dict",
]
