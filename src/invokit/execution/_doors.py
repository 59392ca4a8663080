"""The door the executor's parts go through: what they may read of the executor that wires them.

The parts (``_deciding``, ``_snapshot``, ``_standing``, ``_checking``, ``_approving``,
``_hooks``, ``_running``, ``_quotas``, ``_children``, ``_batch``) are typed against
:class:`Pipeline`, never against ``Executor``: the executor imports its parts, and no part
imports the executor back, so ``execution/`` has no import circle. What a part may read is
exactly what is declared here (``mypy`` holds them to it); ``Executor`` is the one
implementation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.execution._reporting import Reporter

if TYPE_CHECKING:
    from invokit.approvals import ApprovalDecision, ApprovalRequest, ApprovalStore, StandingRule
    from invokit.execution._artifacts import SpillStore
    from invokit.execution._authority import Authority
    from invokit.execution._invoke import Deadlines
    from invokit.execution._outcomes import Outcome
    from invokit.execution._prepared import Prepared
    from invokit.permissions import Decision, PermissionChecker, Policy
    from invokit.tools import Tool, ToolContext
    from invokit.tools.internal import ProgressCallback


class Pipeline(Reporter):
    """What the executor's parts read of it: its settings, stores and caches, and the steps
    they hand a call back to (run it, decide it again, look its tool up)."""

    approvals: ApprovalStore
    approver: Callable[[ApprovalRequest], Awaitable[ApprovalDecision | bool]] | None
    artifacts: SpillStore
    policy: Policy
    project: str
    resources: Mapping[str, Any] | None
    _policy: Policy
    _checkers: tuple[PermissionChecker, ...]
    _always: tuple[StandingRule, ...]
    """This project's "always" rules as last read from the store (``_standing``)."""
    _grants: dict[str, Authority]
    """The session grants this executor recorded, by grant id: who gave them and when."""
    _before: tuple[Any, ...]
    _after: tuple[Any, ...]
    _deadlines: Deadlines
    _set_up: dict[int, Tool]

    if TYPE_CHECKING:  # the steps, defined by ``Executor``

        def _lookup(self, name: str) -> Prepared | None: ...

        def _not_found(self, call: ToolCall) -> str: ...

        def _asked_never(self, call: ToolCall) -> bool: ...

        async def _run(
            self,
            prepared: Prepared,
            call: ToolCall,
            args: dict[str, Any],
            ctx: ToolContext | None,
            start: float,
            *,
            approved: ApprovalRequest | None,
            decision: Decision | None,
            rewritten: bool = False,
            authority: Authority | None = None,
        ) -> Outcome: ...

        async def _guarded(
            self,
            prepared: Prepared,
            call: ToolCall,
            args: dict[str, Any],
            ctx: ToolContext,
            start: float,
            *,
            approved: ApprovalRequest | None,
        ) -> Outcome: ...

        async def execute(
            self, call: ToolCall, *, on_progress: ProgressCallback | None = None
        ) -> Outcome: ...

        def concurrency_of(self, call: ToolCall) -> str: ...
