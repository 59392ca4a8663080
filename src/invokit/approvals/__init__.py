"""Approvals: a call the policy asks about waits here for a person, bound to that exact call."""

import contextlib

from invokit.approvals._always import always_rule_preview
from invokit.approvals._lease import DEFAULT_LEASE, LeasedStore
from invokit.approvals._memory import MemoryApprovalStore
from invokit.approvals._models import (
    DEFAULT_TTL,
    ApprovalChannel,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequest,
    ApprovalScope,
    ApprovalStatus,
)
from invokit.approvals._sqlite import SqliteApprovalStore
from invokit.approvals._standing import SessionGrant, StandingRule
from invokit.approvals._store import ApprovalStore

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_TTL",
    "ApprovalChannel",
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "ApprovalScope",
    "ApprovalStatus",
    "ApprovalStore",
    "LeasedStore",
    "MemoryApprovalStore",
    "SessionGrant",
    "SqliteApprovalStore",
    "StandingRule",
    "always_rule_preview",
]

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) and _obj.__module__.startswith("invokit.approvals._"):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = __name__
