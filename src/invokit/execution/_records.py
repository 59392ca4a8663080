"""The data the executor puts in events and failure results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invokit._calls import ErrorInfo, ToolResult
from invokit.exceptions import ArgumentsError

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._authority import Authority
    from invokit.permissions import Decision


def denied_message(tool: str, decision: Decision) -> str:
    why = decision.reason or "the policy denies it"
    rule = f" (rule {decision.rule!r})" if decision.rule and decision.rule not in why else ""
    return f"Calling {tool!r} is not allowed: {why}{rule}. Do not retry the same call."


def decision_data(decision: Decision) -> dict[str, Any]:
    return {"verdict": decision.verdict, "reason": decision.reason, "rule": decision.rule}


# The data of the events of every allowed call, built from a record's parts where the event
# is made (``_recording.record_event``: an audit sink's writer thread), not on the call's path.


def received_data(arguments: Any) -> dict[str, Any]:
    return {"arguments": shown(arguments)}


def validated_data(args: dict[str, Any]) -> dict[str, Any]:
    return {"arguments": args}


def started_data() -> dict[str, Any]:
    return {}


def completed_data(
    result: ToolResult,
    args: dict[str, Any],
    decision: Decision | None,
    approved: ApprovalRequest | None,
) -> dict[str, Any]:
    return outcome_data(
        args, result.is_error, result.duration, result.truncated, result.error, decision, approved
    )


def outcome_data(
    args: dict[str, Any],
    is_error: bool,
    duration: float,
    truncated: bool,
    error: ErrorInfo | None,
    decision: Decision | None,
    approved: ApprovalRequest | None,
    authority: Authority | None = None,
) -> dict[str, Any]:
    """``completed_data`` from the result's fields: the hot path records these rather than
    the result, so an audit buffer does not keep every result alive until it is written.
    ``authority``: the session grant or "always" rule the call ran under, if one did."""
    data: dict[str, Any] = {
        "arguments": args,
        "is_error": is_error,
        "duration": duration,
        "truncated": truncated,
    }
    if error is not None:
        data["kind"] = error.kind
        data["message"] = error.message[:500]
    if decision is not None:
        data["verdict"] = decision.verdict
        data["rule"] = decision.rule
    if approved is not None:
        data["approval_id"] = approved.id
    if authority is not None:
        data["authority"] = authority.to_dict()
    return data


def argument_issues(exc: ArgumentsError) -> dict[str, Any]:
    """The issues as data (a bounded list: the validator lists the first few), with
    ``more`` when there were more."""
    data: dict[str, Any] = {
        "issues": [
            {"path": i.path, "message": i.message, "expected": i.expected, "actual": i.actual}
            for i in exc.issues
        ]
    }
    more = getattr(exc, "more", 0)
    if more:
        data["more"] = more
    if not getattr(exc, "complete", True):
        data["complete"] = False  # only the first issue was looked for: more may exist
    return data


def shown(arguments: Any) -> Any:
    if isinstance(arguments, str):
        return arguments if len(arguments) <= 4096 else arguments[:4096] + "…"
    return dict(arguments)


def not_found_message(name: str, available: list[str]) -> str:
    """What a model is told about an unknown tool: what there is, and the closest name."""
    from difflib import get_close_matches

    close = get_close_matches(name, available, n=1)
    listed = ", ".join(available) if available else "(none)"
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"No tool named {name!r}. Available tools: {listed}.{hint}"
