"""Glob patterns (``*``, ``?``, ``[...]``, ``{a,b}``, ``**``) matched against root-relative paths.

Patterns are translated to regular expressions and matched against paths the safe walker
produces; they are never handed to the operating system, so a pattern cannot reach anything the
walker does not. ``*`` matches dot files too, and never crosses a ``/``; ``**`` as a whole
component matches any number of directories.

The expressions cannot backtrack catastrophically (see :mod:`invokit._wildcard`): matching one
path costs at most O(len(path) x len(pattern)). Patterns are capped at :data:`MAX_GLOB_CHARS`
characters, and ``{a,b}`` choices at :data:`MAX_CHOICES` alternatives per component, both
refused before anything is compiled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from invokit._wildcard import DIRS, SEGMENT, Item, chain
from invokit.builtin.filesystem._paths import split_relative
from invokit.exceptions import RetryWithFeedback

__all__ = ["MAX_CHOICES", "MAX_GLOB_CHARS", "Glob", "compile_component", "compile_glob"]

MAX_GLOB_CHARS = 1024
"""Longest glob pattern accepted."""
MAX_CHOICES = 256
"""Most alternatives the ``{a,b}`` choices of one component may expand to."""

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
        RetryWithFeedback: the pattern is empty, too long, or has too many choices.
    """
    _check_size(pattern)
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
            items.append(_component(part, "/" if index < last else ""))
    depth = None if "**" in parts[literal:] else len(parts) - literal
    return Glob(
        pattern=pattern,
        regex=re.compile(_tail(items) if items[-1] == ".+" else chain(items), re.DOTALL),
        start=base + parts[:literal],
        max_depth=depth,
    )


def compile_component(part: str) -> re.Pattern[str]:
    """Compile the glob of one path component (a file name: ``*.py``, ``{a,b}.txt``)."""
    _check_size(part)
    return re.compile(_component(part, ""), re.DOTALL)


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


def _component(part: str, end: str) -> str:
    """One component: its choices, each a chain ending with ``end``, in one atomic group (any
    choice that matches consumes the same whole segment)."""
    choices = _expand(part)
    if len(choices) == 1 and not end:
        return chain(choices[0]) + "(?![^/])"
    body = "|".join(chain(choice) + (end or "(?![^/])") for choice in choices)
    return f"(?>{body})"


def _expand(part: str) -> list[list[Item]]:
    """The brace-free alternatives of a component, each as pieces and stars."""
    alternatives: list[list[Item]] = [[]]
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        options: list[list[Item]]
        if char == "*":
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
                options = [alt for choice in part[index:end].split(",") for alt in _expand(choice)]
                index = end + 1
        else:
            options = [[re.escape(char)]]
        if len(alternatives) * len(options) > MAX_CHOICES:
            raise RetryWithFeedback(
                f"The {{...}} choices in {part!r} expand to more than {MAX_CHOICES} "
                "alternatives; use fewer choices or several calls.",
                data={"max_choices": MAX_CHOICES},
            )
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
