"""The quota step: after a call was decided and approved, just before it runs, count it
against every quota of its tool, in the approval store (shared by processes and replicas).

A tool without quotas never reaches this module: ``Prepared.quotas`` is empty and the
pipeline checks only that.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.execution._outcomes import Failed
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.execution._doors import Counting
    from invokit.execution._prepared import Prepared
    from invokit.permissions import PermissionRequest, Quota
    from invokit.permissions.internal import Rule


def quota_key(quota: Quota, call: ToolCall, tool: str, project: str | None) -> str:
    """The count's key: the quota, the tool it counts, its scope's id and the project."""
    if quota.per == "session":
        scope = f"session={call.session_id or ''}"
    elif quota.per == "turn":
        scope = f"turn={call.turn_id or ''}"
    else:
        scope = "project"
    return f"quota|{project or ''}|{tool}|{quota.label}|{scope}"


async def check_quotas(
    ex: Counting, prepared: Prepared, call: ToolCall, args: Mapping[str, Any], start: float
) -> Failed | None:
    """Count ``call`` against each of its tool's quotas (a rule's quota only when its rule
    matches the call); the first one exceeded refuses it (``quota_exceeded``, saying when the
    next call is allowed). A count already recorded for an earlier quota of the same call
    stays (the call was attempted)."""
    tool = prepared.counted_as or str(prepared.spec.name)
    now = time.time()
    requests: tuple[PermissionRequest, ...] | None = None
    for quota in prepared.quotas:
        if quota.rule is not None:
            if requests is None:  # the call's requests, asked once, only for rule quotas
                requests = tuple(prepared.tool.permissions(args, ToolContext(call)))
            if not _matches(quota.parsed(), args, requests, ex.policy.root):
                continue
        key = quota_key(quota, call, tool, ex.project)
        try:
            retry = await ex.approvals.count_call(
                key, limit=quota.calls, window=quota.window, now=now
            )
        except Exception as exc:  # no count, no call: a quota that cannot be kept refuses
            return ex._failed(
                call,
                start,
                "quota_unavailable",
                f"The quota of {tool!r} could not be counted ({type(exc).__name__}); nothing ran.",
            )
        if retry is not None:
            return ex._failed(
                call,
                start,
                "quota_exceeded",
                exceeded_message(tool, quota, retry, now),
                data={
                    "quota": quota.describe(),
                    "retry_at": None if math.isinf(retry) else retry,
                },
            )
    return None


def _matches(
    rule: Rule, args: Mapping[str, Any], requests: tuple[PermissionRequest, ...], root: str | None
) -> bool:
    """Whether a quota's rule matches the call: any of its requests, or the call itself."""
    if not rule.has_body:
        return True
    subjects: tuple[PermissionRequest | None, ...] = requests or (None,)
    return any(rule.matches(args, subject, root) for subject in subjects)


def exceeded_message(tool: str, quota: Quota, retry: float, now: float) -> str:
    """What the model reads: the limit, and when the next call is allowed (or that none is)."""
    limit = f"{tool!r} may run at most {quota.describe()}; nothing ran."
    if math.isinf(retry):
        if quota.per == "project":
            return f"Quota exceeded: {limit} No more calls are allowed."
        return f"Quota exceeded: {limit} No more calls are allowed in this {quota.per}."
    when = datetime.fromtimestamp(retry, UTC).isoformat(timespec="seconds")
    return (
        f"Quota exceeded: {limit} The next call is allowed in {max(retry - now, 0.0):.1f} s "
        f"(at {when})."
    )
