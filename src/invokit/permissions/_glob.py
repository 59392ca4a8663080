"""Glob patterns compiled to regular expressions, once, when a policy is built.

Two flavours share one syntax (``*``, ``?``, ``**`` and ``\\`` to escape):

* *path* globs: ``*`` and ``?`` stay inside one path segment, ``**`` crosses segments,
  ``**/`` may match no directory at all and a trailing ``/**`` (or ``/``) also matches the
  directory itself;
* *text* globs (names, hosts, URLs, argument values, argv words): ``*`` matches any run of
  characters, ``/`` included, and ``**/`` may match nothing, so ``**/.env`` matches ``.env``.
"""

from __future__ import annotations

import re

_WILD = frozenset("*?")


def _tokens(pattern: str) -> list[tuple[str, bool]]:
    """Split ``pattern`` into characters, each flagged as escaped (literal) or not."""
    out: list[tuple[str, bool]] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise ValueError("a pattern cannot end with a lone backslash")
            out.append((escaped, True))
        else:
            out.append((char, False))
    return out


def _is(tokens: list[tuple[str, bool]], index: int, char: str) -> bool:
    return 0 <= index < len(tokens) and tokens[index] == (char, False)


def has_wildcard(pattern: str) -> bool:
    """Whether ``pattern`` has an unescaped ``*`` or ``?``."""
    return any(char in _WILD and not escaped for char, escaped in _tokens(pattern))


def escape(text: str) -> str:
    """Quote ``text`` so that it matches only itself as a glob."""
    return re.sub(r"([*?\\])", r"\\\1", text)


def text_glob(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """Compile a text glob: ``*`` is any run of characters (``/`` too)."""
    tokens = _tokens(pattern)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        char, escaped = tokens[i]
        if not escaped and char == "*":
            double = _is(tokens, i + 1, "*")
            if double and _is(tokens, i + 2, "/") and (i == 0 or _is(tokens, i - 1, "/")):
                out.append("(?:.*/)?")
                i += 3
                continue
            out.append(".*")
            i += 2 if double else 1
            continue
        out.append("." if not escaped and char == "?" else re.escape(char))
        i += 1
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile("".join(out), flags)


def path_glob(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``*`` stays inside a segment, ``**`` crosses segments."""
    tokens = _tokens(pattern)
    suffix = ""
    if tokens and tokens[-1] == ("/", False) and len(tokens) > 1:
        tokens = tokens[:-1]
        suffix = "(?:/.*)?"
    elif len(tokens) > 3 and tokens[-3:] == [("/", False), ("*", False), ("*", False)]:
        tokens = tokens[:-3]
        suffix = "(?:/.*)?"
    out: list[str] = []
    i = 0
    while i < len(tokens):
        char, escaped = tokens[i]
        if not escaped and char == "*":
            double = _is(tokens, i + 1, "*")
            at_start = i == 0 or _is(tokens, i - 1, "/")
            if double and at_start and _is(tokens, i + 2, "/"):
                out.append("(?:[^/]+/)*")
                i += 3
                continue
            if double and at_start and i + 2 == len(tokens):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
            i += 2 if double else 1
            continue
        out.append("[^/]" if not escaped and char == "?" else re.escape(char))
        i += 1
    return re.compile("".join(out) + suffix, re.DOTALL)
