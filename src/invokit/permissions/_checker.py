"""The one protocol through which host code takes part in the decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from invokit._calls import ToolCall
    from invokit.permissions._decision import Decision
    from invokit.permissions._requests import PermissionRequest


@runtime_checkable
class PermissionChecker(Protocol):
    """Host code that sees each call and its permission requests and answers allow, deny or ask.

    Pass checkers as ``Executor(..., checkers=[...])``. Every call the executor decides (a
    first call, a retry, a resume, edited arguments, ``check``) asks each checker; its answer
    is combined with the policy's by the policy's own rule: a deny wins, an ask beats an allow.
    A checker can only make a call stricter: its ``allow`` never overrides the policy's ``ask``
    or ``deny``. A checker that raises, or returns something other than a
    :class:`~invokit.permissions.Decision`, denies the call (nothing runs).

    ``check`` is synchronous and should be quick and free of side effects: ``check`` and
    ``explain`` call it too, and it is asked again whenever the call is decided again.
    """

    def check(self, call: ToolCall, requests: Sequence[PermissionRequest]) -> Decision:
        """The checker's answer for ``call`` and its permission ``requests``."""
        ...
