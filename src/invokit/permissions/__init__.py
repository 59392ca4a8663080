"""Permission requests and the policy that decides on them."""

import contextlib

from invokit.permissions._decision import Decision, Explanation, RuleMatch, Verdict
from invokit.permissions._policy import DefaultMode, Policy, ToolPolicy
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
from invokit.permissions._rules import rule_for

__all__ = [
    "Custom",
    "Decision",
    "DefaultMode",
    "Explanation",
    "FileDelete",
    "FileRead",
    "FileWrite",
    "McpInvoke",
    "NetworkAccess",
    "PermissionRequest",
    "Policy",
    "RuleMatch",
    "ShellExec",
    "ToolPolicy",
    "Verdict",
    "request_from_dict",
    "request_to_dict",
    "rule_for",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("invokit.permissions._"):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = __name__
