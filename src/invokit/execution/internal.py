"""The door into ``invokit.execution`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.execution`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").

Each name loads its module on first use, so importing this door loads no more than the import
it replaced (the audit buffer, the JSONL sink and the tracing shim stay out of ``import invokit``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invokit.execution._approving import (
        denied_by,
        earlier,
        emit_resolved,
        not_permitted,
        withdraw,
    )
    from invokit.execution._artifacts import reader_for
    from invokit.execution._audit_buffer import DURABLE_EVENTS, BufferedSink
    from invokit.execution._audit_encoding import dumps_record, unencodable
    from invokit.execution._audit_jsonl import DEFAULT_FILE as AUDIT_FILE
    from invokit.execution._children import (
        CONTINUATION,
        PARENT,
        Continuation,
        parent_of,
        state_id,
        waiting_child,
    )
    from invokit.execution._events import text_field
    from invokit.execution._limits import READER_NAME, apply_output_limit, output_size
    from invokit.execution._otel_context import current_span_of, outgoing_meta
    from invokit.execution._resolutions import channel_of, resolved_data
    from invokit.execution._standing import applicable, explain_with_standing, standing_used

__all__ = [
    "AUDIT_FILE",
    "CONTINUATION",
    "DURABLE_EVENTS",
    "PARENT",
    "READER_NAME",
    "BufferedSink",
    "Continuation",
    "applicable",
    "apply_output_limit",
    "channel_of",
    "current_span_of",
    "denied_by",
    "dumps_record",
    "earlier",
    "emit_resolved",
    "explain_with_standing",
    "not_permitted",
    "outgoing_meta",
    "output_size",
    "parent_of",
    "reader_for",
    "resolved_data",
    "standing_used",
    "state_id",
    "text_field",
    "unencodable",
    "waiting_child",
    "withdraw",
]

# name -> (private module, its name there)
_WHERE = {
    "AUDIT_FILE": ("_audit_jsonl", "DEFAULT_FILE"),
    "BufferedSink": ("_audit_buffer", "BufferedSink"),
    "CONTINUATION": ("_children", "CONTINUATION"),
    "Continuation": ("_children", "Continuation"),
    "DURABLE_EVENTS": ("_audit_buffer", "DURABLE_EVENTS"),
    "PARENT": ("_children", "PARENT"),
    "READER_NAME": ("_limits", "READER_NAME"),
    "applicable": ("_standing", "applicable"),
    "apply_output_limit": ("_limits", "apply_output_limit"),
    "channel_of": ("_resolutions", "channel_of"),
    "current_span_of": ("_otel_context", "current_span_of"),
    "denied_by": ("_approving", "denied_by"),
    "dumps_record": ("_audit_encoding", "dumps_record"),
    "earlier": ("_approving", "earlier"),
    "emit_resolved": ("_approving", "emit_resolved"),
    "explain_with_standing": ("_standing", "explain_with_standing"),
    "standing_used": ("_standing", "standing_used"),
    "not_permitted": ("_approving", "not_permitted"),
    "outgoing_meta": ("_otel_context", "outgoing_meta"),
    "output_size": ("_limits", "output_size"),
    "parent_of": ("_children", "parent_of"),
    "reader_for": ("_artifacts", "reader_for"),
    "resolved_data": ("_resolutions", "resolved_data"),
    "state_id": ("_children", "state_id"),
    "text_field": ("_events", "text_field"),
    "unencodable": ("_audit_encoding", "unencodable"),
    "waiting_child": ("_children", "waiting_child"),
    "withdraw": ("_approving", "withdraw"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'invokit.execution.internal' has no attribute {name!r}")
    value = getattr(import_module(f"invokit.execution.{where[0]}"), where[1])
    globals()[name] = value
    return value
