"""The door into ``invokit.permissions`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.permissions`. A name here may change
in any release (see ``docs/architecture.md``, "Doors between packages").

Each name loads its module on first use, so importing this door loads no more than the import
it replaced (the TOML loader and the execution surfaces stay out of ``import invokit``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invokit.permissions._deciders import local_person, refusal
    from invokit.permissions._decision import RANK
    from invokit.permissions._glob import escape
    from invokit.permissions._quotas import of_tool
    from invokit.permissions._rules import (
        Rule,
        RuleSyntaxError,
        binding_of,
        parse_rule,
        remote_server,
    )
    from invokit.permissions._surfaces import Surface, fold, opted_in, surface_parts
    from invokit.permissions._toml import load_text

__all__ = [
    "RANK",
    "Rule",
    "RuleSyntaxError",
    "Surface",
    "binding_of",
    "escape",
    "fold",
    "load_text",
    "local_person",
    "of_tool",
    "opted_in",
    "parse_rule",
    "refusal",
    "remote_server",
    "surface_parts",
]

# name -> its private module
_WHERE = {
    "RANK": "_decision",
    "Rule": "_rules",
    "RuleSyntaxError": "_rules",
    "Surface": "_surfaces",
    "binding_of": "_rules",
    "escape": "_glob",
    "fold": "_surfaces",
    "load_text": "_toml",
    "local_person": "_deciders",
    "of_tool": "_quotas",
    "opted_in": "_surfaces",
    "parse_rule": "_rules",
    "refusal": "_deciders",
    "remote_server": "_rules",
    "surface_parts": "_surfaces",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'invokit.permissions.internal' has no attribute {name!r}")
    value = getattr(import_module(f"invokit.permissions.{module}"), name)
    globals()[name] = value
    return value
