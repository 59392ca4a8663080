"""Glob patterns compiled to regular expressions, once, when a policy is built.

Two flavours share one syntax (``*``, ``?``, ``**`` and ``\\`` to escape):

* *path* globs: ``*`` and ``?`` stay inside one path segment, ``**`` crosses segments,
  ``**/`` may match no directory at all and a trailing ``/**`` (or ``/``) also matches the
  directory itself;
* *text* globs (names, hosts, URLs, argument values, argv words): ``*`` matches any run of
  characters, ``/`` included, and ``**/`` may match nothing, so ``**/.env`` matches ``.env``.

The expressions are built by :mod:`invokit._wildcard` so that matching costs at most
O(len(text) x len(pattern)) whatever the text (a model's path or argv word): no star is ever
retried once the next piece of the pattern has been placed. Patterns longer than
:data:`MAX_PATTERN_CHARS` are refused when the policy is built.
"""

from __future__ import annotations

import re

from invokit._wildcard import ANY, DIRS, OPT_DIRS, SEGMENT, Item, Star, chain

__all__ = ["MAX_PATTERN_CHARS", "escape", "has_wildcard", "path_glob", "text_glob"]

MAX_PATTERN_CHARS = 4096
"""Longest glob a policy may hold."""

_WILD = frozenset("*?")
_TEXT_MERGE: dict[frozenset[str], Star] = {frozenset({"any", "opt_dirs"}): ANY}
Token = tuple[str, bool]


def _tokens(pattern: str) -> list[Token]:
    """Split ``pattern`` into characters, each flagged as escaped (literal) or not."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"a glob pattern may have at most {MAX_PATTERN_CHARS} characters, not {len(pattern)}"
        )
    out: list[Token] = []
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


def _is(tokens: list[Token], index: int, char: str) -> bool:
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
    items: list[Item] = []
    i = 0
    while i < len(tokens):
        char, escaped = tokens[i]
        if not escaped and char == "*":
            double = _is(tokens, i + 1, "*")
            if double and _is(tokens, i + 2, "/") and (i == 0 or _is(tokens, i - 1, "/")):
                items.append(OPT_DIRS)
                i += 3
                continue
            items.append(ANY)
            i += 2 if double else 1
            continue
        items.append("." if not escaped and char == "?" else re.escape(char))
        i += 1
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(chain(items, merge=_TEXT_MERGE), flags)


def path_glob(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``*`` stays inside a segment, ``**`` crosses segments."""
    tokens = [("/", False) if token == ("/", True) else token for token in _tokens(pattern)]
    suffix = ""
    if tokens and tokens[-1] == ("/", False) and len(tokens) > 1:
        tokens = tokens[:-1]
        suffix = "(?:/.*)?"
    elif len(tokens) > 3 and tokens[-3:] == [("/", False), ("*", False), ("*", False)]:
        tokens = tokens[:-3]
        suffix = "(?:/.*)?"
    segments: list[list[Token]] = [[]]
    for token in tokens:
        if token == ("/", False):
            segments.append([])
        else:
            segments[-1].append(token)
    items: list[Item] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        whole_double = segment == [("*", False), ("*", False)]
        if whole_double and index < last:
            items.append(DIRS)  # ``**/``: any number of whole segments, none too
        elif whole_double:
            items.append(".*")  # a final ``**`` matches anything, separators included
        elif index < last:
            items.append(f"(?>{_segment(segment)}/)")
        else:
            items.append(_segment(segment))
    return re.compile(chain(items) + suffix, re.DOTALL)


def _segment(tokens: list[Token]) -> str:
    """One path segment's expression: ``*`` (and ``**`` inside a name) never crosses a ``/``."""
    items: list[Item] = []
    for char, escaped in tokens:
        if not escaped and char == "*":
            items.append(SEGMENT)
        elif not escaped and char == "?":
            items.append("[^/]")
        else:
            items.append(re.escape(char))
    return chain(items)
