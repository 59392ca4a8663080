"""The door into ``invokit.cli`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users run the ``invokit`` command. A name here may change in any
release (see ``docs/architecture.md``, "Doors between packages").

Each name loads its module on first use, so importing this door loads no more than the import
it replaced (the inbox reads the audit log and decides a question without the whole CLI).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invokit.cli._approvals import decide
    from invokit.cli._audit import _pages_down as pages_down
    from invokit.cli._audit import audit_path
    from invokit.cli._audit_tail import records_from_end
    from invokit.cli._diff import change_diff
    from invokit.cli._livelog import touches
    from invokit.cli._stores import audit_file, open_audit

__all__ = [
    "audit_file",
    "audit_path",
    "change_diff",
    "decide",
    "open_audit",
    "pages_down",
    "records_from_end",
    "touches",
]

# name -> (private module, its name there)
_WHERE = {
    "audit_file": ("_stores", "audit_file"),
    "audit_path": ("_audit", "audit_path"),
    "change_diff": ("_diff", "change_diff"),
    "decide": ("_approvals", "decide"),
    "open_audit": ("_stores", "open_audit"),
    "pages_down": ("_audit", "_pages_down"),
    "records_from_end": ("_audit_tail", "records_from_end"),
    "touches": ("_livelog", "touches"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'invokit.cli.internal' has no attribute {name!r}")
    value = getattr(import_module(f"invokit.cli.{where[0]}"), where[1])
    globals()[name] = value
    return value
