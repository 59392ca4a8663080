"""A call's audit trail, read from the audit log ``invokit audit`` reads (JSONL or
PostgreSQL), newest last."""

from __future__ import annotations

from typing import Any

LIMIT = 200
"""Records shown for one call at most."""


def trail(state: Any, call_id: str, session_id: str | None) -> list[dict[str, Any]]:
    """The audit records of ``call_id`` in ``session_id`` in ``state``'s log, oldest first (at
    most LIMIT). A call id is unique only within its session (MCP request ids repeat)."""
    from invokit.cli.internal import open_audit

    if state.kind == "postgresql":
        from invokit.cli.internal import pages_down

        sink: Any = open_audit(state)
        try:
            found: list[dict[str, Any]] = []
            for record in pages_down(sink, call_id, None):
                if record.get("session_id") != session_id:
                    continue
                found.append(record)
                if len(found) >= LIMIT:
                    break
        finally:
            sink.close()
        return list(reversed(found))
    from invokit.cli.internal import audit_file, audit_path, records_from_end

    path = audit_file(state) if state.directory is not None else audit_path()
    if not path.exists():
        return []
    newest_first: list[dict[str, Any]] = []
    for record in records_from_end(path):
        if record.get("call_id") == call_id and record.get("session_id") == session_id:
            newest_first.append(record)
            if len(newest_first) >= LIMIT:
                break
    return list(reversed(newest_first))
