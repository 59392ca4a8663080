"""Any Python text in a PostgreSQL ``text`` column, which cannot hold NUL (or a lone
surrogate, which UTF-8 cannot encode): such text, and text that starts with the marker, is
kept as the marker and its JSON form; every other text as itself. One-to-one, so texts are
compared in SQL as they are kept; a call id, tool or session a model or client chose cannot
make a write fail (and take other records with it) or match another one."""

from __future__ import annotations

import json
from typing import overload

MARK = "\uffff"
"""Starts a kept text that is the JSON form of the real one (a noncharacter: no real text
starts with it, and one that does is kept in JSON form too)."""


@overload
def stored(value: str) -> str: ...
@overload
def stored(value: str | None) -> str | None: ...
def stored(value: str | None) -> str | None:
    """``value`` as its column keeps it."""
    if value is None:
        return value
    if type(value) is not str:
        if not isinstance(value, str):
            return value
        value = str.__str__(value)  # a str subclass (a str enum member) is the text it holds
    if "\x00" in value or value.startswith(MARK) or not _encodable(value):
        return MARK + json.dumps(value)
    return value


@overload
def loaded(value: str) -> str: ...
@overload
def loaded(value: str | None) -> str | None: ...
def loaded(value: str | None) -> str | None:
    """The text a column keeps as ``value`` (what :func:`stored` made of it)."""
    if value is None or not value.startswith(MARK):
        return value
    text: str = json.loads(value[len(MARK) :])
    return text


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
