"""What ``Executor.execute`` returns: the call completed, failed before running, or paused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from invokit._calls import ToolCall, ToolResult

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest


@dataclass(frozen=True, slots=True)
class Completed:
    """The tool ran. ``result.is_error`` may still be true (the tool failed): the model reads it."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class Failed:
    """The call was refused or broken before the tool ran (unknown tool, invalid arguments,
    denied, approval denied or expired). ``result`` is an error result the model can read."""

    result: ToolResult


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequired:
    """A person must approve the call; resume with ``executor.resume(request.id, approve=...)``."""

    kind: ClassVar[Literal["approval"]] = "approval"
    request: ApprovalRequest

    @property
    def id(self) -> str:
        return self.request.id

    @property
    def call(self) -> ToolCall:
        return self.request.call

    def message(self) -> str:
        return (
            f"Tool {self.request.tool!r} needs a person's approval ({self.request.reason}). "
            f"Approval id: {self.request.id}. It runs once approved; approve with "
            f"`invokit approvals approve {self.request.id}`."
        )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "request": self.request.to_dict()}


@dataclass(frozen=True, kw_only=True, slots=True)
class AuthorizationRequired:
    """The tool raised ``AuthRequired``; resume with ``executor.resume(self, credentials=...)``."""

    kind: ClassVar[Literal["auth"]] = "auth"
    id: str
    call: ToolCall
    arguments: dict[str, Any]
    provider: str
    scopes: tuple[str, ...] = ()
    challenge: dict[str, Any] = field(default_factory=dict)

    def message(self) -> str:
        scopes = f" (scopes: {', '.join(self.scopes)})" if self.scopes else ""
        return f"Tool {self.call.name!r} needs authorization with {self.provider}{scopes}."

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "call": self.call.to_dict(),
            "arguments": self.arguments,
            "provider": self.provider,
            "scopes": list(self.scopes),
            "challenge": self.challenge,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class ExternalCall:
    """A declaration-only tool was called; the host runs it and resumes with
    ``executor.resume(self, result=...)``."""

    kind: ClassVar[Literal["external"]] = "external"
    id: str
    call: ToolCall
    arguments: dict[str, Any]

    def message(self) -> str:
        return f"Tool {self.call.name!r} is run by the host; waiting for its result."

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "call": self.call.to_dict(),
            "arguments": self.arguments,
        }


Interrupt: TypeAlias = ApprovalRequired | AuthorizationRequired | ExternalCall


def interrupt_from_dict(data: dict[str, Any]) -> Interrupt:
    """Rebuild an interrupt from its ``to_dict`` form (another process may resume it)."""
    kind = data["kind"]
    if kind == "approval":
        from invokit.approvals import ApprovalRequest

        return ApprovalRequired(request=ApprovalRequest.from_dict(data["request"]))
    call = ToolCall.from_dict(data["call"])
    if kind == "auth":
        return AuthorizationRequired(
            id=data["id"],
            call=call,
            arguments=dict(data["arguments"]),
            provider=data["provider"],
            scopes=tuple(data.get("scopes", ())),
            challenge=dict(data.get("challenge") or {}),
        )
    if kind == "external":
        return ExternalCall(id=data["id"], call=call, arguments=dict(data["arguments"]))
    raise ValueError(f"unknown interrupt kind {kind!r}")


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The call is paused: an approval, credentials, or a host-run result is needed."""

    interrupt: Interrupt

    @property
    def result(self) -> ToolResult:
        """A placeholder error result saying what the call waits for (for hosts that must
        answer the model now, such as an MCP server whose client cannot ask)."""
        interrupt = self.interrupt
        return ToolResult.failure(
            interrupt.call,
            f"{interrupt.kind}_required",
            interrupt.message(),
            metadata={"interrupt_id": interrupt.id},
        )


Outcome: TypeAlias = Completed | Failed | Interrupted


# Outcomes are built for every call: fill their one slot directly (see _calls.new_result).
_set_completed = Completed.__dict__["result"].__set__
_set_failed = Failed.__dict__["result"].__set__


def completed(result: ToolResult) -> Completed:
    """``Completed(result)``, faster."""
    outcome: Completed = object.__new__(Completed)
    _set_completed(outcome, result)
    return outcome


def failed(result: ToolResult) -> Failed:
    """``Failed(result)``, faster."""
    outcome: Failed = object.__new__(Failed)
    _set_failed(outcome, result)
    return outcome
