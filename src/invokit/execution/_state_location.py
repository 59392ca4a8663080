"""Approvals and the audit log never live where a tool of the same executor can write.

A tool that can delete or rewrite the approval database could forge a person's "yes" or erase
a "no"; one that can reach the audit log could erase its own traces. The stores refuse a path
inside the roots they are told about (``forbidden_roots``); the executor checks again against
the roots its own tools declare (:attr:`Tool.writable_roots`), so a mistake in wiring cannot
put them there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from invokit._state import inside_any
from invokit.registry import RenamedTool
from invokit.tools import Tool

__all__ = ["check_state_location"]


def check_state_location(tools: Iterable[Tool], approvals: object, sinks: Iterable[object]) -> None:
    """Refuse an approval store or an event sink whose file lies inside a tool's writable root.

    Stores and sinks without a ``path`` (in memory, PostgreSQL) are not checked.

    Raises:
        ValueError: the file of ``approvals`` or of one of ``sinks`` is inside a root that a
            tool in ``tools`` may write.
    """
    roots: dict[Path, str] = {}
    for tool in tools:
        inner = tool
        while isinstance(inner, RenamedTool):  # prefixed, renamed, aliased: the real tool
            inner = inner.inner
        for root in inner.writable_roots:
            roots.setdefault(root, tool.name)
    if not roots:
        return
    holders = [(approvals, "the approval store"), *((sink, "the audit log") for sink in sinks)]
    for holder, what in holders:
        path = getattr(holder, "path", None)
        if not isinstance(path, str | os.PathLike):
            continue
        blocked = inside_any(Path(path), roots)
        if blocked is not None:
            owner = next((n for root, n in roots.items() if root.resolve() == blocked), "?")
            raise ValueError(
                f"refusing to keep {what} at {path}: it is inside {blocked}, which the tool "
                f"{owner!r} may write, so a tool call could forge or erase it; keep it outside "
                "every tool root (the default is the user's state directory)"
            )
