"""The executor and what it returns: outcomes, interrupts, hooks, limits and events."""

from invokit.execution._events import Event, EventSink
from invokit.execution._executor import Approver, Executor
from invokit.execution._hooks import Continue, Halt, Hook, HookAction, Rewrite, Skip
from invokit.execution._limits import ArtifactStore, Limits
from invokit.execution._outcomes import (
    ApprovalRequired,
    AuthorizationRequired,
    Completed,
    ExternalCall,
    Failed,
    Interrupt,
    Interrupted,
    Outcome,
    interrupt_from_dict,
)

__all__ = [
    "ApprovalRequired",
    "Approver",
    "ArtifactStore",
    "AuthorizationRequired",
    "Completed",
    "Continue",
    "Event",
    "EventSink",
    "Executor",
    "ExternalCall",
    "Failed",
    "Halt",
    "Hook",
    "HookAction",
    "Interrupt",
    "Interrupted",
    "Limits",
    "Outcome",
    "Rewrite",
    "Skip",
    "interrupt_from_dict",
]
