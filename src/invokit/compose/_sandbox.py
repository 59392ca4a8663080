"""The small protocol a script runtime implements, and the steps a running script takes.

The host drives the script: it starts it, gets back either a pending call of one of the
script's functions or the end of the script, answers the call, and so on. No callback runs
inside the runtime, so every tool call can go through the executor (and pause for a person).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

ScriptFailure = Literal[
    "script_error", "script_timeout", "script_memory_exceeded", "script_syntax_error"
]


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingCall:
    """The script called a function of the host and waits for its answer."""

    function: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    line: int | None = None
    """The script line of the call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Finished:
    """The script ended; ``value`` is its last expression's value."""

    value: Any = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Crashed:
    """The script stopped on an error it did not catch, or on one of its limits."""

    kind: ScriptFailure
    error_type: str
    message: str
    line: int | None = None


Step = PendingCall | Finished | Crashed


@dataclass(frozen=True, kw_only=True, slots=True)
class Raise:
    """An answer that raises ``error_type(message)`` at the pending call in the script."""

    error_type: str
    message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptLimits:
    """What a script may use, besides the tool calls the executor decides one by one."""

    max_tool_calls: int = 50
    """Tool calls per script; the next one raises ``RuntimeError`` in the script."""
    max_script_chars: int = 64_000
    """Longer scripts are refused before they start."""
    max_seconds: float = 10.0
    """The script's own running time (waiting on tool calls excluded)."""
    max_memory: int = 64 * 1024 * 1024
    """Heap bytes."""
    max_print_chars: int = 20_000
    """``print`` output kept for the result; the rest is cut."""


CUT_NOTE = "\n[print output cut at the limit]\n"
"""Ends the kept part of ``print`` output that reached :attr:`ScriptLimits.max_print_chars`."""


def cut_print(text: str, room: int) -> str:
    """What to keep of ``text`` with ``room`` characters left: all of it, or the part that
    fits and :data:`CUT_NOTE` (the first time only: past the limit, ``room`` is negative)."""
    if room < 0:
        return ""
    if len(text) <= room:
        return text
    return text[:room] + CUT_NOTE


@runtime_checkable
class ScriptRun(Protocol):
    """One running script."""

    async def start(self) -> Step:
        """Run the script up to its first pending call, or its end."""
        ...

    async def answer(self, reply: Any) -> Step:
        """Answer the pending call with a value or a :class:`Raise`; run to the next step."""
        ...

    def dump(self) -> bytes | None:
        """The paused script's state, to continue it later from :meth:`ScriptSandbox.restore`
        in any process (``None``: this runtime cannot keep a paused script)."""
        ...

    def printed(self) -> str:
        """What the script printed so far."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class ScriptSandbox(Protocol):
    """A runtime for compose scripts."""

    name: str
    """Recorded with a paused script, so it resumes in the same kind of runtime."""

    def run(self, code: str, functions: Mapping[str, Any], limits: ScriptLimits) -> ScriptRun:
        """A run of ``code`` whose undefined ``functions`` are answered by the host."""
        ...

    async def restore(
        self,
        state: bytes,
        code: str,
        functions: Mapping[str, Any],
        limits: ScriptLimits,
        printed: str,
    ) -> tuple[ScriptRun, Step]:
        """The paused run of ``code`` from its :meth:`ScriptRun.dump`, and its pending step."""
        ...

    async def aclose(self) -> None: ...
