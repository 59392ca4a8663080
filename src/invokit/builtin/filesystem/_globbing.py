"""Glob patterns (``*``, ``?``, ``[...]``, ``{a,b}``, ``**``) matched against root-relative paths.

Patterns are translated to regular expressions and matched against paths the safe walker
produces; they are never handed to the operating system, so a pattern cannot reach anything the
walker does not. ``*`` matches dot files too, and never crosses a ``/``; ``**`` as a whole
component matches any number of directories.

The expressions cannot backtrack catastrophically (see :mod:`invokit._wildcard`): matching one
path costs at most O(len(path) x len(pattern)). Patterns are capped at :data:`MAX_GLOB_CHARS`
characters, ``{a,b}`` choices at :data:`MAX_CHOICES` alternatives per component, and the
regular expression a pattern expands to (choices multiply the pieces they hold) at
:data:`MAX_GLOB_REGEX` characters; all three are refused before anything is built or compiled, so
compiling the largest accepted glob takes milliseconds. An invalid character class (``[z-a]``) is
the caller's error too: every refusal is a :class:`~invokit.exceptions.RetryWithFeedback`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from invokit._wildcard import DIRS, SEGMENT, Item, chain
from invokit.builtin.filesystem._paths import split_relative
from invokit.exceptions import RetryWithFeedback

__all__ = [
    "MAX_CHOICES",
    "MAX_GLOB_CHARS",
    "MAX_GLOB_REGEX",
    "Glob",
    "compile_component",
    "compile_glob",
]

MAX_GLOB_CHARS = 1024
"""Longest glob pattern accepted."""
MAX_CHOICES = 256
"""Most alternatives the ``{a,b}`` choices of one component may expand to."""
MAX_GLOB_REGEX = 8192
"""Most characters the regular expression of one glob may have, counted before it is built
(ordinary brace-free patterns under :data:`MAX_GLOB_CHARS` fit; ``{a,b}`` choices multiply the
pieces of their component). Compiling an expression this size takes about 10 ms."""

_MAGIC = frozenset("*?[{\\")


@dataclass(frozen=True, kw_only=True, slots=True)
class Glob:
    """A compiled glob over root-relative paths."""

    pattern: str
    """The pattern as given."""
    regex: re.Pattern[str]
    """Matches a whole root-relative path."""
    start: tuple[str, ...]
    """The literal leading directories: the walk can begin there."""
    max_depth: int | None
    """Levels below :attr:`start` that can match (``None`` with ``**``)."""

    def matches(self, path: str) -> bool:
        """Whether the root-relative ``path`` matches."""
        return self.regex.fullmatch(path) is not None


def compile_glob(pattern: str, base: tuple[str, ...] = ()) -> Glob:
    """Compile ``pattern``, relative to the directory ``base``.

    Raises:
        AccessDenied: the pattern is absolute or climbs with ``..``.
        RetryWithFeedback: the pattern is empty, too long, has too many choices, expands to too
            large an expression, or is invalid (a bad character class).
    """
    _check_size(pattern)
    budget = _Budget(pattern)
    parts = split_relative(pattern)
    if not parts:
        raise RetryWithFeedback(f"Glob pattern {pattern!r} matches nothing; try '**/*'")
    literal = 0
    while literal < len(parts) - 1 and not _MAGIC.intersection(parts[literal]):
        literal += 1
    items: list[Item] = [re.escape(name) + "/" for name in base]
    last = len(parts) - 1
    for index, part in enumerate(parts):
        if part == "**":
            items.append(".+" if index == last else DIRS)
        else:
            items.append(_component(part, "/" if index < last else "", budget))
    depth = None if "**" in parts[literal:] else len(parts) - literal
    return Glob(
        pattern=pattern,
        regex=_compiled(pattern, _tail(items) if items[-1] == ".+" else chain(items)),
        start=base + parts[:literal],
        max_depth=depth,
    )


def compile_component(part: str) -> re.Pattern[str]:
    """Compile the glob of one path component (a file name: ``*.py``, ``{a,b}.txt``)."""
    _check_size(part)
    return _compiled(part, _component(part, "", _Budget(part)))


def _compiled(pattern: str, expression: str) -> re.Pattern[str]:
    try:
        return re.compile(expression, re.DOTALL)
    except (re.error, RecursionError, OverflowError) as error:
        reason = getattr(error, "msg", error)
        raise RetryWithFeedback(
            f"Invalid glob pattern {pattern!r}: {reason}. Check its [...] character classes (a "
            "range such as [a-z] must go from low to high).",
            data={"pattern": pattern},
        ) from None


class _Budget:
    """What is left of :data:`MAX_GLOB_REGEX` for the components of one pattern."""

    __slots__ = ("left", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.left = MAX_GLOB_REGEX

    def check(self, size: int) -> None:
        """Refuse the pattern if the component being built would need ``size`` characters."""
        if size > self.left:
            raise RetryWithFeedback(
                f"The glob pattern {self.pattern[:100]!r} expands to a regular expression of "
                f"more than {MAX_GLOB_REGEX} characters ({{...}} choices multiply the wildcards "
                "and characters around them); use fewer choices, a shorter pattern, or several "
                "calls.",
                data={"max_regex_chars": MAX_GLOB_REGEX},
            )

    def spend(self, size: int) -> None:
        self.check(size)
        self.left -= size


def _cost(items: list[Item]) -> int:
    """Characters ``items`` take in an expression, at most (a star in its atomic group)."""
    return sum(len(item) if isinstance(item, str) else len(item.lazy) + 4 for item in items)


def _tail(items: list[Item]) -> str:
    """A pattern ending in ``**``: the stars just before the final ``.+`` add nothing."""
    body = items[:-1]
    while body and body[-1] is DIRS:
        body.pop()
    return chain([*body, ".+"])


def _check_size(pattern: str) -> None:
    if len(pattern) > MAX_GLOB_CHARS:
        raise RetryWithFeedback(
            f"The glob pattern has {len(pattern)} characters; at most {MAX_GLOB_CHARS} are "
            "accepted. Use a shorter pattern.",
            data={"max_chars": MAX_GLOB_CHARS},
        )


def _component(part: str, end: str, budget: _Budget) -> str:
    """One component: its choices, each a chain ending with ``end``, in one atomic group (any
    choice that matches consumes the same whole segment)."""
    choices = _expand(part, budget)
    budget.spend(sum(_cost(choice) + _ALT_COST for choice in choices))
    if len(choices) == 1 and not end:
        return chain(choices[0]) + "(?![^/])"
    body = "|".join(chain(choice) + (end or "(?![^/])") for choice in choices)
    return f"(?>{body})"


_ALT_COST = 12
"""Characters around each alternative of a component: its end, ``|``, the atomic group."""


def _expand(part: str, budget: _Budget) -> list[list[Item]]:
    """The brace-free alternatives of a component, each as pieces and stars; refused (before
    they are built) when they would take more of the expression than ``budget`` has left."""
    alternatives: list[list[Item]] = [[]]
    size = 0  # the characters all the alternatives take
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        options: list[list[Item]]
        if char == "*":
            while index < len(part) and part[index] == "*":
                index += 1  # a run of stars inside a component is one star
            options = [[SEGMENT]]
        elif char == "?":
            options = [["[^/]"]]
        elif char == "\\" and index < len(part):
            options = [[re.escape(part[index])]]
            index += 1
        elif char == "[":
            end = _class_end(part, index)
            if end < 0:
                options = [[re.escape(char)]]
            else:
                options = [[_char_class(part[index:end])]]
                index = end + 1
        elif char == "{":
            end = part.find("}", index)
            if end < 0:
                options = [[re.escape(char)]]
            else:
                options = [
                    alt for choice in part[index:end].split(",") for alt in _expand(choice, budget)
                ]
                index = end + 1
        else:
            options = [[re.escape(char)]]
        if len(alternatives) * len(options) > MAX_CHOICES:
            raise RetryWithFeedback(
                f"The {{...}} choices in {part!r} expand to more than {MAX_CHOICES} "
                "alternatives; use fewer choices or several calls.",
                data={"max_choices": MAX_CHOICES},
            )
        costs = [_cost(option) for option in options]
        size = size * len(options) + len(alternatives) * sum(costs)
        budget.check(size + len(alternatives) * len(options) * _ALT_COST)
        alternatives = [head + option for head in alternatives for option in options]
    return alternatives


def _class_end(part: str, start: int) -> int:
    """Index of the ``]`` closing a class that opened just before ``start``, or -1."""
    index = start
    if index < len(part) and part[index] in "!^":
        index += 1
    if index < len(part) and part[index] == "]":
        index += 1  # a leading ] is a member, not the end
    return part.find("]", index)


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members = "".join("\\" + c if c in "\\^[]" else c for c in body)
    return f"[^/{members}]" if negate else f"(?:(?!/)[{members}])"
