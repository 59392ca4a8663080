"""Permission requests and the policy that decides on them.

The request types load with ``import invokit``; the policy engine (rules, globs, TOML) loads on
first use of ``Policy`` or its companions, which keeps ``import invokit`` light.
"""

from __future__ import annotations

import contextlib
from importlib import import_module
from typing import TYPE_CHECKING, Any

from invokit.permissions._quotas import Quota, QuotaScope
from invokit.permissions._requests import (
    Custom,
    FileDelete,
    FileRead,
    FileWrite,
    McpInvoke,
    NetworkAccess,
    PermissionRequest,
    ShellExec,
    request_from_dict,
    request_to_dict,
)

if TYPE_CHECKING:
    from invokit.permissions._checker import PermissionChecker
    from invokit.permissions._deciders import Deciders, Person
    from invokit.permissions._decision import Decision, Explanation, RuleMatch, Verdict
    from invokit.permissions._policy import DefaultMode, Policy, ToolPolicy
    from invokit.permissions._rules import rule_for

__all__ = [
    "Custom",
    "Deciders",
    "Decision",
    "DefaultMode",
    "Explanation",
    "FileDelete",
    "FileRead",
    "FileWrite",
    "McpInvoke",
    "NetworkAccess",
    "PermissionChecker",
    "PermissionRequest",
    "Person",
    "Policy",
    "Quota",
    "QuotaScope",
    "RuleMatch",
    "ShellExec",
    "ToolPolicy",
    "Verdict",
    "request_from_dict",
    "request_to_dict",
    "rule_for",
]

_LAZY = {
    "Deciders": "_deciders",
    "Person": "_deciders",
    "PermissionChecker": "_checker",
    "Decision": "_decision",
    "Explanation": "_decision",
    "RuleMatch": "_decision",
    "Verdict": "_decision",
    "DefaultMode": "_policy",
    "Policy": "_policy",
    "ToolPolicy": "_policy",
    "rule_for": "_rules",
}


def _public(obj: Any) -> Any:
    if getattr(obj, "__module__", "").startswith("invokit.permissions._"):
        with contextlib.suppress(AttributeError, TypeError):
            obj.__module__ = __name__
    return obj


for _name in (
    "Custom",
    "FileDelete",
    "FileRead",
    "FileWrite",
    "McpInvoke",
    "NetworkAccess",
    "Quota",
    "ShellExec",
):
    _public(globals()[_name])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'invokit.permissions' has no attribute {name!r}")
    value = _public(getattr(import_module(f"invokit.permissions.{module}"), name))
    globals()[name] = value
    return value
