"""Counting a JSON text's values before parsing it, at C speed, to refuse one too wide.

Parsing holds the interpreter lock (a worker thread would not help) and costs about 10 ns a
byte: a 16 MiB text of ``0,0,0,...`` (8 million values) took 150 ms to parse before the walk
after it counted the values and refused them. The values are array items and object members
at every level; in valid JSON a container of ``n`` values holds ``n - 1`` commas of its own, so
there is at least one value per comma outside strings, and at least one per two strings (a
member's key and its value), that is per four quotes that are not escaped. When either is over
the bound, the text is refused unparsed.

Only :class:`bytes` methods run over the text (``count``, ``replace``, ``split``): a text
with no more commas than the bound costs one ``count``; one with no quotes, two. Escapes are
taken out of the whole text first (``replace`` is linear); the split then goes a chunk at a
time, over at most four quotes a value allowed, and stops once the bound is passed.
"""

from __future__ import annotations

from itertools import repeat

__all__ = ["too_many_values"]

_CHUNK = 1 << 20
"""Bytes split at a time when counting the commas outside strings."""


def too_many_values(data: bytes, max_items: int) -> bool:
    """Whether ``data``, if it is valid JSON, surely holds more than ``max_items`` values.

    ``False`` says nothing: the parse and the walk after it still count. Malformed text may be
    called too wide here instead of getting its parse error: either way it is refused.
    """
    if data.count(b",") <= max_items:
        return False  # nor can the commas outside strings be more
    if b'"' not in data:
        return True  # every comma is outside a string
    plain = _without_escapes(data)
    if plain.count(b'"') > 4 * max_items:
        return True
    return _commas_outside_strings(plain, max_items) > max_items


def _without_escapes(data: bytes) -> bytes:
    r"""``data`` without its backslash escapes' pairs, so that every quote left opens or closes
    a string. Pairs are matched left to right, as JSON reads them: ``\\"`` is an escaped
    backslash and then a closing quote, ``\\\"`` an escaped backslash and an escaped quote."""
    if b"\\" not in data:
        return data
    return data.replace(b"\\\\", b"").replace(b'\\"', b"")


def _commas_outside_strings(plain: bytes, enough: int) -> int:
    """The commas of escape-free ``plain`` outside strings (in the pieces between quotes at
    even positions, whether a string is open carried from one chunk to the next), or a number
    over ``enough`` as soon as one is reached."""
    count = 0
    inside = False
    for start in range(0, len(plain), _CHUNK):
        pieces = plain[start : start + _CHUNK].split(b'"')
        count += sum(map(bytes.count, pieces[inside::2], repeat(b",")))
        if count > enough:
            break
        inside ^= len(pieces) % 2 == 0  # an odd number of quotes in the chunk
    return count
