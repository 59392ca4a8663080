"""What the bounded-cost tests observe instead of time: which patterns reach this process's
regular-expression compiler, which processes the server starts, which thread does the work,
whether an expression can backtrack, and the turns another task on the loop gets meanwhile.

Every observation is an event counted, never a duration: a loaded machine changes none of them.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import pytest

from tests._turns import Beside

T = TypeVar("T")

_constants = importlib.import_module("re._constants")
_parser: Any = importlib.import_module("re._parser")
_compiler: Any = importlib.import_module("re._compiler")


# -- the loop served ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Served(Generic[T]):
    """What the work returned, and the turns a task beside it got on the loop meanwhile."""

    value: T
    turns: int
    """Turns the loop gave the other task while the work ran."""
    watched: int
    """Those of the turns on which ``watch()`` held (a matching process alive, say)."""


async def while_served(
    work: Callable[[], Awaitable[T]], *, watch: Callable[[], bool] = lambda: False
) -> Served[T]:
    """Await ``work()`` with another task beside it that yields at every turn (no timer) and
    counts the turns the loop gives it, and those on which ``watch()`` is true."""
    other = Beside(watch)
    async with anyio.create_task_group() as group:
        group.start_soon(other.run)
        try:
            value = await work()
        finally:
            other.stop()
    return Served(value=value, turns=other.turns, watched=other.watched)


# -- processes ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Started:
    """A process started while the spy was on."""

    pid: int
    argv: tuple[str, ...]

    def alive(self) -> bool:
        """Whether it still runs (a zombie waiting to be reaped does not)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def started_processes(monkeypatch: pytest.MonkeyPatch) -> list[Started]:
    """Every process started through ``subprocess.Popen`` from now on, in order."""
    started: list[Started] = []
    real = subprocess.Popen

    class Recorded(real):  # type: ignore[valid-type,misc]
        def __init__(self, args: Any, *rest: Any, **options: Any) -> None:
            super().__init__(args, *rest, **options)
            argv = (args,) if isinstance(args, str | bytes) else tuple(args)
            started.append(Started(pid=self.pid, argv=tuple(str(part) for part in argv)))

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    return started


# -- the compiler ---------------------------------------------------------------------------


def compiles_of(monkeypatch: pytest.MonkeyPatch, needle: str) -> list[str]:
    """Every expression holding ``needle`` that reaches this process's regular-expression
    compiler from now on (through ``re``'s cache, its compiler or its parser), on any thread.

    A needle of fewer than 8 characters is looked for as the whole expression only (``(``
    is in every other expression). Each is refused as well as recorded, so a catastrophic
    pattern never runs here."""
    seen: list[str] = []
    distinctive = len(needle) >= 8

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def checked(pattern: Any, *args: Any, **kwargs: Any) -> Any:
            text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
            if isinstance(text, str) and (text == needle or (distinctive and needle in text)):
                seen.append(text)
                raise AssertionError(f"the server compiled the pattern {text[:60]!r}")
            return real(pattern, *args, **kwargs)

        return checked

    monkeypatch.setattr(re, "_compile", spy(re.__dict__["_compile"]))
    monkeypatch.setattr(_compiler, "compile", spy(_compiler.compile))
    monkeypatch.setattr(_parser, "parse", spy(_parser.parse))
    return seen


def calls_of(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[int, Any]]:
    """Each later call of ``owner.<name>``: the calling thread and its first argument."""
    real = getattr(owner, name)
    seen: list[tuple[int, Any]] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append((threading.get_ident(), args[0] if args else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return seen


# -- backtracking ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Repeats:
    """The unbounded repeats of an expression that a backtracking engine may retry."""

    retried: int
    """Greedy or lazy unbounded repeats outside atomic groups and look-arounds: once the text
    after one fails, the engine comes back into it for another length."""
    nested: int
    """Unbounded repeats (not possessive) inside another unbounded repeat: the shape of
    ``(a+)+``, exponential on a text that almost matches."""


def repeats(expression: str) -> Repeats:
    """Count the repeats of ``expression`` that can make matching super-linear.

    With at most one retried repeat and no nested one, every other repeat is placed once and
    never revisited: matching is O(len(text) x len(pattern)), the argument
    :mod:`invokit._wildcard` builds globs on."""
    found = {"retried": 0, "nested": 0}
    _walk(_parser.parse(expression), found, atomic=False, repeated=False)
    return Repeats(retried=found["retried"], nested=found["nested"])


def _walk(pattern: Any, found: dict[str, int], *, atomic: bool, repeated: bool) -> None:
    c = _constants
    for op, av in pattern:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            unbounded = av[1] == c.MAXREPEAT
            if unbounded:
                found["retried"] += not atomic
                found["nested"] += repeated
            _walk(av[2], found, atomic=atomic, repeated=repeated or unbounded)
        elif op == c.POSSESSIVE_REPEAT:
            _walk(av[2], found, atomic=True, repeated=repeated)
        elif op == c.ATOMIC_GROUP:
            _walk(av, found, atomic=True, repeated=repeated)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            _walk(av[1], found, atomic=True, repeated=repeated)
        elif op == c.SUBPATTERN:
            _walk(av[3], found, atomic=atomic, repeated=repeated)
        elif op == c.BRANCH:
            for branch in av[1]:
                _walk(branch, found, atomic=atomic, repeated=repeated)
        elif op == c.GROUPREF_EXISTS:
            for branch in av[1:]:
                if branch is not None:
                    _walk(branch, found, atomic=atomic, repeated=repeated)


def linear(expression: str) -> bool:
    """Whether ``expression`` has the shape :mod:`invokit._wildcard` builds: at most one
    retried repeat and no nested one (enough for linear matching, not needed for it:
    ``(?:[^/]++/)*[^/]*`` is linear too, its two repeats never covering the same text)."""
    counted = repeats(expression)
    return counted.retried <= 1 and counted.nested == 0
