"""The one renderer for text a person reads: every hidden character shown as a visible escape.

A tool name, an argument, a reason, a server's description or a library's log message may come
from a model, a client or a remote server. On a terminal an escape sequence could repaint the
screen (clear the approval panel, draw a fake one), a newline could print a real-looking
``approved`` line, and a bidirectional override could make text read in another order than it
runs. Everything invokit shows a person passes through :func:`printable`, which keeps such text
readable and inert: ``\\x1b[2J``, ``\\n``, ``\\u202e`` appear as those characters, never act.
"""

from __future__ import annotations

import unicodedata

__all__ = ["printable"]

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories never shown raw: controls, format characters (bidi overrides, zero-width
joiners), surrogates, private use, unassigned, and the line and paragraph separators."""

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, format, private-use, unassigned or separator character
    shown as an escape (``\\x1b``, ``\\n``, ``\\u202e``): the result is one line, and no
    character of it acts on a terminal.

    Args:
        text: anything that may be shown to a person.
        keep_newlines: keep ``\\n`` and ``\\t`` raw, for a view that lays out lines itself (a
            result's text, a file being reviewed); every line is still inert.
    """
    if text.isprintable():  # the usual case, checked in C
        return text
    out: list[str] = []
    for char in text:
        if keep_newlines and char in "\n\t":
            out.append(char)
        elif char in _NAMED or unicodedata.category(char) in _HIDDEN:
            out.append(_escape(char))
        else:
            out.append(char)  # a no-break or other space: printable, though not isprintable()
    return "".join(out)
