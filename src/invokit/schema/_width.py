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
reduced to its structure (``bytes.translate``, with ``codecs.escape_decode`` to take out the
escapes, pairing backslashes as JSON does): the quotes that open or close strings and the
commas between them, split a chunk at a time.
"""

from __future__ import annotations

import codecs
from itertools import repeat

__all__ = ["too_many_values"]

_CHUNK = 1 << 20
"""Bytes split at a time when counting the commas outside strings."""
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


def too_many_values(data: bytes, max_items: int) -> bool:
    """Whether ``data``, if it is valid JSON, surely holds more than ``max_items`` values.

    ``False`` says nothing: the parse and the walk after it still count. Malformed text may be
    called too wide here instead of getting its parse error: either way it is refused.
    """
    if data.count(b",") <= max_items:
        return False  # nor can the commas outside strings be more
    if b'"' not in data:
        return True  # every comma is outside a string
    marked = _unescaped(data)
    if marked is None:
        return False  # malformed: the parser says where
    text, quote, comma = marked
    if text.count(quote) > 4 * max_items + 2:  # a string at the top is no value
        return True
    return _commas_outside_strings(text, quote, comma, max_items) > max_items


def _unescaped(data: bytes) -> tuple[bytes, bytes, bytes] | None:
    """A text whose quotes (the byte returned second) all open or close strings, with the
    commas of ``data`` (the byte returned third) in the same places between them; ``None`` for
    a text ending in a lone backslash."""
    if b"\\" not in data:
        return data, b'"', b","
    try:
        unescaped, _ = codecs.escape_decode(data.translate(_ESCAPABLE))
    except ValueError:
        return None
    return bytes(unescaped).translate(None, _NOT_STRUCTURE), _QUOTE, _COMMA


def _commas_outside_strings(text: bytes, quote: bytes, comma: bytes, enough: int) -> int:
    """The commas outside strings (in the pieces between quotes at even positions, whether a
    string is open carried from one chunk to the next), or a number over ``enough`` as soon as
    one is reached."""
    count = 0
    inside = False
    for start in range(0, len(text), _CHUNK):
        pieces = text[start : start + _CHUNK].split(quote)
        count += sum(map(bytes.count, pieces[inside::2], repeat(comma)))
        if count > enough:
            break
        inside ^= len(pieces) % 2 == 0  # an odd number of quotes in the chunk
    return count
