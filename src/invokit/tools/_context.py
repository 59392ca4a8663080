"""What a running tool can see of its call: ids, progress reporting, cancellation, resources."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from invokit.exceptions import NotJsonSafe
from invokit.schema import to_jsonable

if TYPE_CHECKING:
    from invokit._calls import ToolCall
    from invokit._spec import OutputLimit
    from invokit.permissions import PermissionRequest

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress:
    """One progress report from a running tool (yield it from a streaming tool, or see it in
    ``Executor.stream``)."""

    progress: float | None = None
    total: float | None = None
    message: str | None = None
    data: Any = None
    """A partial result a streaming tool yielded."""


ProgressCallback = Callable[[Progress], Awaitable[None]]


class ToolContext:
    """Passed to a tool that asks for it (a parameter typed ``ToolContext``); never in its schema.

    Attributes:
        call: the call being run (``None`` when a tool is invoked directly).
        resources: shared objects the host put on the executor (clients, pools).
        credentials: what the host supplied when resuming an ``AuthRequired`` interrupt;
            never shown to the model.
        output_limit: the output limit the executor will apply to this call's result
            (``None`` when the tool is invoked directly): a tool that pages its output sizes a
            page to fit it, so the limit never cuts a result that says it is complete.
    """

    __slots__ = (
        "_args",
        "_cancelled",
        "_ceiling",
        "_key",
        "_on_progress",
        "_policy",
        "_tool_name",
        "call",
        "credentials",
        "output_limit",
        "resources",
    )

    def __init__(
        self,
        call: ToolCall | None = None,
        *,
        tool_name: str | None = None,
        resources: Mapping[str, Any] | None = None,
        credentials: Mapping[str, Any] | None = None,
        on_progress: ProgressCallback | None = None,
        idempotency_key: str | None = None,
        call_id: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
    ) -> None:
        if call is None and call_id is not None:
            from invokit._calls import ToolCall

            call = ToolCall(
                id=call_id, name=tool_name or "", session_id=session_id, turn_id=turn_id
            )
        self.call = call
        self._tool_name = tool_name
        self.resources = resources if resources is not None else _EMPTY
        self.credentials = credentials if credentials is not None else _EMPTY
        self._on_progress = on_progress
        self._cancelled = False
        self._key = idempotency_key
        self._policy: Any = None
        self._args: Mapping[str, Any] = _EMPTY
        self._ceiling = "allow"
        self.output_limit: OutputLimit | None = None

    @property
    def call_id(self) -> str:
        """The model's call id."""
        return self.call.id if self.call is not None else "local"

    @property
    def tool_name(self) -> str:
        """The tool being run."""
        if self._tool_name is not None:
            return self._tool_name
        return self.call.name if self.call is not None else ""

    @property
    def session_id(self) -> str | None:
        """The conversation the call belongs to, if the host said."""
        return self.call.session_id if self.call is not None else None

    @property
    def turn_id(self) -> str | None:
        """The model turn that made the call, if the host said."""
        return self.call.turn_id if self.call is not None else None

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The call's metadata."""
        return self.call.metadata if self.call is not None else _EMPTY

    @property
    def idempotency_key(self) -> str:
        """Stable for one call across interrupts and resumes (even in another process): pass it
        to payment or ticket APIs so a side effect happens once.

        It binds the tool name, the canonical validated arguments, the session and the call
        id: a retry of the same call gets the same key; two different calls never share one,
        even when a model reuses a call id.
        """
        if self._key is not None:
            return self._key
        import hashlib

        from invokit._canonical import canonical_hash

        arguments: object = self._args
        bound = arguments is not _EMPTY
        if not bound and self.call is not None:  # not (yet) run by an executor: the raw ones
            arguments = self.call.arguments
            if isinstance(arguments, str | bytes):
                import json

                with contextlib.suppress(ValueError):
                    arguments = json.loads(arguments)
        try:
            digest = canonical_hash(arguments)
        except Exception:  # raw arguments that are not JSON: their text stands for them
            digest = hashlib.sha256(repr(arguments).encode("utf-8", "surrogatepass")).hexdigest()
        seed = "\x00".join((self.tool_name, digest, self.session_id or "", self.call_id))
        key = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        if bound:
            self._key = key
        return key

    def bind_policy(self, policy: Any, args: Mapping[str, Any], ceiling: str = "allow") -> None:
        """Let :meth:`permits` consult ``policy`` (the executor's, compiled for this tool).

        ``ceiling`` is the verdict the call itself got and passed: ``allow``, or ``ask`` when a
        person approved it (then targets that only need approval are covered too).
        """
        self._policy = policy
        self._args = args
        self._ceiling = ceiling

    def permits(self, request: PermissionRequest, *, approval_covers: bool = True) -> bool:
        """Whether the policy in force covers this call touching ``request``'s target.

        Tools that reach more than they could declare up front (a recursive search, a glob, a
        directory move) ask this for each path and leave out (or refuse) what the call's own
        decision does not cover: anything denied, and anything that would need an approval the
        call did not get. With ``approval_covers=False`` an approval given for the call does not
        cover the target either (a redirect to a place the person never saw): only what the
        policy allows outright is permitted. Without an executor's policy, everything is.
        """
        if self._policy is None:
            return True
        verdict = self._policy.decide(self._args, (request,)).verdict
        return verdict == "allow" or (
            approval_covers and verdict == "ask" and self._ceiling == "ask"
        )

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled or timed out; sync tools in threads should check it."""
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (the executor does this on timeout and cancellation)."""
        self._cancelled = True

    async def report_progress(
        self, progress: float | None = None, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far along the call is (an MCP progress notification, a UI bar).

        What reaches the caller is JSON-safe: ``progress`` and ``total`` finite numbers (else
        left out), ``message`` text."""
        if self._on_progress is not None:
            await self._on_progress(
                Progress(progress=_amount(progress), total=_amount(total), message=_text(message))
            )

    async def emit(self, data: Any) -> None:
        """Report a partial result (what a streaming tool yields), converted to JSON data as a
        result is (:func:`~invokit.schema.to_jsonable`); a value with no JSON form raises
        :class:`~invokit.exceptions.NotJsonSafe`, so the call fails as it would returning it."""
        # Checked whether or not anyone listens: a tool behaves the same under every caller.
        safe = to_jsonable(data)
        if self._on_progress is not None:
            await self._on_progress(Progress(data=safe))

    def __repr__(self) -> str:
        return f"ToolContext(call_id={self.call_id!r}, tool_name={self.tool_name!r})"


def _amount(value: Any) -> float | None:
    """A progress amount as a finite number, else ``None`` (a bool, NaN or a non-number is no
    amount a caller can show)."""
    if value is None or isinstance(value, bool):
        return None
    kind = type(value)
    if kind is int or kind is float:
        return value if math.isfinite(value) else None
    try:
        number = float(value)  # Decimal, Fraction, numpy scalars, int subclasses
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _text(value: Any) -> str | None:
    """A progress message as plain text: itself, a str subclass's text, or JSON of another
    value (its type's name when it has no JSON form)."""
    if value is None or type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False)
    except NotJsonSafe:
        return f"<{type(value).__name__}>"
