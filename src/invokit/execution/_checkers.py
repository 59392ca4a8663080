"""Asking the host checkers (``Executor(checkers=...)``): each one's answer, read before the
decision (``_decision.ruling`` combines them with the policy's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from invokit._calls import ToolCall
from invokit.permissions import Decision

if TYPE_CHECKING:
    from invokit.permissions import PermissionChecker, PermissionRequest


def checked_by(
    checkers: tuple[PermissionChecker, ...], call: ToolCall, requests: tuple[PermissionRequest, ...]
) -> tuple[Decision, ...]:
    """Each host checker's answer for ``call`` and its ``requests``, in order."""
    return tuple(_checked(c, call, requests) for c in checkers)


def _checked(
    checker: PermissionChecker, call: ToolCall, requests: tuple[PermissionRequest, ...]
) -> Decision:
    """One host checker's answer; a checker that fails or answers nonsense denies."""
    name = type(checker).__name__
    try:
        answer = checker.check(call, requests)
    except Exception as exc:
        return Decision.deny(
            f"The permission checker {name} failed ({type(exc).__name__}); nothing ran."
        )
    if not isinstance(answer, Decision):
        return Decision.deny(
            f"The permission checker {name} returned {type(answer).__name__}, not a Decision; "
            "nothing ran."
        )
    return answer
