"""The door into ``invokit.approvals`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.approvals`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

# the SQL rows and guards that the SQLite and PostgreSQL stores share
from invokit.approvals import _sqlcore as sqlcore
from invokit.approvals._always import applies_as_pattern, is_pinned, pinned_rule
from invokit.approvals._lease import (
    LeaseKeeper,
    current_lease,
    lapse_decision,
    lapsed,
    leased,
    shown_time,
)
from invokit.approvals._sqlite import DEFAULT_FILE as APPROVALS_FILE
from invokit.approvals._standing import check_scope
from invokit.approvals._store import (
    already_stored,
    call_record,
    check_rule,
    consume_refusal,
    effective_status,
    interrupt_expired,
    interrupt_missing,
    interrupt_refusal,
    interrupt_used,
    new_rule,
    next_allowed,
    resolve_refusal,
    withdraw_refusal,
)

__all__ = [
    "APPROVALS_FILE",
    "LeaseKeeper",
    "already_stored",
    "applies_as_pattern",
    "call_record",
    "check_rule",
    "check_scope",
    "consume_refusal",
    "current_lease",
    "effective_status",
    "interrupt_expired",
    "interrupt_missing",
    "interrupt_refusal",
    "interrupt_used",
    "is_pinned",
    "lapse_decision",
    "lapsed",
    "leased",
    "new_rule",
    "next_allowed",
    "pinned_rule",
    "resolve_refusal",
    "shown_time",
    "sqlcore",
    "withdraw_refusal",
]
