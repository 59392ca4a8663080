"""Glob patterns (``*``, ``?``, ``[...]``, ``{a,b}``, ``**``) matched against root-relative paths.

Patterns are translated to regular expressions and matched against paths the safe walker
produces; they are never handed to the operating system, so a pattern cannot reach anything the
walker does not. ``*`` matches dot files too, and never crosses a ``/``; ``**`` as a whole
component matches any number of directories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from invokit.builtin.filesystem._paths import split_relative
from invokit.exceptions import RetryWithFeedback

__all__ = ["Glob", "compile_glob"]

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
        RetryWithFeedback: the pattern is empty.
    """
    parts = split_relative(pattern)
    if not parts:
        raise RetryWithFeedback(f"Glob pattern {pattern!r} matches nothing; try '**/*'")
    literal = 0
    while literal < len(parts) - 1 and not _MAGIC.intersection(parts[literal]):
        literal += 1
    pieces: list[str] = [re.escape(name) + "/" for name in base]
    last = len(parts) - 1
    for index, part in enumerate(parts):
        if part == "**":
            pieces.append(".+" if index == last else "(?:[^/]+/)*")
        else:
            pieces.append(translate_component(part) + ("" if index == last else "/"))
    depth = None if "**" in parts[literal:] else len(parts) - literal
    return Glob(
        pattern=pattern,
        regex=re.compile("".join(pieces), re.DOTALL),
        start=base + parts[:literal],
        max_depth=depth,
    )


def translate_component(part: str) -> str:
    """The regular expression for one path component's glob."""
    out: list[str] = []
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            if not out or out[-1] != "[^/]*":
                out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and index < len(part):
            out.append(re.escape(part[index]))
            index += 1
        elif char == "[":
            end = _class_end(part, index)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(_char_class(part[index:end]))
                index = end + 1
        elif char == "{":
            end = part.find("}", index)
            if end < 0:
                out.append(re.escape(char))
            else:
                choices = part[index:end].split(",")
                out.append("(?:" + "|".join(translate_component(c) for c in choices) + ")")
                index = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


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
    return f"[^/{members}]" if negate else f"[{members}]"
