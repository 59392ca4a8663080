"""Text that is safe to show a person: no terminal escapes, no control characters.

A tool name, an argument or a policy reason may come from a model or a remote server. Shown in an
approval prompt, an ANSI escape could repaint the terminal (hide the real command, fake a
"approved" line) and a bare carriage return could overwrite what the person reads. Everything
that reaches a prompt goes through :func:`printable` first.
"""

from __future__ import annotations

import json
import re
from typing import Any

# CSI (ESC [ … final), OSC (ESC ] … BEL or ST), other two-byte ESC sequences, and the 8-bit C1
# forms of CSI and OSC. Matched before control characters are removed, so no parameter bytes of a
# sequence survive as stray text.
_ANSI = re.compile(
    r"""
    (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]          # CSI
    | (?:\x1b\]|\x9d).*?(?:\x07|\x1b\\|\x9c)  # OSC, ended by BEL or ST
    | \x1b[P^_X].*?(?:\x1b\\|\x9c)           # DCS, PM, APC, SOS strings
    | \x1b[@-Z\\-_]                          # other Fe escapes
    """,
    re.VERBOSE | re.DOTALL,
)
# C0 controls except tab and newline, DEL, and C1 controls; also the bidirectional overrides that
# can make text read in another order than it runs (the "Trojan Source" trick).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without ANSI escape sequences and control characters.

    Args:
        text: anything that may be shown to a person.
        keep_newlines: keep ``\\n`` and ``\\t``; when false they become spaces (one-line fields).
    """
    cleaned = _CONTROL.sub("", _ANSI.sub("", text))
    if not keep_newlines:
        cleaned = cleaned.replace("\n", " ").replace("\t", " ")
    return cleaned


def printable_json(value: Any, *, limit: int = 4000) -> str:
    """``value`` as indented JSON for a person, escapes removed, cut at ``limit`` characters.

    JSON escaping already turns control characters inside strings into ``\\u001b`` text; the
    pass through :func:`printable` is for anything that is not a JSON string (keys included).
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    text = printable(text)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"
    return text
