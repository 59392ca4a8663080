"""Counting a JSON text's values before parsing it, at C speed, to refuse one too wide.

Parsing holds the interpreter lock (a worker thread would not help) and costs about 10 ns a
byte: a 16 MiB text of ``0,0,0,...`` (8 million values) took 150 ms to parse before the walk
after it counted the values and refused them. The values are array items and object members
at every level; in valid JSON a container of ``n`` values holds ``n - 1`` commas of its own, so
there is at least one value per comma outside strings, and at least one per two strings (a
member's key and its value), that is per four quotes that are not escaped. When either is over
the bound, the text is refused unparsed.

Everything runs in C, at a cost per byte whatever the text holds (a few ms per MiB): the
commas are counted (``bytes.count``), and only when there are more than the bound, the text is
reduced, a MiB at a time, to its structure (``bytes.translate``, with ``codecs.escape_decode``
to take out the escapes, pairing backslashes as JSON does): the quotes that open or close
strings and the commas between them, split on the quotes. The count stops once over the bound.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from itertools import repeat

__all__ = ["too_many_values"]

_CHUNK = 1 << 20
"""Bytes looked at a time: the work stays in the processor's cache and the memory bounded."""
_QUOTE, _COMMA = b"n", b"t"
# Each byte becomes one whose escape Python's escape decoding knows, whatever is before it: a
# quote n, a comma t, a backslash itself, anything else a. Decoding then turns each JSON escape
# (a backslash and the byte after it) into one control character, and leaves the n and t that
# are not escaped: the quotes that open or close strings, and the commas.
_ESCAPABLE = bytes(
    {ord(","): ord(_COMMA), ord('"'): ord(_QUOTE), ord("\\"): ord("\\")}.get(byte, ord("a"))
    for byte in range(256)
)
_NOT_STRUCTURE = bytes(range(256)).translate(None, _QUOTE + _COMMA)
_BACK = bytes.maketrans(_QUOTE + _COMMA, b'",')


def too_many_values(data: bytes, max_items: int) -> bool:
    """Whether ``data``, if it is valid JSON, surely holds more than ``max_items`` values.

    ``False`` says nothing: the parse and the walk after it still count. Malformed text may be
    called too wide here instead of getting its parse error: either way it is refused.
    """
    if data.count(b",") <= max_items:
        return False  # nor can the commas outside strings be more
    if b'"' not in data:
        return True  # every comma is outside a string
    quotes = commas = 0
    inside = False  # whether a string is open where the chunk starts
    for chunk in _chunks(data):
        structure = _structure(chunk)
        if structure is None:
            return False  # malformed: the parser says where
        quotes += structure.count(b'"')
        if quotes > 4 * max_items + 2:  # a string at the top is no value
            return True
        pieces = structure.split(b'"')
        commas += sum(map(bytes.count, pieces[inside::2], repeat(b",")))
        if commas > max_items:
            return True
        inside ^= len(pieces) % 2 == 0  # an odd number of quotes in the chunk
    return False


def _chunks(data: bytes) -> Iterator[bytes]:
    """``data`` in pieces of about :data:`_CHUNK` bytes, none ending between a backslash and
    the byte it escapes."""
    start = 0
    while start < len(data):
        end = start + _CHUNK
        chunk = data[start:end]
        if chunk.endswith(b"\\") and (len(chunk) - len(chunk.rstrip(b"\\"))) % 2:
            end += 1
            chunk = data[start:end]
        yield chunk
        start = end


def _structure(chunk: bytes) -> bytes | None:
    """``chunk`` with every quote opening or closing a string, and its commas where they
    were; ``None`` for a text ending in a lone backslash."""
    if b"\\" not in chunk:
        return chunk
    try:
        unescaped, _ = codecs.escape_decode(chunk.translate(_ESCAPABLE))
    except ValueError:
        return None
    return bytes(unescaped).translate(_BACK, _NOT_STRUCTURE)
