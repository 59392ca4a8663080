"""What an executor is bound to and may be given anew: its approval store, its policy and its
tools. Assigning one replaces it for every later call; the plans made for the old policy or
the old tools are dropped."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from invokit.execution._state_location import check_state_location

if TYPE_CHECKING:
    from invokit.approvals import ApprovalStore
    from invokit.execution._events import EventSink
    from invokit.execution._prepared import Prepared
    from invokit.permissions import Policy
    from invokit.registry import Registry


class Bindings:
    """The assignable parts of an :class:`~invokit.execution.Executor` (one of its bases)."""

    _prepared: dict[str, Prepared]
    sinks: tuple[EventSink, ...]
    _approvals: ApprovalStore
    _policy: Policy
    _registry: Registry
    _unfollow: Callable[[], None] | None = None
    """Stops following the registry assigned last (its ``subscribe``'s answer)."""

    @property
    def approvals(self) -> ApprovalStore:
        """Where approval requests live. Assigning another store replaces it for every later
        call."""
        return self._approvals

    @approvals.setter
    def approvals(self, store: ApprovalStore) -> None:
        self._approvals = store
        # A store that tells in-process that a call never asked (the memory store) spares an
        # allowed call the lookup of an earlier approval to withdraw; settled with the store.
        self._never_asked: Callable[[str], bool] | None = getattr(store, "never_asked", None)

    @property
    def policy(self) -> Policy:
        """The policy in force. Assigning another one replaces it for every later decision,
        a resume of a call asked about earlier included (the project stays as it was)."""
        return self._policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self._policy = policy
        self._prepared.clear()  # plans compiled for the old policy

    @property
    def registry(self) -> Registry:
        """The tools served. Assigning another registry replaces them for every later call
        (refused, as the constructor refuses it, when a tool may write where the approval store
        or an audit sink keeps its state), and the executor follows its changes."""
        return self._registry

    @registry.setter
    def registry(self, registry: Registry) -> None:
        if hasattr(self, "sinks"):  # an executor already made: checked as its constructor did
            check_state_location(registry, self._approvals, self.sinks)
        self._registry = registry
        self._prepared.clear()  # plans of the old registry's tools
        if self._unfollow is not None:
            self._unfollow()
        self._unfollow = registry.subscribe(self._prepared.clear)  # this one's, as it changes
